/**
 * Minutes from `pulumi up` to serving, per model: the critical path of a first
 * deployment, the work a change re-does, and a new replica's cold start.
 *
 * First deployment: two branches run side by side and serving waits for both.
 * - Build: builder launch, then the longest path through the step graph
 *   (host-ready, triton_with_ft, fetch, convert, gemm, bake with its push; the
 *   gateway image beside them), each step at its estimate (plan/budgets.ts,
 *   the same figures the step budgets are 2.5× of).
 * - Cluster (cluster.mode create): the EKS control plane, and with a fixed
 *   size the GPU node group, which boots with the cluster.
 * Then: GPU node launch (Karpenter launches on the pending pods, so only with
 * autoscaling), image pull, model load, and the NLB's target registration.
 * With the triton_with_ft pre-pull (nodes with the cluster, render/prePull.ts)
 * the nodes pull triton_with_ft from the end of its step while gemm and bake
 * run, and the pods pull only the bake's own layers; the pods wait for the
 * pre-pull when it ends after the build.
 * The NLB itself is a third branch: its Service waits only for the cluster
 * (components/gatewayService.ts), so it is provisioned while the images
 * build, and it is on the path only when it is ready after the pods.
 *
 * A change: only the steps whose input hashes differ run (the others take no
 * time on the same graph); a stopped builder starts first; a new server image
 * or a new serving shape rolls the pods one at a time (maxSurge 1), each
 * pull + load + NLB registration + the old pod's preStop.
 *
 * A new replica under autoscaling: node boot + pull (FastImagePull when on) +
 * load, as resolve/scaling.ts's expected cold start.
 */
import type { ModelCostInput, StackCostInput, StepTiming, TimeBasis } from "./input";

/** One segment of a path, for the printout ("convert 8 min, partly measured"). */
export interface Segment {
  step: string;
  seconds: number;
  /** Measured or assumed rates (catalog/timings.ts); absent in a cost.json written before it was recorded. */
  basis?: TimeBasis;
  /** The stack's own measurement of the step (its UTC time), when it replaced the catalog's figure. */
  measuredAt?: string;
}

/** Every figure outside the build steps (launches, boots, pulls, loads, the NLB) is an assumed rate. */
const assumed = (step: string, seconds: number): Segment => ({ step, seconds, basis: "assumed" });

export interface TimeEstimate {
  firstDeploySeconds: number;
  /** The segments of the first deployment's critical path, in order. */
  criticalPath: Segment[];
  newReplicaSeconds: number;
}

export interface ChangeEstimate {
  seconds: number;
  /** Build steps the change re-runs (their input hashes differ). */
  changedSteps: string[];
  /** The pods roll: a new server image or a new serving shape. */
  rollout: boolean;
  path: Segment[];
}

/** Longest path through the steps, each taking `seconds(step)`: finish time per step and the path to the latest. */
export function longestPath(
  steps: StepTiming[],
  seconds: (s: StepTiming) => number,
): { finish: Map<string, number>; pathTo: (id: string) => Segment[] } {
  const byId = new Map(steps.map((s) => [s.id, s]));
  const finish = new Map<string, number>();
  const via = new Map<string, string | undefined>();
  const visit = (s: StepTiming, seen: Set<string>): number => {
    const done = finish.get(s.id);
    if (done !== undefined) return done;
    if (seen.has(s.id)) throw new Error(`build steps form a cycle through ${s.id}`);
    seen.add(s.id);
    let start = 0;
    let from: string | undefined;
    for (const d of s.dependsOn) {
      const dep = byId.get(d);
      if (!dep) throw new Error(`step ${s.id} depends on unknown step ${d}`);
      const f = visit(dep, seen);
      if (f > start || from === undefined) {
        start = f;
        from = d;
      }
    }
    const end = start + seconds(s);
    finish.set(s.id, end);
    via.set(s.id, from);
    return end;
  };
  for (const s of steps) visit(s, new Set());
  const pathTo = (id: string): Segment[] => {
    const out: Segment[] = [];
    for (let cur: string | undefined = id; cur !== undefined; cur = via.get(cur)) {
      const s = byId.get(cur);
      if (s)
        out.unshift({
          step: s.id,
          seconds: seconds(s),
          ...(s.basis ? { basis: s.basis } : {}),
          ...(s.measuredAt ? { measuredAt: s.measuredAt } : {}),
        });
    }
    return out;
  };
  return { finish, pathTo };
}

