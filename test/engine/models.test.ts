/**
 * The stack as users run it, under the real engine: the three-model example
 * (test/stacks/models), promoted from the stack that built it, creating its
 * cluster (AWS, eks, awsx, random and tls are the fake cloud's plugins,
 * test/engine/fakeCloud.ts; the created cluster's kubeconfig is the suite's
 * control plane), autoscaling on (KEDA ScaledObjects and Karpenter NodePools
 * applied as custom resources against the vendored upstream CRDs), and the
 * in-cluster store. Then the changes a platform team makes to a live stack,
 * each asserted as the exact sets of resources the engine creates, updates,
 * replaces and deletes (its own step events), and each followed by a
 * re-preview with zero changes.
 *
 * The scenarios follow each other on one stack, in order.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import * as pulumi from "@pulumi/pulumi";
import type { Stack } from "@pulumi/pulumi/automation";
import { afterAll, beforeAll, beforeEach, describe, expect, inject, it } from "vitest";
import { program } from "../../infra/program";
import { renderStackScaling, sharedScalingInput } from "../../infra/render/scaling";
import { Kube, until } from "../k8s/kube";
import { nodeDaemonSet, nodesFor } from "../k8s/nodes";
import type { K8sObject } from "../k8s/stacks";
import { chartStandIn } from "./charts";
import {
  REPLACING_OPS,
  engineStack,
  loadBalancerStandIn,
  setStackConfig,
  startEngine,
  stepRecorder,
  type Engine,
  type StepRecord,
} from "./engine";
import {
  STORE_STORAGE_CLASS,
  buildStackOutputs,
  heldKey,
  promotedCreateForm,
  stackPlanOf,
  testStackConfig,
  testStackRegion,
  type RawConfig,
} from "./stacks";

const info = inject("k8s");
const kube = new Kube(info.binDir, info.kubeconfig);

const STACK = "prod";
const BUILDING = "staging";
const SOURCE = ["models", "seed-models"] as const;
const REGION = testStackRegion(...SOURCE);
const building = testStackConfig(...SOURCE);
/** The model the add and remove scenarios bring and take away: GPT-2 on the A10G nodes the stack already has. */
const ADDED = "gpt2";
const ADDED_MODEL = {
  preset: "gpt2",
  source: { huggingface: { repo: "openai-community/gpt2", revision: "607a30d783dfa663caf39e06633721c8d4cfcd7e" } },
  instanceType: "g5.2xlarge",
  tensorParallel: 1,
  replicas: 1,
  maxBatchSize: 8,
  maxInputLen: 512,
  maxOutputLen: 256,
};
const KEY_1 = heldKey("novelists-1");
const KEY_2 = heldKey("novelists-2");

/** The building config with the given models' changes (each model's keys replaced or added, `null` removes it). */
function buildingWith(changes: Record<string, Record<string, unknown> | null> = {}): RawConfig {
  const cfg = structuredClone(building);
  const models = { ...(cfg.models ?? {}) } as Record<string, unknown>;
  for (const [id, change] of Object.entries(changes)) {
    if (change === null) delete models[id];
    else models[id] = { ...(models[id] as Record<string, unknown> | undefined), ...change };
  }
  cfg.models = models;
  return cfg;
}

/** The promoted stack's config for a building config, with the novelists team's held key hashes. */
function promoted(cfg: RawConfig, novelistKeys: { sha256: string }[] = [KEY_1]): RawConfig {
  const p = promotedCreateForm(cfg, BUILDING);
  const serving = p.serving as { consumers: Record<string, Record<string, unknown>> };
  serving.consumers = {
    ...serving.consumers,
    novelists: { ...serving.consumers.novelists, keySha256: novelistKeys.map((k) => k.sha256) },
  };
  return p;
}

let engine: Engine;
let workDir: string;
let staging: Stack;
let stack: Stack;
const logs: string[] = [];

function logTo(name: string): (out: string) => void {
  const file = path.join(workDir, `${name}.log`);
  logs.push(file);
  return (out) => fs.appendFileSync(file, out);
}

/** The resources of a step list by what the engine does to them: `<type>::<name>` sorted, replacements as one. */
interface Changes {
  create: string[];
  update: string[];
  replace: string[];
  delete: string[];
}

