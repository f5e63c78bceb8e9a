/**
 * The stack as users run it, under the real engine: the three-model example
 * (test/stacks/models), promoted from the stack that built it, creating its
 * cluster (AWS, eks, awsx, random and tls are the fake cloud's plugins,
 * test/engine/fakeCloud.ts; the created cluster's kubeconfig is the suite's
 * control plane), autoscaling on (KEDA ScaledObjects and Karpenter NodePools
 * applied as custom resources against the vendored upstream CRDs; codegen sleeps, min 0), and the
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
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { program } from "../../infra/program";
import { renderStackScaling, sharedScalingInput } from "../../infra/render/scaling";
import { gatewayName } from "../../infra/conventions/workload";
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
import { fileControlPlane } from "./fileControlPlane";
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

const info = fileControlPlane("models");
const kube = new Kube(info.binDir, info.kubeconfig);

const STACK = "prod";
/** The kwok nodes' stack label and name prefix. */
const NODES = "seed-models";
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
  const of = (ops: readonly string[]) =>
    [...new Set(steps.filter((s) => ops.includes(s.op)).map((s) => s.name))].sort();
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
  const up = await stack.up({ onEvent: done.onEvent, onOutput: logTo(`${label}-up`) }).finally(() => lb.stop());
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
const GATEWAY = gatewayName({ modelName: initial.gateway.workload.triton.modelName });

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
    name: NODES,
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
  await kube.apply([
    ...fakeNodes(promoted(buildingWith({ [ADDED]: ADDED_MODEL }))),
    nodeDaemonSet(NODES),
    ...storeStorage(),
  ]);
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

/** A further model's own resources, with fixed replicas on its own node group (what adding it creates). */
function ownResources(id: string): string[] {
  return [
    `aws:ec2/launchTemplate:LaunchTemplate::cluster-gpu-${id}`,
    `aws:eks/nodeGroup:NodeGroup::cluster-gpu-${id}`,
    `eks:index:ManagedNodeGroup::cluster-gpu-${id}`,
    `kubernetes:apps/v1:Deployment::triton-${id}-deployment`,
    `kubernetes:core/v1:Service::triton-${id}-metrics`,
    `kubernetes:core/v1:Service::triton-${id}-service`,
    `kubernetes:monitoring.coreos.com/v1:ServiceMonitor::triton-${id}-servicemonitor`,
    `kubernetes:networking.k8s.io/v1:NetworkPolicy::gateway-triton-${id}-triton`,
    `kubernetes:policy/v1:PodDisruptionBudget::triton-${id}-pdb`,
    `triton-ft:tritonService:TritonService::triton-${id}`,
  ].sort();
}

/**
 * What the shared objects do when the set of models changes: the gateway's
 * config (its routes) and Deployment (the config's checksum rolls it), its
 * NetworkPolicy (egress to each model's pods), the dashboard (a row per
 * model), the alerts (rules per model) and the gateway's ScaledObject (its
 * bounds hold two batches per Triton pod, summed over every model).
 */
const MODEL_SET_UPDATES = [
  "kubernetes:apps/v1:Deployment::gateway-deployment",
  "kubernetes:core/v1:ConfigMap::gateway-config",
  "kubernetes:core/v1:ConfigMap::scaling-dashboard",
  "kubernetes:keda.sh/v1alpha1:ScaledObject::scaling-gateway-scaledobject",
  "kubernetes:monitoring.coreos.com/v1:PrometheusRule::scaling-alerts",
  "kubernetes:networking.k8s.io/v1:NetworkPolicy::gateway-triton-h2ogpt-6-9b-gateway",
].sort();

const NONE: Changes = { create: [], update: [], replace: [], delete: [] };

/** The Deployments in the namespace: name, replicas asked and available. */
async function deployments(): Promise<Map<string, { replicas?: number; available?: number }>> {
  const list = await kube.json<{
    items: { metadata: { name: string }; spec: { replicas?: number }; status: { availableReplicas?: number } }[];
  }>(["get", "deployments", "-n", NS]);
  return new Map(
    list.items.map((d) => [d.metadata.name, { replicas: d.spec.replicas, available: d.status.availableReplicas }]),
  );
}

async function names(kind: string, namespace?: string): Promise<string[]> {
  const list = await kube.json<{ items: K8sObject[] }>(["get", kind, ...(namespace ? ["-n", namespace] : [])]);
  return list.items.map((o) => o.metadata.name).sort();
}

/** The configuration the scenarios leave: kogpt at two replicas (the serving change) and novelists' second key. */
const SERVED = buildingWith({ "kogpt-6b": { replicas: 2 } });