/** The step that finishes last of those the serving side waits for (the server image and the gateway image). */
function latestOf(finish: Map<string, number>, ids: string[]): { id: string; at: number } {
  let best = { id: ids[0] ?? "", at: 0 };
  for (const id of ids) {
    const at = finish.get(id);
    if (at !== undefined && at >= best.at) best = { id, at };
  }
  return best;
}

/** Steps whose output the serving side consumes: the image-producing leaves of the graph. */
export function servingInputs(steps: StepTiming[]): string[] {
  const consumed = new Set(steps.flatMap((s) => s.dependsOn));
  return steps.filter((s) => !consumed.has(s.id)).map((s) => s.id);
}

/** From the builder's launch to the last image this model needs: how long the builder runs for it. */
export function buildSeconds(m: ModelCostInput, builderLaunch: number): number {
  const { finish } = longestPath(m.build.steps, (s) => s.seconds);
  return builderLaunch + latestOf(finish, servingInputs(m.build.steps)).at;
}

/** From the hosts' launch to the end of one step (the compile host runs until triton_with_ft is pushed); 0 when absent. */
export function stepFinishSeconds(m: ModelCostInput, step: string, builderLaunch: number): number {
  const at = longestPath(m.build.steps, (s) => s.seconds).finish.get(step);
  return at === undefined ? 0 : builderLaunch + at;
}

export function estimateTime(stack: StackCostInput, m: ModelCostInput, builderLaunch: number): TimeEstimate {
  const { finish, pathTo } = longestPath(m.build.steps, (s) => s.seconds);
  const launch = builderLaunch;
  const last = latestOf(finish, servingInputs(m.build.steps));
  const buildDone = launch + last.at;
  const sv = m.serving;
  const clusterReady =
    stack.cluster.mode === "create"
      ? stack.cluster.controlPlaneSeconds + (sv.nodesWithCluster ? sv.nodeBootSeconds : 0)
      : 0;
  const clusterPath: Segment[] = [
    assumed("EKS control plane", stack.cluster.mode === "create" ? stack.cluster.controlPlaneSeconds : 0),
    ...(sv.nodesWithCluster ? [assumed("GPU node boot", sv.nodeBootSeconds)] : []),
  ];
  const launchSegment = assumed(m.build.cpu ? "CPU builder launch" : "builder launch", launch);
  const buildPath: Segment[] = [launchSegment, ...pathTo(last.id)];
  // The pre-pull starts once triton_with_ft is pushed and the nodes are up; the pods wait for it too.
  const pp = sv.prePull;
  const pushed = pp ? launch + (finish.get(pp.afterStep) ?? 0) : 0;
  const prePullDone = pp ? Math.max(pushed, clusterReady) + pp.seconds : 0;
  const prePullSegment = pp ? assumed("triton_with_ft pre-pull on the nodes", pp.seconds) : undefined;
  const waitPath: Segment[] =
    prePullSegment && prePullDone > Math.max(buildDone, clusterReady)
      ? [
          ...(clusterReady > pushed
            ? clusterPath
            : [launchSegment, ...(finish.has(pp?.afterStep ?? "") ? pathTo(pp?.afterStep ?? "") : [])]),
          prePullSegment,
        ]
      : clusterReady > buildDone
        ? clusterPath
        : buildPath;
  const serve: Segment[] = [
    ...(sv.nodesWithCluster ? [] : [assumed("GPU node boot", sv.nodeBootSeconds)]),
    pp
      ? assumed("image pull, the bake's layers (triton_with_ft pre-pulled)", pp.ownLayersPullSeconds)
      : assumed("image pull", sv.pullSeconds),
    assumed("model load", sv.loadSeconds),
  ];
  const podsReady = Math.max(buildDone, clusterReady, prePullDone) + serve.reduce((a, s) => a + s.seconds, 0);
  // The NLB's Service is created once the control plane (and its controller) is up, beside the build.
  const controlPlane = stack.cluster.mode === "create" ? stack.cluster.controlPlaneSeconds : 0;
  const nlbReady = controlPlane + stack.loadBalancer.provisionSeconds;
  const registration = assumed("NLB registration", sv.nlbRegistrationSeconds);
  const criticalPath = (
    nlbReady > podsReady
      ? [assumed("EKS control plane", controlPlane), assumed("NLB provision", stack.loadBalancer.provisionSeconds)]
      : [...waitPath, ...serve]
  )
    .concat(registration)
    .filter((s) => s.seconds > 0);
  return {
    firstDeploySeconds: Math.max(podsReady, nlbReady) + registration.seconds,
    criticalPath,
    newReplicaSeconds: sv.nodeBootSeconds + sv.expectedPullSeconds + sv.loadSeconds,
  };
}

