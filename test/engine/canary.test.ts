/**
 * A model's canary (issue 36) under the real engine: the three-model example
 * with KoGPT's canary (test/stacks/models/Pulumi.seed-canary.yaml) as the
 * stack that builds it, since a canary is a build of its own and a promoted
 * stack refuses one (resolve/canary.ts). Its AWS side and its remote build
 * commands are the fake cloud's plugins (test/engine/fakeCloud.ts); every
 * Kubernetes object lands on the suite's control plane. Each change is
 * asserted as the exact sets of resources the engine creates, updates,
 * replaces and deletes (its own step events), and followed by a re-preview
 * with zero changes.
 *
 * The scenarios follow each other on one stack, in order: the stack without
 * the canary, the canary added, rolled back by config, added again, promoted.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import * as pulumi from "@pulumi/pulumi";
import type { EngineEvent, OpType, Stack } from "@pulumi/pulumi/automation";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { program } from "../../infra/program";
import { renderStackScaling, sharedScalingInput } from "../../infra/render/scaling";
import { Kube } from "../k8s/kube";
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
import { stackPlanOf, testStackConfig, testStackRegion, type RawConfig } from "./stacks";

const info = fileControlPlane("canary");
const kube = new Kube(info.binDir, info.kubeconfig);

const STACK = "canary";
/** The kwok nodes' stack label and name prefix. */
const NODES = "seed-canary";
const SOURCE = ["models", "seed-canary"] as const;
const REGION = testStackRegion(...SOURCE);
const MODEL = "kogpt-6b";
const CANARY = `${MODEL}-canary`;
/** The stack file as committed: KoGPT's canary live (maxBatchSize 8 against the stable's 4, 10 %). */
const WITH_CANARY = testStackConfig(...SOURCE);

/** The stack file with KoGPT's canary block changed (`null` removes it). */
function canaryAs(change: Record<string, unknown> | null): RawConfig {
  const cfg = structuredClone(WITH_CANARY);
  const models = cfg.models as Record<string, Record<string, unknown>>;
  const model = models[MODEL];
  if (!model) throw new Error(`${MODEL} is not in the stack file`);
  if (change === null) delete model.canary;
  else model.canary = { ...(model.canary as Record<string, unknown>), ...change };
  return cfg;
}
const STABLE_ONLY = canaryAs(null);
const PROMOTED = canaryAs({ promote: true });

let engine: Engine;
let workDir: string;
let stack: Stack;
const logs: string[] = [];

function logTo(name: string): (out: string) => void {
  const file = path.join(workDir, `${name}.log`);
  logs.push(file);
  return (out) => fs.appendFileSync(file, out);
}

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

/** The engine's events in the order it sent them: a step announced (`pre`) and a step done (`done`). */
interface Sequenced {
  phase: "pre" | "done";
  op: OpType;
  name: string;
}

function eventOrder(): { seq: Sequenced[]; onEvent: (e: EngineEvent) => void } {
  const seq: Sequenced[] = [];
  const nameOf = (m: { urn: string; type: string }) => `${m.type}::${m.urn.split("::").at(-1) ?? m.urn}`;
  return {
    seq,
    onEvent(e) {
      const pre = e.resourcePreEvent?.metadata;
      if (pre) seq.push({ phase: "pre", op: pre.op, name: nameOf(pre) });
      const done = e.resOutputsEvent?.metadata;
      if (done) seq.push({ phase: "done", op: done.op, name: nameOf(done) });
    },
  };
}

async function configure(cfg: RawConfig): Promise<void> {
  await setStackConfig(stack, cfg, {}, { "aws:region": REGION });
}

