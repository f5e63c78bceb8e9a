/**
 * KEDA ScaledObject for the Triton Deployment: a Prometheus trigger on the
 * fastertransformer model's queue/compute time ratio, with the HPA behaviour
 * (scale-up steps, scale-down stabilization) from plan/autoscaling.ts.
 * Validated against KEDA's CRD (test/data/crds/keda.sh_scaledobjects.yaml).
 * Pure: plain objects, no Pulumi.
 */

/** Prometheus scrape interval of the Triton and DCGM ServiceMonitors. */
export const SCRAPE_INTERVAL_SECONDS = 15;
/** rate() window of the scaling query: four scrapes, as Prometheus advises for rate() over counters. */
export const RATE_WINDOW_SECONDS = 4 * SCRAPE_INTERVAL_SECONDS;
/** KEDA pollingInterval of the ScaledObject. */
export const KEDA_POLLING_SECONDS = 15;

/** The scaling plan plan/autoscaling.ts derives (plan.json `autoscaling`); docs/operating.md "Autoscaling and observability" documents it. */
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
}

/** The FT model: the pipeline's GPU stage and its bottleneck; the Python stages queue behind it. */
export const SCALED_MODEL = "fastertransformer";
/** Triton counters (µs, cumulative) the ratio is built from. */
export const QUEUE_METRIC = "nv_inference_queue_duration_us";
export const COMPUTE_METRIC = "nv_inference_compute_infer_duration_us";

export interface ScaledObject {
  apiVersion: "keda.sh/v1alpha1";
  kind: "ScaledObject";
  metadata: { name: string; namespace: string; labels: Record<string, string> };
  spec: {
    scaleTargetRef: { apiVersion: "apps/v1"; kind: "Deployment"; name: string };
    pollingInterval: number;
    minReplicaCount: number;
    maxReplicaCount: number;
    advanced: {
      restoreToOriginalReplicaCount: boolean;
      horizontalPodAutoscalerConfig: { name: string; behavior: { scaleUp: HpaRules; scaleDown: HpaRules } };
    };
    triggers: Array<{
      type: "prometheus";
      name: string;
      metricType: "Value" | "AverageValue";
      metadata: Record<string, string>;
    }>;
  };
}

type PrometheusTrigger = ScaledObject["spec"]["triggers"][number];

/** Bounds and HPA behaviour, whichever Deployment is scaled. */
interface ScaleBounds {
  minReplicas: number;
  maxReplicas: number;
  scaleUp: HpaRules;
  scaleDown: HpaRules;
}

/** The ScaledObject around one Prometheus trigger: the part the Triton and gateway scalers share. */
function scaledDeployment(
  i: {
    name: string;
    namespace: string;
    labels: Record<string, string>;
    deployment: string;
    pollingIntervalSeconds: number;
  },
  bounds: ScaleBounds,
  trigger: PrometheusTrigger,
): ScaledObject {
  return {
    apiVersion: "keda.sh/v1alpha1",
    kind: "ScaledObject",
    metadata: { name: i.name, namespace: i.namespace, labels: i.labels },
    spec: {
      scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: i.deployment },
      pollingInterval: i.pollingIntervalSeconds,
      minReplicaCount: bounds.minReplicas,
      maxReplicaCount: bounds.maxReplicas,
      advanced: {
        // Deleting the ScaledObject leaves the pods as they are rather than dropping to the Deployment's count mid-load.
        restoreToOriginalReplicaCount: false,
        horizontalPodAutoscalerConfig: {
          name: i.name,
          behavior: { scaleUp: bounds.scaleUp, scaleDown: bounds.scaleDown },
        },
      },
      triggers: [trigger],
    },
  };
}

/** Where the Triton metrics of this workload live in Prometheus: the labels a ServiceMonitor (or the documented scrape config) attaches. */
export interface MetricsSelector {
  namespace: string;
  /** The metrics Service's name (Prometheus `service` label). */
  service: string;
}