function changesOf(steps: StepRecord[]): Changes {
  const of = (ops: readonly string[]) => [...new Set(steps.filter((s) => ops.includes(s.op)).map((s) => s.name))].sort();
  return { create: of(["create"]), update: of(["update"]), replace: of(REPLACING_OPS), delete: of(["delete"]) };
}

function summary(steps: StepRecord[]): string {
  return steps
    .filter((s) => s.op !== "same" && s.op !== "read")
    .map((s) => `${s.op} ${s.name}${s.diffs.length ? ` [${s.diffs.join(", ")}]` : ""}`)
    .join("\n");
}

/** What the building stack exports after building `cfg` (`runs` labels the run that baked a model). */
async function publish(cfg: RawConfig, run: string, runs: Record<string, string> = {}): Promise<void> {
  staging = await engineStack(engine, BUILDING, async () => buildStackOutputs(cfg, BUILDING, run, runs));
  await staging.up({ onOutput: logTo(`staging-${run}`) });
}

async function configure(cfg: RawConfig): Promise<void> {
  await setStackConfig(stack, cfg, {}, { "aws:region": REGION });
}

/**
 * One change to the live stack: preview (the plan asserted), up (doing exactly
 * what the preview said), and a re-preview with zero changes.
 */
async function change(label: string): Promise<{ planned: Changes; steps: StepRecord[] }> {
  const pre = stepRecorder();
  await stack.preview({ onEvent: pre.onEvent, onOutput: logTo(`${label}-preview`) });
  logTo(`${label}-preview-steps`)(summary(pre.steps));
  const lb = loadBalancerStandIn(kube, NS);
  const done = stepRecorder();
  const up = await stack
    .up({ onEvent: done.onEvent, onOutput: logTo(`${label}-up`) })
    .finally(() => lb.stop());
  expect(up.summary.result, label).toBe("succeeded");
  expect(changesOf(done.steps), `${label}: up did what the preview said\n${summary(done.steps)}`).toEqual(
    changesOf(pre.steps),
  );
  await expectNoChanges(label);
  return { planned: changesOf(pre.steps), steps: pre.steps };
}

async function expectNoChanges(label: string): Promise<void> {
  const again = stepRecorder();
  await stack.preview({ onEvent: again.onEvent, onOutput: logTo(`${label}-repreview`) });
  expect(summary(again.steps), `${label}: the re-preview shows zero changes`).toBe("");
}

const initial = stackPlanOf(promoted(building), STACK, REGION);
const NS = initial.gateway.workload.triton.namespace;

/** Kubernetes objects the created cluster's nodes need to exist: kwok nodes shaped like each model's node group or NodePool. */
function fakeNodes(cfg: RawConfig): K8sObject[] {
  const sp = stackPlanOf(cfg, STACK, REGION);
  const scaling = renderStackScaling(
    sharedScalingInput(
      sp.gateway.plan,
      sp.models.map((m) => m.plan.renderInputs.scaling),
    ),
  );
  return nodesFor({
    name: STACK,
    region: REGION,
    availabilityZones: 2,
    models: sp.models.map((m, i) => ({
      id: m.id,
      several: sp.models.length > 1,
      servingInstanceType: m.plan.serving.instanceType,
      kubernetes: m.plan.kubernetes,
      objects: (scaling.models[i]?.nodePool ? [scaling.models[i]?.nodePool] : []) as unknown as K8sObject[],
    })),
  });
}

/** What an operator installs for the in-cluster store on a created cluster: a StorageClass and a volume of it. */
function storeStorage(): K8sObject[] {
  return [
    {
      apiVersion: "storage.k8s.io/v1",
      kind: "StorageClass",
      metadata: { name: STORE_STORAGE_CLASS },
      provisioner: "kubernetes.io/no-provisioner",
      volumeBindingMode: "Immediate",
    },
    {
      apiVersion: "v1",
      kind: "PersistentVolume",
      metadata: { name: `${STORE_STORAGE_CLASS}-0` },
      spec: {
        capacity: { storage: "10Gi" },
        accessModes: ["ReadWriteOnce"],
        storageClassName: STORE_STORAGE_CLASS,
        hostPath: { path: "/var/lib/engine-suite-store" },
      },
    },
  ];
}

