/**
 * Scaling, the renderers' side: everything `serving.autoscaling` and
 * observability add to a stack's Kubernetes side, rendered from the plan's
 * scaling input (resolve/scaling.ts): the KEDA ScaledObjects (Triton's on the
 * fastertransformer model's queue/compute time ratio, the gateway's on
 * in-flight generations, with the HPA behaviour the plan derives; validated
 * against KEDA's CRD, test/data/crds/keda.sh_scaledobjects.yaml), the
 * Karpenter NodePool/EC2NodeClass, the DCGM exporter, the Grafana dashboard,
 * and the ServiceMonitors (DCGM, gateway) + PrometheusRule (with
 * serving.serviceMonitor, i.e. when the Prometheus Operator is present) or an
 * equivalent plain Prometheus scrape config and rule file (when the cluster
 * brings its own Prometheus).
 * Pure: no Pulumi. Cluster references default to synth placeholders.
 */
import { stringify } from "yaml";
import { STACK_PROMETHEUS_URL } from "../config/autoscaling";
import { USABLE_GPU_FRACTION } from "../model/sizing";
import type { AutoscalingPlan, GatewayScalingPlan, HpaRules } from "../resolve/scaling";
import {
  gatewayInflightQuery,
  modelInUseQuery,
  queueComputeRatioQuery,
  vllmQueueRunningRatioQuery,
  type MetricsSelector,
} from "./prometheus";
import type { Engine } from "../model/types";
import { dashboardConfigMap, renderDashboard, type GrafanaDashboard } from "./dashboard";
import { recommendedLabels } from "./tritonManifests";
import { GATEWAY_COMPONENT, gatewaySelector } from "./gatewayManifests";
import { renderEC2NodeClass, renderNodePool, type EC2NodeClass, type NodeClassRefs, type NodePool } from "./karpenter";
import {
  dcgmModelRelabeling,
  renderDcgmExporter,
  renderPrometheusRule,
  type DcgmExporter,
  type GpuPricing,
  type ModelObservability,
  type ObservabilityInput,
  type PrometheusRule,
} from "./observability";
import { serviceMonitor, type ServiceMonitor } from "./serviceMonitor";
import { GPU_TAINT, INSTANCE_TYPE_LABEL } from "./scheduling";
import type { IConfigMap } from "kubernetes-models/v1/ConfigMap";

import { workloadName, gatewayName } from "../conventions/workload";
import { KEDA_POLLING_SECONDS, SCRAPE_INTERVAL_SECONDS } from "../conventions/metrics";
import type { ScalingInput, WorkloadInput } from "../plan/types";
/** Label every Karpenter GPU node carries (same key as the managed node group's, cloud/eks.ts GPU_NODE_LABEL). */
export const GPU_NODE_LABELS = { "nvidia.com/gpu.present": "true" } as const;

/** Placeholders synth writes where the cluster's real references go; pulumi up substitutes Outputs. */
export const SYNTH_REFS: NodeClassRefs = {
  role: "<node-role-name>",
  subnetIds: ["subnet-00000000000000000"],
  securityGroupIds: ["sg-00000000000000000"],
  tags: {},
};

// --- KEDA ScaledObjects ---

