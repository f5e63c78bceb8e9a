/**
 * Scaling, the plan's side: the numbers behind `serving.autoscaling` for the
 * Triton pods (HPA behaviour through KEDA, GPU node limits for Karpenter, the
 * cold-start times they are derived from) and for the gateway pods (a second
 * ScaledObject on the generations in flight through them), and the input the
 * scaling renderer takes. Pure: no Pulumi, no Kubernetes objects;
 * render/scaling.ts and render/karpenter.ts only copy these numbers.
 * README "How the scaling numbers are derived" and "The gateway scales too"
 * document every formula; keep them in step.
 *
 * Why the gateway scales on in-flight requests and not CPU: a gateway pod
 * spends a generation waiting on Triton's stream, so its CPU stays low while
 * its admission cap (limits.maxInflight, answered with 429 beyond) is what
 * runs out. KEDA is already there for Triton, and the in-flight gauge is in
 * Prometheus, so the gateway needs no metrics-server (EKS does not install one).
 */
import type { ConfigProblem } from "../config";
import { DEFAULT_IDLE_MINUTES, type AutoscalingConfig } from "../config/autoscaling";
import type { GpuInstance } from "../catalog/gpus";
import { FAST_PULL_BYTES_PER_SECOND, NLB_TARGET_REGISTRATION_SECONDS, NODE_BOOT_SECONDS } from "../catalog/timings";

import type { ResolvedStack } from "../config/stack";
import { planWorkload, type WorkloadPlan } from "./workload";

import { RATE_WINDOW_SECONDS, SCRAPE_INTERVAL_SECONDS, KEDA_POLLING_SECONDS } from "../conventions/metrics";
// --- The Triton pods (plan.json `autoscaling`) ---

export interface HpaPolicy {
  type: "Pods" | "Percent";
  value: number;
  periodSeconds: number;
}
export interface HpaRules {
  stabilizationWindowSeconds: number;
  selectPolicy: "Max" | "Min";
  policies: HpaPolicy[];
}

export interface NodeLimits {
  nodes: number;
  cpu: number;
  memoryGiB: number;
  gpus: number;
}

export interface AutoscalingPlan {
  minReplicas: number;
  maxReplicas: number;
  /** Queue/compute ratio the HPA holds (KEDA threshold, metricType Value). */
  target: number;
  podsPerNode: number;
  /** NodePool limits: room for maxReplicas plus the rolling update's surge pod. */
  nodeLimits: NodeLimits;
  /** From sustained queueing to the HPA raising replicas: rate window + scrape + KEDA poll + HPA sync + stabilization. */
  detectionSeconds: number;
  nodeBootSeconds: number;
  /** Expected time for a pod on a new node to serve: node boot + pull + load. */
  coldStartSeconds: number;
  /** Worst case the probes allow: node boot + pull + startup budget. */
  coldStartBudgetSeconds: number;
  /** Expected pull with FastImagePull when enabled, else the serial pull. */
  expectedPullSeconds: number;
  /** Expected cold start with that pull: node boot + expected pull + load. */
  expectedColdStartSeconds: number;
  /** Load rises -> added capacity takes traffic: detection + cold start + NLB registration. */
  scaleUpLatencySeconds: number;
  scaleUp: HpaRules;
  scaleDown: HpaRules;
  /** Replica counts after each scale-up period at sustained overload, from min to max. */
  scaleUpSchedule: number[];
  /** Karpenter keeps an emptied node this long: a pod that returns within it skips boot and pull. */
  consolidateAfterSeconds: number;
  /** With min 0: how the model goes to sleep and wakes (render/scaling.ts, the gateway's `wake` block, the cost estimate). */
  sleep?: SleepPlan;
}

/**
 * A model that sleeps (serving.autoscaling.min 0): KEDA takes it to 0 pods
 * after the idle window, Karpenter then removes its empty GPU nodes, and the
 * gateway holds its requests while it wakes.
 */
export interface SleepPlan {
  /** KEDA cooldownPeriod: serving.autoscaling.idleMinutes in seconds. */
  idleSeconds: number;
  /** First held request to KEDA setting the Deployment to 1: the gauge's scrape, then a KEDA poll. */
  activationSeconds: number;
  /** Expected first held request to a serving pod: activation + node boot + expected pull + load. */
  wakeSeconds: number;
  /** The estimate's long end: the serial pull instead of FastImagePull's (the rate the budgets keep). */
  wakeHighSeconds: number;
  /** A held request waits this long, then gets 503 model_unavailable (the gateway's wake.activationTimeoutSeconds). */
  activationTimeoutSeconds: number;
}