export function selectorText(sel: MetricsSelector, extra: Record<string, string> = {}): string {
  const labels = { namespace: sel.namespace, service: sel.service, ...extra };
  return Object.entries(labels)
    .map(([k, v]) => `${k}="${v}"`)
    .join(",");
}

/**
 * Queue time per unit of compute time across every pod over the rate window.
 * No traffic gives 0, not NaN: the divisor is clamped to 1 µs/s. Missing series
 * give an empty result on purpose (no `or vector(0)`): KEDA then reports an error
 * and the HPA keeps the current size instead of scaling down on a broken scrape.
 */
export function queueComputeRatioQuery(sel: MetricsSelector): string {
  const s = selectorText(sel, { model: SCALED_MODEL });
  const w = `${RATE_WINDOW_SECONDS}s`;
  return `sum(rate(${QUEUE_METRIC}{${s}}[${w}])) / clamp_min(sum(rate(${COMPUTE_METRIC}{${s}}[${w}])), 1)`;
}

export interface ScaledObjectInput {
  name: string;
  namespace: string;
  labels: Record<string, string>;
  deployment: string;
  selector: MetricsSelector;
  prometheusUrl: string;
  plan: AutoscalingPlan;
  pollingIntervalSeconds: number;
}

export function renderScaledObject(i: ScaledObjectInput): ScaledObject {
  return scaledDeployment(i, i.plan, {
    type: "prometheus",
    name: "queue-compute-ratio",
    // Value: desired = ceil(ready pods × ratio / target); the ratio is a
    // cluster-wide average, not a per-pod sum.
    metricType: "Value",
    metadata: {
      serverAddress: i.prometheusUrl,
      query: queueComputeRatioQuery(i.selector),
      threshold: String(i.plan.target),
      // An empty result is an error, not zero: a Prometheus that stopped scraping must not scale the model down.
      ignoreNullValues: "false",
    },
  });
}

/** The gateway's scaling plan (plan/gatewayScaling.ts derives it). */
export interface GatewayScalingPlan {
  minReplicas: number;
  maxReplicas: number;
  /** In-flight generations per gateway pod the HPA holds (KEDA AverageValue threshold). */
  inflightTarget: number;
  /** What the Triton pods can hold at max: one running batch and one queued batch each. */
  peakInflight: number;
  scaleUp: HpaRules;
  scaleDown: HpaRules;
}

/** The gateway's in-flight gauge (images/gateway/src/metrics.ts METRICS.inflight). */
export const GATEWAY_INFLIGHT_METRIC = "triton_ft_gateway_inflight_requests";

/** Generations in flight through every gateway pod. */
export function gatewayInflightQuery(sel: MetricsSelector): string {
  return `sum(${GATEWAY_INFLIGHT_METRIC}{${selectorText(sel)}})`;
}

export interface GatewayScaledObjectInput {
  name: string;
  namespace: string;
  labels: Record<string, string>;
  deployment: string;
  selector: MetricsSelector;
  prometheusUrl: string;
  plan: GatewayScalingPlan;
  pollingIntervalSeconds: number;
}

/** KEDA ScaledObject for the gateway Deployment: in-flight generations per pod (plan/gatewayScaling.ts). */
export function renderGatewayScaledObject(i: GatewayScaledObjectInput): ScaledObject {
  return scaledDeployment(i, i.plan, {
    type: "prometheus",
    name: "inflight-per-pod",
    // AverageValue: desired = ceil(total in flight / target).
    metricType: "AverageValue",
    metadata: {
      serverAddress: i.prometheusUrl,
      query: gatewayInflightQuery(i.selector),
      threshold: String(i.plan.inflightTarget),
      // Every gateway pod exports the gauge from start-up (at 0), so an empty result is a broken
      // scrape: an error, and the HPA keeps the current size instead of shrinking to the minimum.
      ignoreNullValues: "false",
    },
  });
}