export interface ScaledObject {
  apiVersion: "keda.sh/v1alpha1";
  kind: "ScaledObject";
  metadata: { name: string; namespace: string; labels: Record<string, string> };
  spec: {
    scaleTargetRef: { apiVersion: "apps/v1"; kind: "Deployment"; name: string };
    pollingInterval: number;
    /** A model that sleeps: idle seconds before KEDA takes it from 1 pod to 0. */
    cooldownPeriod?: number;
    /** A model that sleeps: after the ScaledObject is created it stays up this long before it may sleep. */
    initialCooldownPeriod?: number;
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

/** A ScaledObject for one Deployment; Triton's and the gateway's differ only in their plan. */
export interface ScaledObjectInput<Plan = AutoscalingPlan> {
  name: string;
  namespace: string;
  labels: Record<string, string>;
  deployment: string;
  selector: MetricsSelector;
  /**
   * The backend of the scaled model: its queue is FT's in Triton or vLLM's own.
   * @default "ft"
   */
  engine?: Engine;
  prometheusUrl: string;
  plan: Plan;
  pollingIntervalSeconds: number;
}

/** The trigger that wakes a model that sleeps: its name in the ScaledObject. */
export const WAKE_TRIGGER = "in-use";

/**
 * Triton's ScaledObject for model `model` (its id, the gateway's `model` label): the queue/compute
 * ratio from one pod up and, for a model that sleeps (plan.sleep), the in-use trigger that wakes it
 * from 0 on a held request and keeps it up while it has traffic (render/prometheus.ts
 * modelInUseQuery), with the idle window as KEDA's cooldown.
 */
export function renderScaledObject(i: ScaledObjectInput, model: string): ScaledObject {
  const so = scaledDeployment(i, i.plan, {
    type: "prometheus",
    name: "queue-compute-ratio",
    // Value: desired = ceil(ready pods × ratio / target); the ratio is a
    // cluster-wide average, not a per-pod sum.
    metricType: "Value",
    metadata: {
      serverAddress: i.prometheusUrl,
      // vLLM queues inside the model (Triton's queue time stays near 0): its scheduler's
      // waiting over running requests is the same ratio (render/prometheus.ts).
      query: i.engine === "vllm" ? vllmQueueRunningRatioQuery(i.selector) : queueComputeRatioQuery(i.selector),
      threshold: String(i.plan.target),
      // An empty result is an error, not zero: a Prometheus that stopped scraping must not scale the model down.
      ignoreNullValues: "false",
    },
  });
  const sleep = i.plan.sleep;
  if (!sleep) return so;
  so.spec.cooldownPeriod = sleep.idleSeconds;
  // A first deploy (or a re-created ScaledObject) leaves the model up for one idle window, not straight to sleep.
  so.spec.initialCooldownPeriod = sleep.idleSeconds;
  so.spec.triggers.push({
    type: "prometheus",
    name: WAKE_TRIGGER,
    metricType: "AverageValue",
    metadata: {
      serverAddress: i.prometheusUrl,
      query: modelInUseQuery(i.namespace, model),
      // The query is 0 or 1: one pod at most from this trigger, and any held request activates from 0.
      threshold: "1",
      activationThreshold: "0",
      ignoreNullValues: "false",
    },
  });
  return so;
}

export type GatewayScaledObjectInput = ScaledObjectInput<GatewayScalingPlan>;

/** KEDA ScaledObject for the gateway Deployment: in-flight generations per pod (resolve/scaling.ts planGatewayScaling). */
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

// --- The stack's scaling objects ---

/** One model's own scaling objects: its ScaledObject and its Karpenter EC2NodeClass and NodePool (autoscaled only). */
export interface ModelScalingManifests {
  autoscaling?: AutoscalingPlan;
  scaledObject?: ScaledObject;
  nodePool?: NodePool;
  ec2NodeClass?: EC2NodeClass;
}

/** One model's scaling input as the plan built it, plus what only the roots know. */
export interface ScalingRenderInput extends ScalingInput {
  /** The cluster's node role, subnets and security groups (the component resolves them); synth renders SYNTH_REFS. */
  refs?: NodeClassRefs;
  /** The serving instance's price (infra/cost), for the dashboard's live cost panels; none when the table has none. */
  pricing?: GpuPricing;
}

/** What the stack's shared scaling and observability objects are rendered from. */
export interface SharedScalingInput {
  /** Every model's scaling input, in the stack's order (the first model's workload names the shared objects). */
  models: readonly ScalingRenderInput[];
  /** The gateway's scaling plan when any model autoscales (plan/gateway.ts): its ScaledObject is rendered. */
  gateway?: GatewayScalingPlan;
  /** The gateway has a shared store (serving.store): its alert and dashboard panel are rendered. */
  sharedStore: boolean;
}

/** What the stack shares: DCGM on every GPU node, the dashboard and alerts (a row and group per model), the gateway's monitor and scaler. */
export interface SharedScalingManifests {
  gatewayScaling?: GatewayScalingPlan;
  gatewayScaledObject?: ScaledObject;
  /** The gateway's metrics Service, scraped like Triton's (TTFT, tokens/s, latency percentiles, in flight). */
  gatewayServiceMonitor: ServiceMonitor;
  dcgm: DcgmExporter;
  dashboard: GrafanaDashboard;
  dashboardConfigMap: IConfigMap;
  prometheusRule: PrometheusRule;
  /** ServiceMonitor and PrometheusRule are applied only when the Prometheus Operator is present. */
  operatorPresent: boolean;
}

/** A stack's scaling objects: what it shares, and each model's own in the stack's order. */
export interface StackScalingManifests {
  shared: SharedScalingManifests;
  models: ModelScalingManifests[];
}

/** The gateway's metrics Service (render/gatewayManifests.ts metricsService): where its series live in Prometheus. */
export function gatewayMetrics(w: Pick<WorkloadInput, "modelName" | "namespace">): MetricsSelector {
  return { namespace: w.namespace, service: `${gatewayName(w)}-metrics` };
}

/** Labels that select the gateway's metrics Service (its pod selector plus the Service's own component). */
export function gatewayMetricsSelector(w: Pick<WorkloadInput, "modelName" | "stackName">): Record<string, string> {
  return { ...gatewaySelector(w), "app.kubernetes.io/component": `${GATEWAY_COMPONENT}-metrics` };
}

/** One model's share of the observability: its Triton series, Deployment, instance type and start budget. */
export function modelObservability(i: ScalingRenderInput): ModelObservability {
  const w = i.workload;
  const name = workloadName(w);
  const plan = i.autoscaling?.plan;
  return {
    id: w.modelName,
    triton: { namespace: w.namespace, service: `${name}-metrics` },
    engine: w.engine,
    deployment: name,
    instanceType: w.instanceType,
    podStartBudgetSeconds: plan
      ? plan.coldStartBudgetSeconds
      : w.workload.pullSeconds + w.workload.startupBudgetSeconds,
    ...(plan ? { autoscaling: plan } : {}),
    ...(i.pricing ? { pricing: i.pricing } : {}),
    ...(i.canary ? { canary: { ...i.canary } } : {}),
  };
}

/**
 * What the DCGM exporter, dashboard and alerts are rendered from: the first
 * model's workload names them (a one-model stack keeps its names); in a stack
 * of several they cover every model, a row and an alert group each.
 */
export function observabilityInput(input: SharedScalingInput): ObservabilityInput {
  const first = input.models[0];
  if (!first) throw new Error("observability needs at least one model");
  const w = first.workload;
  const own = modelObservability(first);
  const nodeLabelKey = w.modelNodeLabel?.key;
  return {
    namespace: w.namespace,
    name: own.deployment,
    labels: recommendedLabels(w),
    triton: own.triton,
    engine: own.engine,
    gateway: gatewayMetrics(w),
    gatewayDeployment: gatewayName(w),
    deployment: own.deployment,
    instanceType: own.instanceType,
    gpuTaint: { key: GPU_TAINT.key, effect: GPU_TAINT.effect },
    instanceTypeLabel: INSTANCE_TYPE_LABEL,
    gpuMemoryAlertFraction: USABLE_GPU_FRACTION,
    podStartBudgetSeconds: own.podStartBudgetSeconds,
    autoscaling: own.autoscaling,
    sharedStore: input.sharedStore,
    ...(own.pricing ? { pricing: own.pricing } : {}),
    ...(input.models.length > 1 && nodeLabelKey
      ? { models: { list: input.models.map(modelObservability), nodeLabelKey } }
      : {}),
  };
}

/** The Prometheus the stack's scalers query: the first autoscaled model's prometheusUrl, else the stack's own. */
function scalerPrometheusUrl(models: readonly ScalingRenderInput[]): string {
  return (
    models.find((m) => m.autoscaling?.config.prometheusUrl)?.autoscaling?.config.prometheusUrl ?? STACK_PROMETHEUS_URL
  );
}

/**
 * The shared scaling input of a stack: every model's input, in the stack's order, beside its gateway's
 * scaling plan (when a model autoscales) and whether it has a shared store. `gateway` is the stack
 * plan's gateway plan (plan/gateway.ts); the composition roots and the tests build the input here only.
 */
export function sharedScalingInput(
  gateway: { readonly scaling?: GatewayScalingPlan; readonly store?: object },
  models: readonly ScalingRenderInput[],
): SharedScalingInput {
  return { models, ...(gateway.scaling ? { gateway: gateway.scaling } : {}), sharedStore: gateway.store !== undefined };
}

/** A stack's scaling objects: the shared ones once, each model's own. One model: exactly its own and the shared. */
export function renderStackScaling(input: SharedScalingInput): StackScalingManifests {
  return { shared: renderSharedScaling(input), models: input.models.map(renderModelScaling) };
}

/** What the stack shares: DCGM exporter, dashboard, alerts, the gateway's ServiceMonitor and (autoscaled) ScaledObject. */
export function renderSharedScaling(input: SharedScalingInput): SharedScalingManifests {
  const first = input.models[0];
  if (!first) throw new Error("shared scaling needs at least one model");
  const obs = observabilityInput(input);
  const dashboard = renderDashboard(obs);
  const out: SharedScalingManifests = {
    dcgm: renderDcgmExporter(obs),
    dashboard,
    dashboardConfigMap: dashboardConfigMap(obs, dashboard),
    prometheusRule: renderPrometheusRule(obs),
    gatewayServiceMonitor: serviceMonitor(
      gatewayName(first.workload),
      obs.namespace,
      { ...recommendedLabels(first.workload, GATEWAY_COMPONENT), "app.kubernetes.io/component": "gateway-metrics" },
      gatewayMetricsSelector(first.workload),
    ),
    operatorPresent: first.workload.serviceMonitor,
  };
  if (input.gateway) {
    out.gatewayScaling = input.gateway;
    out.gatewayScaledObject = renderGatewayScaledObject({
      name: obs.gatewayDeployment,
      namespace: obs.namespace,
      labels: { ...recommendedLabels(first.workload, GATEWAY_COMPONENT), "app.kubernetes.io/component": "autoscaler" },
      deployment: obs.gatewayDeployment,
      selector: obs.gateway,
      prometheusUrl: scalerPrometheusUrl(input.models),
      plan: input.gateway,
      pollingIntervalSeconds: KEDA_POLLING_SECONDS,
    });
  }
  return out;
}

/** One model's own scaling objects: with serving.autoscaling, its ScaledObject, EC2NodeClass and NodePool. */
export function renderModelScaling(input: ScalingRenderInput): ModelScalingManifests {
  const a = input.autoscaling;
  if (!a) return {};
  const own = modelObservability(input);
  const w = input.workload;
  const labels = recommendedLabels(w);
  const k = {
    name: `${own.deployment}-gpu`.slice(0, 63),
    labels: { ...labels, "app.kubernetes.io/component": "gpu-nodes" },
    instance: input.instance,
    plan: a.plan,
    capacityType: a.config.capacityType,
    capacityReservationIds: a.config.capacityReservationIds,
    fastImagePull: a.config.fastImagePull,
    rootVolumeGiB: input.nodeDiskGiB,
    taint: { ...GPU_TAINT },
    nodeLabels: {
      ...GPU_NODE_LABELS,
      ...(w.modelNodeLabel ? { [w.modelNodeLabel.key]: w.modelNodeLabel.value } : {}),
    },
    refs: input.refs ?? SYNTH_REFS,
  };
  return {
    autoscaling: a.plan,
    scaledObject: renderScaledObject(
      {
        name: own.deployment,
        namespace: w.namespace,
        labels: { ...labels, "app.kubernetes.io/component": "autoscaler" },
        deployment: own.deployment,
        selector: own.triton,
        engine: own.engine,
        prometheusUrl: a.config.prometheusUrl ?? STACK_PROMETHEUS_URL,
        plan: a.plan,
        pollingIntervalSeconds: KEDA_POLLING_SECONDS,
      },
      w.modelName,
    ),
    nodePool: renderNodePool(k),
    ec2NodeClass: renderEC2NodeClass(k),
  };
}

/** A Triton workload as the scrape config and synth's files know it. */
type ScrapedWorkload = Pick<WorkloadInput, "modelName" | "namespace" | "modelNodeLabel">;

/**
 * Plain Prometheus configuration for a cluster without the Operator: the scrape
 * jobs that give Triton and DCGM metrics the same labels the ServiceMonitors do
 * (namespace, service, pod; in a stack of several models, the GPU node's model
 * on the DCGM series), so the scaler query, alerts and dashboard work unchanged.
 * `workloads`: every model's Triton workload, the first first.
 */
export function scrapeConfig(workloads: readonly ScrapedWorkload[]): Record<string, unknown> {
  const w = workloads[0];
  if (!w) throw new Error("a scrape config needs at least one workload");
  const name = workloadName(w);
  const ns = w.namespace;
  const nodeLabel = workloads.length > 1 ? w.modelNodeLabel?.key : undefined;
  const job = (service: string, modelFromNode?: string) => ({
    job_name: `${ns}/${service}`,
    scrape_interval: `${SCRAPE_INTERVAL_SECONDS}s`,
    scrape_timeout: `${SCRAPE_INTERVAL_SECONDS - 5}s`,
    metrics_path: "/metrics",
    kubernetes_sd_configs: [
      {
        role: "endpoints",
        namespaces: { names: [ns] },
        ...(modelFromNode ? { attach_metadata: { node: true } } : {}),
      },
    ],
    relabel_configs: [
      { source_labels: ["__meta_kubernetes_service_name"], regex: service, action: "keep" },
      { source_labels: ["__meta_kubernetes_endpoint_port_name"], regex: "metrics", action: "keep" },
      { source_labels: ["__meta_kubernetes_namespace"], target_label: "namespace" },
      { source_labels: ["__meta_kubernetes_service_name"], target_label: "service" },
      { source_labels: ["__meta_kubernetes_pod_name"], target_label: "pod" },
      // The same relabeling as the DCGM ServiceMonitor's.
      ...(modelFromNode
        ? [dcgmModelRelabeling(modelFromNode)].map((r) => ({
            source_labels: r.sourceLabels,
            target_label: r.targetLabel,
          }))
        : []),
    ],
  });
  return {
    scrape_configs: [
      ...workloads.map((m) => job(`${workloadName(m)}-metrics`)),
      job(gatewayMetrics(w).service),
      job(`${name}-dcgm-exporter`, nodeLabel),
    ],
  };
}

const YAML_OPTIONS = { aliasDuplicateObjects: false } as const;

/**
 * synth files: `k8s/7x-8x-*.yaml` (applied objects), `dashboards/`, `prometheus/` (own-Prometheus config)
 * of a one-model stack, where the shared and the model's own files sit side by side.
 * `workloads`: every model's Triton workload (the first first), whose metrics the scrape config collects.
 */
export function scalingFiles(m: StackScalingManifests, workloads: readonly ScrapedWorkload[]): Record<string, string> {
  const own = m.models[0];
  return { ...sharedScalingFiles(m.shared, workloads), ...(own ? modelScalingFiles(own) : {}) };
}

/** The files of one model's own scaling objects: its ScaledObject, EC2NodeClass and NodePool. */
export function modelScalingFiles(m: ModelScalingManifests): Record<string, string> {
  const files: Record<string, string> = {};
  if (m.scaledObject) files["k8s/80-scaledobject.yaml"] = stringify(m.scaledObject, YAML_OPTIONS);
  if (m.ec2NodeClass) files["k8s/81-ec2nodeclass.yaml"] = stringify(m.ec2NodeClass, YAML_OPTIONS);
  if (m.nodePool) files["k8s/82-nodepool.yaml"] = stringify(m.nodePool, YAML_OPTIONS);
  return files;
}

/** The files of what the stack shares: DCGM, dashboard, alerts, the gateway's monitor and scaler. */
export function sharedScalingFiles(
  m: SharedScalingManifests,
  workloads: readonly ScrapedWorkload[],
): Record<string, string> {
  const w = workloads[0];
  if (!w) throw new Error("scaling files need at least one workload");
  const files: Record<string, string> = {
    "k8s/70-dcgm-exporter.yaml": [m.dcgm.configMap, m.dcgm.daemonSet, m.dcgm.service, m.dcgm.networkPolicy]
      .map((o) => stringify(o, YAML_OPTIONS))
      .join("---\n"),
    "k8s/72-dashboard-configmap.yaml": stringify(m.dashboardConfigMap, YAML_OPTIONS),
    [`dashboards/${workloadName(w)}.json`]: JSON.stringify(m.dashboard, null, 2) + "\n",
  };
  if (m.operatorPresent) {
    files["k8s/71-dcgm-servicemonitor.yaml"] = stringify(m.dcgm.serviceMonitor, YAML_OPTIONS);
    files["k8s/71-gateway-servicemonitor.yaml"] = stringify(m.gatewayServiceMonitor, YAML_OPTIONS);
    files["k8s/73-prometheusrule.yaml"] = stringify(m.prometheusRule, YAML_OPTIONS);
  } else {
    files["prometheus/scrape-config.yaml"] = stringify(scrapeConfig(workloads), YAML_OPTIONS);
    files["prometheus/rules.yaml"] = stringify({ groups: m.prometheusRule.spec.groups }, YAML_OPTIONS);
  }
  if (m.gatewayScaledObject) files["k8s/80-gateway-scaledobject.yaml"] = stringify(m.gatewayScaledObject, YAML_OPTIONS);
  return files;
}

type CrdObject = ScaledObject | NodePool | EC2NodeClass | ServiceMonitor | PrometheusRule;

/** The CRD-based objects (validated against the vendored CRDs; applied as CustomResources): the shared ones, then each model's. */
export function crdObjects(m: StackScalingManifests): CrdObject[] {
  const s = m.shared;
  const out: CrdObject[] = [s.dcgm.serviceMonitor, s.gatewayServiceMonitor, s.prometheusRule];
  if (s.gatewayScaledObject) out.push(s.gatewayScaledObject);
  for (const own of m.models) {
    if (own.scaledObject) out.push(own.scaledObject);
    if (own.ec2NodeClass) out.push(own.ec2NodeClass);
    if (own.nodePool) out.push(own.nodePool);
  }
  return out;
}
