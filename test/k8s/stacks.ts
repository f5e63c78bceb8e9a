/**
 * The stacks the k8s suite deploys and what synth renders for them: every
 * committed Pulumi.<stack>.yaml at the top level plus the test stacks under
 * test/, each rendered with `synth` into its own folder. Nothing here knows
 * which objects the program renders: tests read the manifests and plan.json.
 * A stack of several models has its shared manifests under k8s/ and each
 * model's under models/<id>/k8s/ (plan.json `models`); a one-model stack is
 * one model whose manifests are all of k8s/. A live canary (plan.json
 * `canaries`) is served like a model of its own, from models/<id>-canary/k8s/.
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

/** One served model of a rendered stack: its plan numbers and the objects of its own folder. */
export interface RenderedModel {
  id: string;
  /** The stack serves several models: this one's GPU nodes carry its model label. */
  several: boolean;
  servingInstanceType: string;
  kubernetes: WorkloadNumbers;
  /** plan.json serving.maxBatchSize: one Triton pod runs one batch of this size at a time. */
  maxBatchSize: number;
  /** plan.json autoscaling (autoscaled models only): the most Triton pods it can have. */
  autoscaling?: { minReplicas: number; maxReplicas: number };
  /** Its own objects: its Triton workload (several models), or every object of a one-model stack. */
  objects: K8sObject[];
  /** A live canary (plan.json `canaries`, issue 36): the id of the model it is a second build of. */
  canaryOf?: string;
}

export interface RenderedStack extends StackRef {
  out: string;
  /** The folders to apply, in order: k8s/ (the namespace is there), then each model's. */
  manifestDirs: string[];
  manifestFiles: string[];
  objects: K8sObject[];
  /** Every served Triton workload, in the stack's order (one for a one-model stack), then each live canary. */
  models: RenderedModel[];
  region: string;
  availabilityZones: number;
}

/** plan.json: one model's plan at the top, or several under `models`. */
interface ModelPlanJson {
  model: { name: string };
  serving: { instanceType: string; maxBatchSize: number };
  kubernetes: WorkloadNumbers;
  autoscaling?: { minReplicas: number; maxReplicas: number };
}
type PlanJson =
  ModelPlanJson | { models: Record<string, ModelPlanJson>; canaries?: Record<string, ModelPlanJson & { of: string }> };

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

/** How many models the stack file serves (`triton-ft:models` entries, else one), known before synth runs. */
export function modelCount(ref: StackRef): number {
  const doc = parseYaml(fs.readFileSync(path.join(ref.dir, `Pulumi.${ref.name}.yaml`), "utf8")) as {
    config?: Record<string, unknown>;
  };
  const models = doc.config?.["triton-ft:models"];
  return models && typeof models === "object" ? Object.keys(models).length : 1;
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
  const plan = JSON.parse(fs.readFileSync(path.join(out, "plan.json"), "utf8")) as PlanJson;
  // A live canary is a Triton workload of its own, in its own folder, after the models (synth writes it so).
  const canaries = "models" in plan ? Object.entries(plan.canaries ?? {}) : [];
  const entries: Array<readonly [string, ModelPlanJson & { of?: string }]> =
    "models" in plan ? [...Object.entries(plan.models), ...canaries] : [[plan.model.name, plan] as const];
  const several = "models" in plan;
  const modelDirs = several ? entries.map(([id]) => path.join(out, "models", id, "k8s")) : [];
  const manifestDirs = [k8sDir, ...modelDirs];
  const manifestFiles = manifestDirs.flatMap(listYaml);
  if (listYaml(k8sDir).length === 0) throw new Error(`synth rendered no manifests under ${k8sDir}`);
  // Loaded once: a model's objects are the very objects of `objects` (tests record replicas on them).
  const perDir = manifestDirs.map((d) => listYaml(d).flatMap(loadObjects));
  const objects = perDir.flat();
  const models = entries.map(([id, p], n): RenderedModel => {
    const own = several ? (perDir[n + 1] ?? []) : objects;
    if (own.length === 0) throw new Error(`synth rendered no manifests for model ${id}`);
    return {
      id,
      several,
      servingInstanceType: p.serving.instanceType,
      kubernetes: p.kubernetes,
      maxBatchSize: p.serving.maxBatchSize,
      ...(p.autoscaling ? { autoscaling: p.autoscaling } : {}),
      objects: own,
      ...(p.of !== undefined ? { canaryOf: p.of } : {}),
    };
  });
  const stackFile = parseYaml(fs.readFileSync(path.join(ref.dir, `Pulumi.${ref.name}.yaml`), "utf8")) as {
    config?: Record<string, unknown>;
  };
  const cfg = stackFile.config ?? {};
  const network = (cfg["triton-ft:network"] ?? {}) as { availabilityZones?: number };
  return {
    ...ref,
    out,
    manifestDirs,
    manifestFiles,
    objects,
    models,
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