/** What the scaling plan needs from the workload plan (WorkloadPlan has these fields). */
export interface PodTiming {
  podsPerNode: number;
  /** Server image: triton_with_ft base + fp16 weights. */
  imageBytes: number;
  /** Image pull on a fresh node (image bytes ÷ pull rate). */
  pullSeconds: number;
  /** Expected model load (weights ÷ read rate + fixed start). */
  loadSeconds: number;
  /** startupProbe budget (a multiple of loadSeconds). */
  startupBudgetSeconds: number;
  /** Pod termination: preStop + Triton's drain + shutdown. */
  terminationGracePeriodSeconds: number;
}

/** HPA v2 API bounds (autoscaling/v2 HPAScalingRules validation). */
export const HPA_MAX_STABILIZATION_SECONDS = 3600;
export const HPA_MAX_PERIOD_SECONDS = 1800;

/** The HPA controller syncs every 15 s (kube-controller-manager default). */
export const HPA_SYNC_SECONDS = 15;
/** Queueing must last this long before pods are added, so one burst does not start a GPU node. */
export const SCALE_UP_STABILIZATION_SECONDS = 60;

/** Node boot and FastImagePull rates: catalog/timings.ts, shared with the budgets and the cost estimate. */
export { FAST_PULL_BYTES_PER_SECOND, NODE_BOOT_SECONDS } from "../catalog/timings";

export class AutoscalingPlanError extends Error {
  constructor(
    readonly key: string,
    readonly value: unknown,
    message: string,
    readonly fix: string,
  ) {
    super(message);
    this.name = "AutoscalingPlanError";
  }
}

/** Replica counts at the end of each scale-up period: at most doubling, at least one node's worth of pods. */
export function scaleUpSchedule(min: number, max: number, podsPerNode: number): number[] {
  const steps = [min];
  let current = min;
  while (current < max) {
    current = Math.min(max, current + Math.max(podsPerNode, current));
    steps.push(current);
  }
  return steps;
}

/** GPU nodes (and their CPU, memory, GPUs) the NodePool may hold: max replicas plus one surge pod. */
export function nodeLimits(maxReplicas: number, podsPerNode: number, instance: GpuInstance): NodeLimits {
  const nodes = Math.ceil((maxReplicas + 1) / podsPerNode);
  return { nodes, cpu: nodes * instance.vcpus, memoryGiB: nodes * instance.ramGiB, gpus: nodes * instance.gpuCount };
}

