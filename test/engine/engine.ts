/**
 * The real Pulumi engine for the engine suite: the CLI and the Kubernetes
 * provider that test/engine/build-engine.sh compiled (ENGINE_BIN_DIR), driven
 * through the Automation API with inline programs, a file:// backend and the
 * passphrase secrets provider in a temporary directory, and no plugin ever
 * downloaded. Plus the two stand-ins the loopback cluster needs: the cloud's
 * load balancer controller (it writes a LoadBalancer Service's address) and a
 * watch of a Deployment's availability during an update.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import {
  LocalWorkspace,
  PulumiCommand,
  type ConfigMap,
  type EngineEvent,
  type OpType,
  type PulumiFn,
  type Stack,
} from "@pulumi/pulumi/automation";
import type { Kube } from "../k8s/kube";
import { PROJECT, type RawConfig } from "./stacks";

export const PASSPHRASE = "engine-suite-passphrase";

/** What `--policy-pack` names: policy/ as an executable analyzer (no Node.js language host here). */
export const POLICY_PACK = path.join(__dirname, "bin", "policy-pack");

export interface Engine {
  binDir: string;
  /** Work, state and PULUMI_HOME live here; removed by the suite. */
  dir: string;
  stateDir: string;
  command: PulumiCommand;
  env: Record<string, string>;
}

/** What a suite adds to the engine's environment: plugin folders first on PATH, and variables the plugins read. */
export interface EngineExtras {
  path?: string[];
  env?: Record<string, string>;
}

export async function startEngine(dir: string, extras: EngineExtras = {}): Promise<Engine> {
  const binDir = process.env.ENGINE_BIN_DIR;
  if (!binDir) throw new Error("ENGINE_BIN_DIR is not set: run the suite with bash test/engine/run.sh");
  const stateDir = path.join(dir, "state");
  const home = path.join(dir, "pulumi-home");
  fs.mkdirSync(stateDir, { recursive: true });
  fs.mkdirSync(home, { recursive: true });
  // PulumiCommand.get finds <root>/bin/pulumi and checks its version is one the SDK supports.
  const command = await PulumiCommand.get({ root: path.dirname(binDir) });
  const env: Record<string, string> = {
    PULUMI_HOME: home,
    PULUMI_BACKEND_URL: `file://${stateDir}`,
    PULUMI_CONFIG_PASSPHRASE: PASSPHRASE,
    // Nothing is downloaded: the Kubernetes provider comes from PATH (the built binaries).
    PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION: "true",
    PULUMI_SKIP_UPDATE_CHECK: "true",
    PULUMI_SKIP_CONFIRMATIONS: "true",
    PULUMI_DIY_BACKEND_NO_LEGACY_WARNING: "true",
    PATH: [...(extras.path ?? []), binDir, path.dirname(process.execPath), process.env.PATH ?? ""].join(":"),
    ...extras.env,
  };
  return { binDir, dir, stateDir, command, env };
}

/** A stack of the project running `program` inline in this process. */
export async function engineStack(engine: Engine, stackName: string, program: PulumiFn): Promise<Stack> {
  const workDir = path.join(engine.dir, "work");
  fs.mkdirSync(workDir, { recursive: true });
  return LocalWorkspace.createOrSelectStack(
    { stackName, projectName: PROJECT, program },
    {
      workDir,
      pulumiCommand: engine.command,
      envVars: engine.env,
      secretsProvider: "passphrase",
      projectSettings: { name: PROJECT, runtime: "nodejs", backend: { url: `file://${engine.stateDir}` } },
    },
  );
}

/** Sets the stack's config to exactly `raw` under `triton-ft:` (objects as JSON), the secrets and `plain`, removing any other key. */
export async function setStackConfig(
  stack: Stack,
  raw: RawConfig,
  secrets: Record<string, string> = {},
  /** Other namespaces' keys, fully qualified (`aws:region`). */
  plain: Record<string, string> = {},
): Promise<void> {
  const want: ConfigMap = {};
  for (const [k, v] of Object.entries(plain)) want[k] = { value: v };
  for (const [k, v] of Object.entries(raw)) want[`${PROJECT}:${k}`] = { value: JSON.stringify(v) };
  for (const [k, v] of Object.entries(secrets)) want[`${PROJECT}:${k}`] = { value: v, secret: true };
  const have = await stack.getAllConfig();
  const stale = Object.keys(have).filter((k) => !(k in want));
  if (stale.length > 0) await stack.removeAllConfig(stale);
  await stack.setAllConfig(want);
}

