/**
 * The stacks the k8s suite deploys and what synth renders for them: every
 * committed Pulumi.<stack>.yaml at the top level plus the test stacks under
 * test/, each rendered with `synth` into its own folder. Nothing here knows
 * which objects the program renders: tests read the manifests and plan.json.
 */
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { parseAllDocuments, parse as parseYaml } from "yaml";

export const ROOT = path.resolve(__dirname, "../..");

export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; [k: string]: unknown };
  spec?: Record<string, unknown>;
  [k: string]: unknown;
}

export interface StackRef {
  name: string;
  /** Folder holding Pulumi.<name>.yaml (synth runs there). */
  dir: string;
}

export interface WorkloadNumbers {
  replicas: number;
  tensorParallel: number;
  podsPerNode: number;
  gpuNodes: number;
  cpuRequestMillis: number;
  memoryRequestBytes: number;
}

export interface RenderedStack extends StackRef {
  out: string;
  manifestFiles: string[];
  objects: K8sObject[];
  servingInstanceType: string;
  kubernetes: WorkloadNumbers;
  region: string;
  availabilityZones: number;
}

/** Top-level stacks plus test/**\/Pulumi.<stack>.yaml (not node_modules, not out/). */
export function discoverStacks(): StackRef[] {
  const found: StackRef[] = [];
  const visit = (dir: string, depth: number) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, e.name);
      if (e.isDirectory() && depth < 3 && !["node_modules", "out", ".git"].includes(e.name)) visit(full, depth + 1);
      const m = /^Pulumi\.([A-Za-z0-9_.-]+)\.yaml$/.exec(e.name);
      if (e.isFile() && m?.[1]) found.push({ name: m[1], dir });
    }
  };
  for (const e of fs.readdirSync(ROOT)) {
    const m = /^Pulumi\.([A-Za-z0-9_.-]+)\.yaml$/.exec(e);
    if (m?.[1]) found.push({ name: m[1], dir: ROOT });
  }
  visit(path.join(ROOT, "test"), 0);
  const only = process.env.K8S_STACKS?.split(",").filter(Boolean);
  return found.filter((s) => !only || only.includes(s.name)).sort((a, b) => a.name.localeCompare(b.name));
}

export function renderStack(ref: StackRef, workDir: string): RenderedStack {
  const out = path.join(workDir, `synth-${ref.name}`);
  fs.rmSync(out, { recursive: true, force: true });
  execFileSync(
    process.execPath,
    [
      path.join(ROOT, "node_modules/tsx/dist/cli.mjs"),
      path.join(ROOT, "scripts/synth.ts"),
      "--stack",
      ref.name,
      "--out",
      out,
    ],
    { cwd: ref.dir, stdio: ["ignore", "ignore", "inherit"] },
  );
  const k8sDir = path.join(out, "k8s");
  const manifestFiles = listYaml(k8sDir);
  if (manifestFiles.length === 0) throw new Error(`synth rendered no manifests under ${k8sDir}`);
  const objects = manifestFiles.flatMap(loadObjects);
  const plan = JSON.parse(fs.readFileSync(path.join(out, "plan.json"), "utf8")) as {
    serving: { instanceType: string };
    kubernetes: WorkloadNumbers;
  };
  const stackFile = parseYaml(fs.readFileSync(path.join(ref.dir, `Pulumi.${ref.name}.yaml`), "utf8")) as {
    config?: Record<string, unknown>;
  };
  const cfg = stackFile.config ?? {};
  const network = (cfg["triton-ft:network"] ?? {}) as { availabilityZones?: number };
  return {
    ...ref,
    out,
    manifestFiles,
    objects,
    servingInstanceType: plan.serving.instanceType,
    kubernetes: plan.kubernetes,
    region: typeof cfg["aws:region"] === "string" ? (cfg["aws:region"] as string) : "us-east-1",
    availabilityZones: network.availabilityZones ?? 2,
  };
}

/** Every *.yaml/*.yml under dir, depth-first, sorted (synth numbers the files in apply order). */
export function listYaml(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  const out: string[] = [];
  for (const e of fs.readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...listYaml(full));
    else if (/\.ya?ml$/.test(e.name)) out.push(full);
  }
  return out;
}

export function loadObjects(file: string): K8sObject[] {
  return parseAllDocuments(fs.readFileSync(file, "utf8"))
    .map((d) => d.toJS() as K8sObject | null)
    .filter((o): o is K8sObject => o !== null && typeof o === "object" && typeof o.kind === "string");
}

/** The pod template of a workload object, if it has one. */
export function podTemplate(
  o: K8sObject,
): { metadata?: { labels?: Record<string, string> }; spec: PodSpec } | undefined {
  const spec = o.spec as { template?: { metadata?: { labels?: Record<string, string> }; spec?: PodSpec } } | undefined;
  if (["Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job"].includes(o.kind) && spec?.template?.spec) {
    return spec.template as { metadata?: { labels?: Record<string, string> }; spec: PodSpec };
  }
  return undefined;
}

export interface PodSpec {
  tolerations?: unknown[];
  containers: Array<{
    name: string;
    image: string;
    resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  }>;
  [k: string]: unknown;
}

export const GPU_RESOURCE = "nvidia.com/gpu";

/** GPUs a pod template asks for (limits count for extended resources). */
export function gpusOf(spec: PodSpec): number {
  return spec.containers.reduce((n, c) => {
    const v = c.resources?.limits?.[GPU_RESOURCE] ?? c.resources?.requests?.[GPU_RESOURCE];
    return n + (v === undefined ? 0 : Number(v));
  }, 0);
}