export function planAutoscaling(a: AutoscalingConfig, instance: GpuInstance, pod: PodTiming): AutoscalingPlan {
  if (a.min > a.max) {
    throw new AutoscalingPlanError(
      "serving.autoscaling.max",
      a.max,
      `is below serving.autoscaling.min (${a.min})`,
      `raise max to at least ${a.min}`,
    );
  }
  const nodeBootSeconds = NODE_BOOT_SECONDS[instance.gpuModel];
  const coldStartSeconds = nodeBootSeconds + pod.pullSeconds + pod.loadSeconds;
  const coldStartBudgetSeconds = nodeBootSeconds + pod.pullSeconds + pod.startupBudgetSeconds;
  const expectedPullSeconds = a.fastImagePull
    ? Math.ceil(pod.imageBytes / FAST_PULL_BYTES_PER_SECOND)
    : pod.pullSeconds;
  const detectionSeconds =
    RATE_WINDOW_SECONDS +
    SCRAPE_INTERVAL_SECONDS +
    KEDA_POLLING_SECONDS +
    HPA_SYNC_SECONDS +
    SCALE_UP_STABILIZATION_SECONDS;

  // Scale-down waits out the worst-case cold start plus the NLB registration: load
  // must stay low for longer than it would take to get the pod back, so a model
  // is never unloaded only to be loaded again minutes later.
  const scaleDownWindow = roundUpToMinute(coldStartBudgetSeconds + NLB_TARGET_REGISTRATION_SECONDS);
  if (scaleDownWindow > HPA_MAX_STABILIZATION_SECONDS) {
    throw new AutoscalingPlanError(
      "serving.autoscaling",
      { min: a.min, max: a.max },
      `a pod's worst-case cold start (${coldStartBudgetSeconds} s: node boot ${nodeBootSeconds} + pull ${pod.pullSeconds} + startup budget ${pod.startupBudgetSeconds}, plus NLB registration) exceeds the HPA's ${HPA_MAX_STABILIZATION_SECONDS} s stabilization cap, so scale-down could unload the model before a replacement would be back`,
      "use a fixed size (serving.replicas) for this model, or a larger tensorParallel so each pod loads less",
    );
  }
  // One scale-up period is the time added pods need to show in the metric: before
  // then the ratio still reflects the old capacity, and acting on it again overshoots.
  const scaleUpPeriod = Math.min(HPA_MAX_PERIOD_SECONDS, roundUpToMinute(coldStartSeconds));
  const scaleDownPeriod = Math.min(HPA_MAX_PERIOD_SECONDS, Math.max(60, pod.terminationGracePeriodSeconds));

  return {
    minReplicas: a.min,
    maxReplicas: a.max,
    target: a.target,
    podsPerNode: pod.podsPerNode,
    nodeLimits: nodeLimits(a.max, pod.podsPerNode, instance),
    detectionSeconds,
    nodeBootSeconds,
    coldStartSeconds,
    coldStartBudgetSeconds,
    expectedPullSeconds,
    expectedColdStartSeconds: nodeBootSeconds + expectedPullSeconds + pod.loadSeconds,
    scaleUpLatencySeconds: detectionSeconds + coldStartSeconds + NLB_TARGET_REGISTRATION_SECONDS,
    scaleUp: {
      stabilizationWindowSeconds: SCALE_UP_STABILIZATION_SECONDS,
      selectPolicy: "Max",
      // Double per period, or one node's worth of pods when that is more.
      policies: [
        { type: "Percent", value: 100, periodSeconds: scaleUpPeriod },
        { type: "Pods", value: pod.podsPerNode, periodSeconds: scaleUpPeriod },
      ],
    },
    scaleDown: {
      stabilizationWindowSeconds: scaleDownWindow,
      selectPolicy: "Min",
      // One node's worth of pods at a time, each drained before the next goes.
      policies: [{ type: "Pods", value: pod.podsPerNode, periodSeconds: scaleDownPeriod }],
    },
    scaleUpSchedule: scaleUpSchedule(a.min, a.max, pod.podsPerNode),
    consolidateAfterSeconds: roundUpToMinute(pod.pullSeconds),
    ...(a.min === 0
      ? { sleep: planSleep(a, nodeBootSeconds + expectedPullSeconds + pod.loadSeconds, coldStartSeconds) }
      : {}),
  };
}

/** A held request is seen by the next scrape of the gateway's gauge, then by KEDA's next poll. */
export const ACTIVATION_SECONDS = SCRAPE_INTERVAL_SECONDS + KEDA_POLLING_SECONDS;

/**
 * The sleep plan of a model with min 0. `coldStartSeconds` is node boot +
 * pull + load with FastImagePull's expected pull, `serialColdStartSeconds`
 * with the serial pull. The activation timeout defaults to the long end, to
 * the minute: a wake that goes as the estimate says answers every held request.
 */
export function planSleep(a: AutoscalingConfig, coldStartSeconds: number, serialColdStartSeconds: number): SleepPlan {
  const wakeHighSeconds = ACTIVATION_SECONDS + serialColdStartSeconds;
  return {
    idleSeconds: (a.idleMinutes ?? DEFAULT_IDLE_MINUTES) * 60,
    activationSeconds: ACTIVATION_SECONDS,
    wakeSeconds: ACTIVATION_SECONDS + coldStartSeconds,
    wakeHighSeconds,
    activationTimeoutSeconds: a.activationTimeoutSeconds ?? roundUpToMinute(wakeHighSeconds),
  };
}

/**
 * A model that sleeps, with an activation timeout below the expected wake:
 * every request that wakes it would get the 503 before the model could answer.
 */
export function sleepPlanProblem(plan: AutoscalingPlan | undefined): ConfigProblem | undefined {
  const z = plan?.sleep;
  if (!z || z.activationTimeoutSeconds >= z.wakeSeconds) return undefined;
  return {
    key: "serving.autoscaling.activationTimeoutSeconds",
    value: z.activationTimeoutSeconds,
    message: `is below the model's expected wake from 0 (${z.wakeSeconds} s: activation, node boot, image pull, model load), so every request that wakes it gets a 503 before it could be served`,
    fix: `raise it to at least ${roundUpToMinute(z.wakeHighSeconds)} (the estimate's long end), or leave it unset`,
  };
}