describe("the three-model example, promoted, autoscaled, with the in-cluster store, under the real engine", () => {
  it("up creates every object and only creates; ScaledObjects, NodePools and the store on the API server", async () => {
    const { planned } = await change("create");
    expect({ ...planned, create: [] }, "nothing but creates").toEqual(NONE);
    const scaling = renderStackScaling(
      sharedScalingInput(
        initial.gateway.plan,
        initial.models.map((m) => m.plan.renderInputs.scaling),
      ),
    );
    type Named = { metadata: { name: string } } | undefined;
    const rendered = (pick: (m: (typeof scaling.models)[number]) => Named) =>
      scaling.models.flatMap((m) => {
        const o = pick(m);
        return o ? [o.metadata.name] : [];
      });
    // As rendered, on the API server through the upstream CRDs: codegen's ScaledObject and the gateway's.
    expect(await names("scaledobjects.keda.sh", NS)).toEqual(
      [
        ...rendered((m) => m.scaledObject),
        scaling.shared.gatewayScaledObject?.metadata.name ?? "(none rendered)",
      ].sort(),
    );
    expect(rendered((m) => m.scaledObject)).toHaveLength(1);
    expect(await names("nodepools.karpenter.sh")).toEqual(rendered((m) => m.nodePool).sort());
    expect(await names("ec2nodeclasses.karpenter.k8s.aws")).toEqual(rendered((m) => m.ec2NodeClass).sort());
    // Every Deployment available, the in-cluster store's included (its volume bound).
    const deps = await deployments();
    expect([...deps.keys()]).toContain(initial.gateway.workload.store?.name);
    for (const [name, d] of deps) expect(d.available, name).toBe(d.replicas);
    const claims = await kube.json<{ items: { status: { phase: string } }[] }>(["get", "pvc", "-n", NS]);
    expect(claims.items.map((c) => c.status.phase)).toEqual(["Bound"]);
  });

  it("add a model: creates only its resources; updates only the gateway's view of the models; replaces nothing", async () => {
    const cfg = buildingWith({ [ADDED]: ADDED_MODEL });
    await publish(cfg, "build-1");
    await configure(promoted(cfg));
    const { planned } = await change("add");
    expect(planned).toEqual({ ...NONE, create: ownResources(ADDED), update: MODEL_SET_UPDATES });
  });

  it("remove a model: deletes only its own; updates only the gateway's view of the models", async () => {
    await publish(building, "build-1");
    await configure(promoted(building));
    const { planned } = await change("remove");
    expect(planned).toEqual({ ...NONE, delete: ownResources(ADDED), update: MODEL_SET_UPDATES });
    expect([...(await deployments()).keys()]).not.toContain(`triton-${ADDED}`);
  });

  it("change one model's serving settings (kogpt replicas 1 -> 2): touches only that model and the gateway's capacity for it", async () => {
    await kube.apply(fakeNodes(promoted(SERVED)));
    await publish(SERVED, "build-1");
    await configure(promoted(SERVED));
    const { planned } = await change("serving");
    expect(planned).toEqual({
      ...NONE,
      update: [
        // Its node group: a node more for the second pod (every replica plus the surge slot).
        "aws:eks/nodeGroup:NodeGroup::cluster-gpu-kogpt-6b",
        // The gateway's model slots for kogpt follow its pod count, and the gateway's scaler the sum.
        "kubernetes:apps/v1:Deployment::gateway-deployment",
        "kubernetes:apps/v1:Deployment::triton-kogpt-6b-deployment",
        "kubernetes:core/v1:ConfigMap::gateway-config",
        "kubernetes:keda.sh/v1alpha1:ScaledObject::scaling-gateway-scaledobject",
      ],
    });
    expect((await deployments()).get("triton-kogpt-6b")).toEqual({ replicas: 2, available: 2 });
  });

  it("promote a new digest for one model: rolls only its Deployment", async () => {
    await publish(SERVED, "build-1", { "kogpt-6b": "build-2" });
    const { planned } = await change("digest");
    expect(planned).toEqual({ ...NONE, update: ["kubernetes:apps/v1:Deployment::triton-kogpt-6b-deployment"] });
    const outputs = await stack.outputs();
    const models = outputs.models?.value as Record<string, { serverImage: string }>;
    const published = buildStackOutputs(SERVED, BUILDING, "build-1", { "kogpt-6b": "build-2" }).models as Record<
      string,
      { serverImage: string }
    >;
    for (const id of Object.keys(published)) expect(models[id]?.serverImage, id).toBe(published[id]?.serverImage);
  });

  it("rotate one team's key hash (a second held key, then the first removed): its keys Secret and the gateway's pods roll", async () => {
    for (const [label, keys] of [
      ["rotate-add", [KEY_1, KEY_2]],
      ["rotate-remove", [KEY_2]],
    ] as const) {
      await configure(promoted(SERVED, [...keys]));
      const { planned } = await change(label);
      // The keys' checksum in the pod template rolls the gateway pods; nothing else knows the keys.
      expect(planned, label).toEqual({
        ...NONE,
        update: ["kubernetes:apps/v1:Deployment::gateway-deployment", "kubernetes:core/v1:Secret::gateway-keys"],
      });
    }
    const secret = await kube.json<{ data: Record<string, string> }>(["get", "secret", `${GATEWAY}-keys`, "-n", NS]);
    const keysJson = Buffer.from(secret.data["keys.json"] ?? "", "base64").toString("utf8");
    expect(keysJson).toContain(KEY_2.sha256);
    expect(keysJson).not.toContain(KEY_1.sha256);
  });

  it("drift on scaled Deployments: a fixed one scaled by hand is restored; the autoscaled one keeps what its autoscaler set", async () => {
    // kogpt has fixed replicas (2); codegen is autoscaled (KEDA owns its replicas, the program sets none).
    await kube.run(["scale", "deployment", "triton-kogpt-6b", "-n", NS, "--replicas=1"]);
    await kube.run(["scale", "deployment", "triton-codegen-2b-mono", "-n", NS, "--replicas=2"]);
    const refresh = await stack.refresh({ onOutput: logTo("drift-refresh") });
    expect(refresh.summary.result).toBe("succeeded");
    const { planned } = await change("drift");
    expect(planned).toEqual({ ...NONE, update: ["kubernetes:apps/v1:Deployment::triton-kogpt-6b-deployment"] });
    const deps = await until("kogpt back at 2 available replicas", 60, async () => {
      const d = await deployments();
      return d.get("triton-kogpt-6b")?.available === 2 ? d : undefined;
    });
    expect(deps.get("triton-kogpt-6b")).toEqual({ replicas: 2, available: 2 });
    expect(deps.get("triton-codegen-2b-mono")?.replicas).toBe(2);
  });

  it("keep a sleeping model awake, then let it sleep again (codegen min 0 -> 1 -> 0): its scaler, the gateway's wake block and the dashboard; replaces nothing", async () => {
    // What a model's minimum touches: its ScaledObject (minReplicaCount; with 0 the in-use trigger and the
    // idle window), the gateway's config (the model's wake block) and Deployment (the config's checksum
    // rolls it), the dashboard (the model's replica range) and the alerts (a sleeping model's absent
    // metrics count only while it wants pods). Not its Deployment, NodePool or nodes.
    const updates = [
      "kubernetes:apps/v1:Deployment::gateway-deployment",
      "kubernetes:core/v1:ConfigMap::gateway-config",
      "kubernetes:core/v1:ConfigMap::scaling-dashboard",
      "kubernetes:keda.sh/v1alpha1:ScaledObject::scaling-scaledobject-codegen-2b-mono",
      "kubernetes:monitoring.coreos.com/v1:PrometheusRule::scaling-alerts",
    ].sort();
    const awake = buildingWith({ "kogpt-6b": { replicas: 2 }, "codegen-2b-mono": { autoscaling: { min: 1, max: 3 } } });
    for (const [label, cfg, min] of [
      ["wake", awake, 1],
      ["sleep", SERVED, 0],
    ] as const) {
      await publish(cfg, "build-1", { "kogpt-6b": "build-2" });
      await configure(promoted(cfg, [KEY_2]));
      const { planned } = await change(label);
      expect(planned, label).toEqual({ ...NONE, update: updates });
      const so = await kube.json<{ spec: { minReplicaCount: number; triggers: { name: string }[] } }>([
        "get",
        "scaledobject",
        "-n",
        NS,
        "triton-codegen-2b-mono",
      ]);
      expect(so.spec.minReplicaCount, label).toBe(min);
      expect(
        so.spec.triggers.map((t) => t.name),
        label,
      ).toEqual(min === 0 ? ["queue-compute-ratio", "in-use"] : ["queue-compute-ratio"]);
    }
  });

  it("destroy leaves no object of the stack on the API server", async () => {
    const destroy = await stack.destroy({ onOutput: logTo("destroy") });
    expect(destroy.summary.result).toBe("succeeded");
    expect([...(await deployments()).keys()]).toEqual([]);
    expect(await names("scaledobjects.keda.sh", NS)).toEqual([]);
    expect(await names("nodepools.karpenter.sh")).toEqual([]);
    expect(await names("ec2nodeclasses.karpenter.k8s.aws")).toEqual([]);
    await stack.workspace.removeStack(STACK);
    await staging.destroy({ onOutput: logTo("staging-destroy") });
  });
});