beforeAll(async () => {
  workDir = fs.mkdtempSync(path.join(info.dir, "engine-models-"));
  engine = await startEngine(workDir, {
    path: [path.join(__dirname, "plugins")],
    env: { FAKE_CLOUD_KUBECONFIG: info.kubeconfig },
  });
  await kube.apply([...fakeNodes(promoted(buildingWith({ [ADDED]: ADDED_MODEL }))), nodeDaemonSet(STACK), ...storeStorage()]);
  await publish(building, "build-1");
  const charts = path.join(workDir, "charts");
  stack = await engineStack(engine, STACK, async () => {
    pulumi.runtime.registerResourceTransform(chartStandIn(charts));
    return program();
  });
  await configure(promoted(building));
});

let failed = false;
beforeEach((ctx) => {
  ctx.onTestFailed(() => {
    failed = true;
  });
});

afterAll(() => {
  if (!failed) return;
  for (const f of logs)
    if (fs.existsSync(f))
      process.stderr.write(`--- ${path.basename(f)} (tail)\n${fs.readFileSync(f, "utf8").slice(-4000)}\n`);
});

describe("the three-model example, promoted, autoscaled, with the in-cluster store, under the real engine", () => {
  it("up creates every object; ScaledObjects and NodePools on the API server; a re-preview shows zero changes", async () => {
    const { planned } = await change("create");
    logTo("sets")(`create: ${JSON.stringify(planned, null, 2)}\n`);
    expect(planned.update.concat(planned.replace, planned.delete)).toEqual([]);
    const scaled = await kube.json<{ items: K8sObject[] }>(["get", "scaledobjects.keda.sh", "-n", NS]);
    expect(scaled.items.map((o) => o.metadata.name).sort()).toMatchSnapshot();
    const pools = await kube.json<{ items: K8sObject[] }>(["get", "nodepools.karpenter.sh"]);
    expect(pools.items.map((o) => o.metadata.name).sort()).toMatchSnapshot();
  });

  it("add a model: creates only its resources; updates only the gateway's config, Deployment, NetworkPolicy and dashboard", async () => {
    const cfg = buildingWith({ [ADDED]: ADDED_MODEL });
    await publish(cfg, "build-1");
    await configure(promoted(cfg));
    const { planned } = await change("add");
    logTo("sets")(`add: ${JSON.stringify(planned, null, 2)}\n`);
  });

  it("remove a model: deletes only its own", async () => {
    await publish(building, "build-1");
    await configure(promoted(building));
    const { planned } = await change("remove");
    logTo("sets")(`remove: ${JSON.stringify(planned, null, 2)}\n`);
  });

  it("change one model's serving settings: touches only that model", async () => {
    const cfg = buildingWith({ "kogpt-6b": { replicas: 2 } });
    await publish(cfg, "build-1");
    await configure(promoted(cfg));
    const { planned } = await change("serving");
    logTo("sets")(`serving: ${JSON.stringify(planned, null, 2)}\n`);
  });

  it("promote a new digest for one model: rolls only its Deployment", async () => {
    const cfg = buildingWith({ "kogpt-6b": { replicas: 2 } });
    await publish(cfg, "build-1", { "kogpt-6b": "build-2" });
    const { planned } = await change("digest");
    logTo("sets")(`digest: ${JSON.stringify(planned, null, 2)}\n`);
  });

  it("rotate one team's key hash", async () => {
    const cfg = buildingWith({ "kogpt-6b": { replicas: 2 } });
    await configure(promoted(cfg, [KEY_1, KEY_2]));
    const { planned: add } = await change("rotate-add");
    await configure(promoted(cfg, [KEY_2]));
    const { planned: remove } = await change("rotate-remove");
    logTo("sets")(`rotate: ${JSON.stringify({ add, remove }, null, 2)}\n`);
  });

  it("drift on a scaled Deployment: refresh finds it, up restores it", async () => {
    const deps = await kube.json<{ items: { metadata: { name: string }; spec: { replicas: number } }[] }>([
      "get",
      "deployments",
      "-n",
      NS,
    ]);
    logTo("sets")(`deployments: ${JSON.stringify(deps.items.map((d) => [d.metadata.name, d.spec.replicas]))}\n`);
    await until("nothing", 1, async () => true);
  });
});