/** One change: preview (the plan asserted), up (exactly what the preview said), a zero-change re-preview. */
async function change(label: string): Promise<{ planned: Changes; order: Sequenced[] }> {
  const pre = stepRecorder();
  await stack.preview({ onEvent: pre.onEvent, onOutput: logTo(`${label}-preview`) });
  logTo(`${label}-preview-steps`)(summary(pre.steps));
  const lb = loadBalancerStandIn(kube, NS);
  const done = stepRecorder();
  const order = eventOrder();
  const up = await stack
    .up({
      onEvent: (e) => {
        done.onEvent(e);
        order.onEvent(e);
      },
      onOutput: logTo(`${label}-up`),
    })
    .finally(() => lb.stop());
  expect(up.summary.result, label).toBe("succeeded");
  expect(changesOf(done.steps), `${label}: up did what the preview said\n${summary(done.steps)}`).toEqual(
    changesOf(pre.steps),
  );
  const again = stepRecorder();
  await stack.preview({ onEvent: again.onEvent, onOutput: logTo(`${label}-repreview`) });
  expect(summary(again.steps), `${label}: the re-preview shows zero changes`).toBe("");
  return { planned: changesOf(pre.steps), order: order.seq };
}

/** Kwok nodes shaped like every model's node group and the canary's. */
function fakeNodes(): K8sObject[] {
  const sp = stackPlanOf(WITH_CANARY, STACK, REGION);
  const scaling = renderStackScaling(
    sharedScalingInput(
      sp.gateway.plan,
      sp.models.map((m) => m.plan.renderInputs.scaling),
    ),
  );
  const node = (id: string, plan: (typeof sp.models)[number]["plan"], pool?: unknown) => ({
    id,
    several: true,
    servingInstanceType: plan.serving.instanceType,
    kubernetes: plan.kubernetes,
    objects: (pool ? [pool] : []) as unknown as K8sObject[],
  });
  return nodesFor({
    name: NODES,
    region: REGION,
    availabilityZones: 2,
    models: [
      ...sp.models.map((m, i) => node(m.id, m.plan, scaling.models[i]?.nodePool)),
      ...sp.canaries.map((c) => node(c.id, c.plan)),
    ],
  });
}