export interface StepRecord {
  op: OpType;
  urn: string;
  type: string;
  /** `<type>::<name>`. */
  name: string;
  diffs: string[];
}

/**
 * The steps of an operation, from the engine's own events (resourcePreEvent), one per resource:
 * the root stack's step is announced twice in a preview (its diagnostics re-announce it), the
 * later event wins.
 */
export function stepRecorder(): { steps: StepRecord[]; onEvent: (e: EngineEvent) => void } {
  const steps: StepRecord[] = [];
  return {
    steps,
    onEvent(e) {
      const m = e.resourcePreEvent?.metadata;
      if (!m) return;
      const name = m.urn.split("::").at(-1) ?? m.urn;
      const step = { op: m.op, urn: m.urn, type: m.type, name: `${m.type}::${name}`, diffs: m.diffs ?? [] };
      const i = steps.findIndex((s) => s.urn === m.urn);
      if (i >= 0) steps[i] = step;
      else steps.push(step);
    },
  };
}

/** Ops that destroy an object and make a new one. */
export const REPLACING_OPS: readonly OpType[] = ["replace", "create-replacement", "delete-replaced"];

interface ServiceList {
  items: Array<{
    metadata: { name: string; namespace: string };
    spec: { type?: string };
    status?: { loadBalancer?: { ingress?: unknown[] } };
  }>;
}

/**
 * Plays the cloud's load balancer controller for the loopback cluster: a
 * LoadBalancer Service in `namespace` without an address gets an NLB-shaped
 * hostname in its status, as the AWS Load Balancer Controller writes it once
 * the NLB exists. Nothing else here provisions load balancers, and the
 * provider's await for a LoadBalancer Service is exactly that address.
 */
export function loadBalancerStandIn(kube: Kube, namespace: string): { stop(): Promise<void>; patched: string[] } {
  const patched: string[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      try {
        const list = await kube.json<ServiceList>(["get", "services", "-n", namespace]);
        for (const s of list.items) {
          if (s.spec.type !== "LoadBalancer" || (s.status?.loadBalancer?.ingress ?? []).length > 0) continue;
          const hostname = `k8s-${namespace}-${s.metadata.name}-0123456789.elb.us-east-1.amazonaws.com`.slice(0, 120);
          await kube.run([
            "patch",
            "service",
            s.metadata.name,
            "-n",
            namespace,
            "--subresource=status",
            "--type=merge",
            "-p",
            JSON.stringify({ status: { loadBalancer: { ingress: [{ hostname }] } } }),
          ]);
          patched.push(`${namespace}/${s.metadata.name}`);
        }
      } catch {
        // The namespace may not exist yet.
      }
      await new Promise((r) => setTimeout(r, 1000));
    }
  })();
  return {
    patched,
    async stop() {
      running = false;
      await loop;
    },
  };
}

interface DeploymentStatus {
  status?: { availableReplicas?: number; replicas?: number; updatedReplicas?: number };
}

/** Samples a Deployment's available replicas every half second until stopped: the lowest seen, and how many samples. */
export function availabilityWatch(
  kube: Kube,
  namespace: string,
  name: string,
): { stop(): Promise<{ min: number; samples: number }> } {
  let running = true;
  let min = Number.POSITIVE_INFINITY;
  let samples = 0;
  const loop = (async () => {
    while (running) {
      try {
        const d = await kube.json<DeploymentStatus>(["get", "deployment", name, "-n", namespace]);
        min = Math.min(min, d.status?.availableReplicas ?? 0);
        samples++;
      } catch {
        min = 0;
      }
      await new Promise((r) => setTimeout(r, 500));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return { min, samples };
    },
  };
}

/** The stack's checkpoint in the file backend: what `pulumi up` wrote, as JSON text. */
export function stateFile(engine: Engine, stackName: string): string {
  const file = path.join(engine.stateDir, ".pulumi", "stacks", PROJECT, `${stackName}.json`);
  return fs.readFileSync(file, "utf8");
}