export function roundUpToMinute(seconds: number): number {
  return Math.ceil(seconds / 60) * 60;
}

// --- The gateway pods ---

/** The gateway's scaling plan (planGatewayScaling derives it; plan.json leaves it out, render/scaling.ts renders it). */
export interface GatewayScalingPlan {
  minReplicas: number;
  maxReplicas: number;
  /** In-flight generations per gateway pod the HPA holds (KEDA AverageValue threshold). */
  inflightTarget: number;
  /** What every model's Triton pods can hold at max: one running batch and one queued batch each. */
  peakInflight: number;
  scaleUp: HpaRules;
  scaleDown: HpaRules;
}

export interface GatewayScalingInput {
  /** serving.gatewayReplicas: the floor. */
  replicas: number;
  /**
   * Every model the gateway feeds: its serving.maxBatchSize (one Triton pod runs one batch of this size
   * at a time) and the fewest and most Triton pods it can have (serving.autoscaling's min and max, or
   * its fixed replicas for both).
   */
  models: ReadonlyArray<{ maxBatchSize: number; minReplicas: number; maxReplicas: number }>;
}

/** A gateway pod is up in seconds (small Node.js image on the system nodes): act within one HPA sync. */
export const GATEWAY_SCALE_UP_PERIOD_SECONDS = 30;
/** The HPA's default scale-down window: a dip shorter than five minutes keeps its pods. */
export const GATEWAY_SCALE_DOWN_WINDOW_SECONDS = 300;
export const GATEWAY_SCALE_DOWN_PERIOD_SECONDS = 60;

export function planGatewayScaling(i: GatewayScalingInput): GatewayScalingPlan {
  // Two batches (one running, one queued) per Triton pod, summed over every model: what the Triton pods
  // hold at their floor and at their most.
  const hold = (pods: (m: GatewayScalingInput["models"][number]) => number) =>
    i.models.reduce((sum, m) => sum + 2 * m.maxBatchSize * pods(m), 0);
  // Half of what the floor holds, per pod: a pod at target absorbs a doubling of its share before the
  // Triton pods at their floor are full, while the HPA adds pods.
  const inflightTarget = Math.max(1, Math.ceil(hold((m) => m.minReplicas) / 2));
  const peakInflight = hold((m) => m.maxReplicas);
  return {
    minReplicas: i.replicas,
    maxReplicas: Math.max(i.replicas, Math.ceil(peakInflight / inflightTarget)),
    inflightTarget,
    peakInflight,
    scaleUp: {
      stabilizationWindowSeconds: 0,
      selectPolicy: "Max",
      policies: [
        { type: "Percent", value: 100, periodSeconds: GATEWAY_SCALE_UP_PERIOD_SECONDS },
        { type: "Pods", value: 2, periodSeconds: GATEWAY_SCALE_UP_PERIOD_SECONDS },
      ],
    },
    scaleDown: {
      stabilizationWindowSeconds: GATEWAY_SCALE_DOWN_WINDOW_SECONDS,
      selectPolicy: "Min",
      // A leaving pod finishes its generations (its grace period covers the request timeout).
      policies: [{ type: "Pods", value: 1, periodSeconds: GATEWAY_SCALE_DOWN_PERIOD_SECONDS }],
    },
  };
}

// --- The stack's scaling ---

/** The scaling plan of a stack with `serving.autoscaling`, undefined for a fixed size. */
export function stackAutoscalingPlan(
  s: ResolvedStack,
  workload: WorkloadPlan = planWorkload(s),
): AutoscalingPlan | undefined {
  const a = s.config.serving.autoscaling;
  return a ? planAutoscaling(a, s.servingInstance, workload) : undefined;
}

/** The problem (key without the project prefix) that keeps the stack from autoscaling, if any. */
export function autoscalingPlanProblem(s: ResolvedStack): ConfigProblem | undefined {
  try {
    return sleepPlanProblem(stackAutoscalingPlan(s));
  } catch (error) {
    if (error instanceof AutoscalingPlanError)
      return { key: error.key, value: error.value, message: error.message, fix: error.fix };
    // Any other failure is the workload plan's own, reported by its renderer.
    return undefined;
  }
}