beforeAll(async () => {
  workDir = fs.mkdtempSync(path.join(info.dir, "engine-canary-"));
  engine = await startEngine(workDir, {
    path: [path.join(__dirname, "plugins")],
    env: { FAKE_CLOUD_KUBECONFIG: info.kubeconfig },
  });
  await kube.apply([...fakeNodes(), nodeDaemonSet(NODES)]);
  const charts = path.join(workDir, "charts");
  stack = await engineStack(engine, STACK, async () => {
    pulumi.runtime.registerResourceTransform(chartStandIn(charts));
    return program();
  });
  await configure(STABLE_ONLY);
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

const NONE: Changes = { create: [], update: [], replace: [], delete: [] };

/**
 * What a canary changes of what was there (test/unit/canary.test.ts pins the same under the mock
 * runtime): the gateway's config (the route's canary block) and Deployment (the config's checksum),
 * its NetworkPolicy (egress to the canary's Triton), the dashboard (the canary panels), the alerts
 * (TritonFtCanaryRolledBack), and the builders' ECR policies (the canary's repository).
 */
const CANARY_SET_UPDATES = [
  "aws:iam/rolePolicy:RolePolicy::builder-ecr",
  "aws:iam/rolePolicy:RolePolicy::builder-l4-ecr",
  "kubernetes:apps/v1:Deployment::gateway-deployment",
  "kubernetes:core/v1:ConfigMap::gateway-config",
  "kubernetes:core/v1:ConfigMap::scaling-dashboard",
  "kubernetes:monitoring.coreos.com/v1:PrometheusRule::scaling-alerts",
  "kubernetes:networking.k8s.io/v1:NetworkPolicy::gateway-triton-h2ogpt-6-9b-gateway",
].sort();

/**
 * The builder's start and stop gates (stopBuilderWhenDone): replaced whenever a step on the builder runs,
 * which starts the stopped builder and stops it after (components/buildPipeline.ts replacementTrigger).
 * The canary's own steps run on its model's builder, so adding it replaces these and nothing else.
 */
const BUILDER_GATES = [
  "aws:ec2transitgateway/instanceState:InstanceState::build-running",
  "aws:ec2transitgateway/instanceState:InstanceState::build-stopped",
];

/** The canary's serving side: its Triton component, workload and nodes (what promotion deletes). */
const CANARY_SERVING = [
  `aws:ec2/launchTemplate:LaunchTemplate::cluster-gpu-${CANARY}`,
  `aws:eks/nodeGroup:NodeGroup::cluster-gpu-${CANARY}`,
  `eks:index:ManagedNodeGroup::cluster-gpu-${CANARY}`,
  `kubernetes:apps/v1:Deployment::triton-${CANARY}-deployment`,
  `kubernetes:core/v1:Service::triton-${CANARY}-metrics`,
  `kubernetes:core/v1:Service::triton-${CANARY}-service`,
  `kubernetes:monitoring.coreos.com/v1:ServiceMonitor::triton-${CANARY}-servicemonitor`,
  `kubernetes:networking.k8s.io/v1:NetworkPolicy::gateway-triton-${CANARY}-triton`,
  `kubernetes:policy/v1:PodDisruptionBudget::triton-${CANARY}-pdb`,
  `triton-ft:tritonService:TritonService::triton-${CANARY}`,
].sort();

/** The canary's build side: its pipeline, its own steps (gemm, bake; fetch and convert are the stable's), its repository. */
const CANARY_BUILD = [
  `aws:ecr/lifecyclePolicy:LifecyclePolicy::registry-server-${CANARY}`,
  `aws:ecr/repository:Repository::registry-server-${CANARY}`,
  `command:remote:Command::build-${CANARY}-bake`,
  `command:remote:Command::build-${CANARY}-config-bake`,
  `command:remote:Command::build-${CANARY}-config-gemm`,
  `command:remote:Command::build-${CANARY}-deployed-server`,
  `command:remote:Command::build-${CANARY}-gemm`,
  ...["ensemble", "fastertransformer", "postprocessing", "preprocessing"].map(
    (m) => `command:remote:CopyToRemote::build-${CANARY}-file-plan-${CANARY}-model-repository-${m}-config-pbtxt`,
  ),
  `command:remote:CopyToRemote::build-${CANARY}-file-plan-${CANARY}-expected-weights-json`,
  `triton-ft:buildPipeline:BuildPipeline::build-${CANARY}`,
].sort();

const CANARY_OWN = [...CANARY_SERVING, ...CANARY_BUILD].sort();
const isBuildStep = (name: string) => name.startsWith("command:") || name.startsWith("triton-ft:buildPipeline:");

/** A Deployment on the API server: its uid (the same object, not a replacement) and its first container's image. */
async function deployment(name: string): Promise<{ uid: string; image: string } | undefined> {
  const list = await kube.json<{
    items: {
      metadata: { name: string; uid: string };
      spec: { template: { spec: { containers: { image: string }[] } } };
    }[];
  }>(["get", "deployments", "-n", NS]);
  const d = list.items.find((x) => x.metadata.name === name);
  return d ? { uid: d.metadata.uid, image: d.spec.template.spec.containers[0]?.image ?? "" } : undefined;
}

const NS = stackPlanOf(WITH_CANARY, STACK, REGION).gateway.workload.triton.namespace;

describe("a model's canary under the real engine (the three-model example, building)", () => {
  it("up creates the stack without the canary, only creates", async () => {
    const { planned } = await change("create");
    expect({ ...planned, create: [] }).toEqual(NONE);
  });

  it("add the canary: creates only its resources; updates only the gateway's view, the dashboard, the alerts and the builders' ECR policies; replaces only the builder's start and stop gates", async () => {
    await configure(WITH_CANARY);
    const { planned } = await change("canary-add");
    expect(planned).toEqual({ ...NONE, create: CANARY_OWN, update: CANARY_SET_UPDATES, replace: BUILDER_GATES });
    expect((await deployment(`triton-${CANARY}`))?.image).toMatch(/@sha256:/);
  });

  it("roll it back by config (its block removed, not promoted): deletes only its own; the same updates back", async () => {
    await configure(STABLE_ONLY);
    const { planned } = await change("canary-remove");
    // The builder's gates are replaced again: its restart trigger covers the steps it hosts, the canary's
    // included (plan/restart.ts), so taking them away starts and stops the builder with no step to run.
    expect(planned).toEqual({ ...NONE, delete: CANARY_OWN, update: CANARY_SET_UPDATES, replace: BUILDER_GATES });
    expect(await deployment(`triton-${CANARY}`)).toBeUndefined();
  });

  it("promote it: the model's Deployment rolls to the canary's image (an update), the canary's serving objects go after the gateway's update, no build step changes", async () => {
    await configure(WITH_CANARY);
    await change("canary-readd");
    const stableBefore = await deployment(`triton-${MODEL}`);
    const canaryBefore = await deployment(`triton-${CANARY}`);
    if (!stableBefore || !canaryBefore) throw new Error("the model's and the canary's Deployments are not served");
    expect(canaryBefore.image).not.toBe(stableBefore.image);

    await configure(PROMOTED);
    const { planned, order } = await change("canary-promote");
    // The model's serving side takes the canary's image and limits; the gateway loses the canary block and
    // takes the canary's limits (its ScaledObject follows the model's larger batch); the builders' ECR
    // policies keep the canary's repository, which holds the image now served.
    expect(planned).toEqual({
      ...NONE,
      update: [
        "kubernetes:apps/v1:Deployment::gateway-deployment",
        `kubernetes:apps/v1:Deployment::triton-${MODEL}-deployment`,
        "kubernetes:core/v1:ConfigMap::gateway-config",
        "kubernetes:core/v1:ConfigMap::scaling-dashboard",
        "kubernetes:keda.sh/v1alpha1:ScaledObject::scaling-gateway-scaledobject",
        "kubernetes:monitoring.coreos.com/v1:PrometheusRule::scaling-alerts",
        "kubernetes:networking.k8s.io/v1:NetworkPolicy::gateway-triton-h2ogpt-6-9b-gateway",
      ].sort(),
      delete: CANARY_SERVING,
    });
    expect([...planned.create, ...planned.update, ...planned.replace, ...planned.delete].filter(isBuildStep)).toEqual(
      [],
    );
    // On the API server: the same Deployment object (its uid), now serving the canary's image by digest.
    const stableAfter = await deployment(`triton-${MODEL}`);
    expect(stableAfter).toEqual({ uid: stableBefore.uid, image: canaryBefore.image });
    expect(await deployment(`triton-${CANARY}`)).toBeUndefined();

    // The order the engine did it in: the gateway stops routing to the canary (its Deployment's update,
    // rolled out) and the model serves the canary's image before the canary's Triton is deleted.
    const at = (phase: "pre" | "done", op: string, name: string) => {
      const i = order.findIndex((e) => e.phase === phase && e.op === op && e.name === name);
      expect(i, `${phase} ${op} ${name} in the engine's events`).toBeGreaterThanOrEqual(0);
      return i;
    };
    const canaryGone = at("pre", "delete", `kubernetes:apps/v1:Deployment::triton-${CANARY}-deployment`);
    expect(at("done", "update", "kubernetes:apps/v1:Deployment::gateway-deployment")).toBeLessThan(canaryGone);
    expect(at("done", "update", `kubernetes:apps/v1:Deployment::triton-${MODEL}-deployment`)).toBeLessThan(canaryGone);
  });

  it("destroy leaves no Deployment of the stack on the API server", async () => {
    const destroy = await stack.destroy({ onOutput: logTo("destroy") });
    expect(destroy.summary.result).toBe("succeeded");
    expect(await deployment(`triton-${MODEL}`)).toBeUndefined();
    await stack.workspace.removeStack(STACK);
  });
});