/** What timing a change needs of one model's estimate (cost.json keeps it, so `synth --diff` can compare two). */
export interface ChangeInputs {
  instanceType: string;
  steps: StepTiming[];
  /** Hash of the serving shape a rollout depends on besides the image. */
  rolloutHash: string;
  replicas: number;
  /** One pod replaced in a rolling update: pull + load + NLB registration + the old pod's preStop. */
  perPodRolloutSeconds: number;
  nodeBootSeconds: number;
  /** build.stopBuilderWhenDone: a change starts the builder first. */
  builderStopped: boolean;
}

export function changeInputs(m: ModelCostInput, builderStopped: boolean): ChangeInputs {
  const sv = m.serving;
  return {
    instanceType: m.instanceType,
    steps: m.build.steps,
    rolloutHash: sv.rolloutHash,
    replicas: m.replicas.min,
    perPodRolloutSeconds: sv.pullSeconds + sv.loadSeconds + sv.nlbRegistrationSeconds + sv.preStopSeconds,
    nodeBootSeconds: sv.nodeBootSeconds,
    builderStopped,
  };
}

/**
 * The time `pulumi up` takes to apply a change from `before` to `after` for one
 * model: the changed steps on the graph, a builder start when it was stopped,
 * and a rolling update when the image or the serving shape changed (on new
 * nodes first when the instance type changed). Without `before` (a new model)
 * every step runs.
 */
export function estimateChange(
  before: ChangeInputs | undefined,
  after: ChangeInputs,
  builderLaunch: number,
): ChangeEstimate {
  const old = new Map((before?.steps ?? []).map((s) => [s.id, s.inputHash]));
  const changed = after.steps.filter((s) => old.get(s.id) !== s.inputHash).map((s) => s.id);
  const leaves = servingInputs(after.steps);
  const { finish, pathTo } = longestPath(after.steps, (s) => (changed.includes(s.id) ? s.seconds : 0));
  const last = latestOf(finish, leaves);
  const start = changed.length && after.builderStopped ? builderLaunch : 0;
  const rollout = changed.some((id) => leaves.includes(id)) || before?.rolloutHash !== after.rolloutHash;
  const newNodes = before === undefined || before.instanceType !== after.instanceType;
  const path: Segment[] = [
    ...(start ? [{ step: "builder start", seconds: start }] : []),
    ...pathTo(last.id).filter((s) => s.seconds > 0),
    ...(rollout && newNodes ? [{ step: "GPU node boot", seconds: after.nodeBootSeconds }] : []),
    ...(rollout
      ? [{ step: `roll ${after.replicas} pod(s)`, seconds: after.replicas * after.perPodRolloutSeconds }]
      : []),
  ];
  return { seconds: path.reduce((a, s) => a + s.seconds, 0), changedSteps: changed, rollout, path };
}
