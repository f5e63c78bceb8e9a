/**
 * What makes the serving side observable: the DCGM exporter (GPU utilisation
 * and memory per GPU node), ServiceMonitors for it (Triton's own is in k8s.ts),
 * the PrometheusRule alerts and the Grafana dashboard. Every PromQL expression
 * here names only metrics that exist: test/unit/metricNames.test.ts and
 * test/triton/metricNames.test.ts check them against DCGM's published counters,
 * kube-state-metrics' documented metrics and a real tritonserver's /metrics.
 * Pure: plain objects, no Pulumi.
 */
import type { IConfigMap } from "kubernetes-models/v1/ConfigMap";
import type { IService } from "kubernetes-models/v1/Service";
import type { IDaemonSet } from "kubernetes-models/apps/v1/DaemonSet";
import type { INetworkPolicy } from "kubernetes-models/networking.k8s.io/v1/NetworkPolicy";
import { SCRAPER_NAMESPACE_LABEL } from "./gatewayManifests";

import { serviceMonitor, type ServiceMonitor, type ServiceMonitorRelabeling } from "./serviceMonitor";
import {
  podSecurityContext,
  scannerSkipAnnotations,
  supportContainerSecurityContext,
  type ScannerSkip,
} from "./podSecurity";
import type { AutoscalingPlan } from "../resolve/scaling";
import {
  labelMatchers,
  queueComputeRatioQuery,
  selectorText,
  vllmQueueRunningRatioQuery,
  vllmSelectorText,
  SCALED_MODEL,
  VLLM_METRICS,
  type MetricsSelector,
} from "./prometheus";
import type { Engine } from "../model/types";

import { RATE_WINDOW_SECONDS } from "../conventions/metrics";
import { DCGM_EXPORTER_REQUESTS, ENSEMBLE_MODEL } from "../conventions/workload";
import { DCGM_EXPORTER_IMAGE, pinnedRef } from "../catalog/images";
export const DCGM_PORT = 9400;
/**
 * The DCGM fields this stack collects: all of them are in the exporter's
 * default-counters.csv (test/data/metrics/dcgm-exporter-default-counters.csv)
 * and none is a profiling (DCGM_FI_PROF_*) field, which would need SYS_ADMIN.
 */
export const DCGM_COUNTERS: ReadonlyArray<[string, "gauge" | "counter", string]> = [
  ["DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %)."],
  ["DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB)."],
  ["DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB)."],
  ["DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C)."],
  ["DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W)."],
  ["DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered."],
];
/** What checkov flags on the exporter and why it stays (docs/security.md, "Documented exceptions"). */
export const DCGM_SCANNER_SKIPS: readonly ScannerSkip[] = [
  {
    id: "CKV_K8S_40",
    reason:
      "runs as the image's own non-root user dcgm-exporter (uid 1000), the mode NVIDIA's Dockerfile documents for basic metrics without SYS_ADMIN",
  },
];

/** The ConfigMap data key and mount path of the counters file. */
const COUNTERS_FILE = "counters.csv";
const COUNTERS_DIR = "/etc/triton-ft/dcgm";

/** The hourly price of one GPU node, for the dashboard's live cost panels (infra/cost: the vendored price table). */
export interface GpuPricing {
  nodeUsdPerHour: number;
  instanceType: string;
  /** Where the price came from (the price table's source id and date), shown in the panel's description. */
  source: string;
}

/**
 * The Prometheus label naming the served model (the OpenAI id clients send)
 * on the series of a stack of several models: the gateway labels its series
 * with it (images/gateway/src/telemetry/metrics.ts LABELS.model), and the DCGM scrape
 * copies it from the GPU node's model label (dcgmModelRelabeling).
 */
export const MODEL_SERIES_LABEL = "model";

/** Prometheus's name for a node label in service discovery: every character outside [A-Za-z0-9_] becomes `_`. */
export function nodeLabelMetaName(key: string): string {
  return `__meta_kubernetes_node_label_${key.replace(/[^A-Za-z0-9_]/g, "_")}`;
}

/** One served model of a stack of several (ObservabilityInput.models): where its series are and what its alerts compare with. */
export interface ModelObservability {
  /** The model id clients send: the `model` label of its gateway and GPU series. */
  id: string;
  /** Its Triton metrics Service (`triton-<id>-metrics`): Triton's own `model` label is the ensemble's name, the same for every model. */
  triton: MetricsSelector;
  /** The backend serving it: a vLLM model's queue, panels and alerts read vLLM's engine series (render/prometheus.ts VLLM_METRICS). */
  engine: Engine;
  deployment: string;
  instanceType: string;
  podStartBudgetSeconds: number;
  autoscaling?: AutoscalingPlan;
  /** The price of its GPU nodes, for its row's live cost panels. */
  pricing?: GpuPricing;
  /** Its live canary build (issue 36): its row's canary panels and the rollback alert. */
  canary?: { deployment: string; weight: number };
}

export interface ObservabilityInput {
  namespace: string;
  /** Name prefix of every object (the Triton workload name). */
  name: string;
  /** Recommended labels of the workload; `component` is replaced per object. */
  labels: Record<string, string>;
  /** Triton metrics in Prometheus (namespace + metrics Service). */
  triton: MetricsSelector;
  /** The backend serving the model these fields describe (the first, in a stack of several; forModel narrows). */
  engine: Engine;
  /** The gateway's metrics in Prometheus (images/gateway/src/telemetry/metrics.ts: TTFT, tokens/s, latency histograms). */
  gateway: MetricsSelector;
  gatewayDeployment: string;
  deployment: string;
  instanceType: string;
  gpuTaint: { key: string; effect: "NoSchedule" };
  instanceTypeLabel: string;
  /** Per-GPU memory share the sizing formulas allow (model/sizing.ts USABLE_GPU_FRACTION). */
  gpuMemoryAlertFraction: number;
  /** Worst-case time a new pod is unavailable: pull + startup budget (+ node boot when autoscaling). */
  podStartBudgetSeconds: number;
  autoscaling?: AutoscalingPlan;
  /** The gateway counts team limits and usage in a shared store (serving.store): alert when a pod cannot reach it. */
  sharedStore: boolean;
  /**
   * A stack of several models: every model, the first included, and the GPU
   * node label naming the model (conventions/workload.ts MODEL_NODE_LABEL_KEY),
   * which the DCGM scrape turns into the `model` series label. Unset for one
   * model, which the fields above describe.
   */
  models?: { list: ModelObservability[]; nodeLabelKey: string };
  /** Extra label matchers on the gateway's and the DCGM exporter's series: one model's share of them (forModel). */
  scope?: { gateway: Record<string, string>; gpu: Record<string, string> };
  /** With a price for the serving instance: the dashboard's $ per 1k tokens and $/hour by team panels. */
  pricing?: GpuPricing;
}

/** The input narrowed to one model of a stack of several: its Triton, Deployment, scaling and series. */
export function forModel(i: ObservabilityInput, m: ModelObservability): ObservabilityInput {
  const only = { [MODEL_SERIES_LABEL]: m.id };
  return {
    ...i,
    triton: m.triton,
    engine: m.engine,
    deployment: m.deployment,
    instanceType: m.instanceType,
    podStartBudgetSeconds: m.podStartBudgetSeconds,
    autoscaling: m.autoscaling,
    pricing: m.pricing,
    models: undefined,
    scope: { gateway: only, gpu: only },
  };
}

export interface AlertRule {
  alert: string;
  expr: string;
  for: string;
  labels: Record<string, string>;
  annotations: { summary: string; description: string };
}

export interface PrometheusRule {
  apiVersion: "monitoring.coreos.com/v1";
  kind: "PrometheusRule";
  metadata: { name: string; namespace: string; labels: Record<string, string> };
  spec: { groups: Array<{ name: string; rules: AlertRule[] }> };
}

function withComponent(labels: Record<string, string>, component: string): Record<string, string> {
  return { ...labels, "app.kubernetes.io/component": component };
}

function dcgmSelector(labels: Record<string, string>): Record<string, string> {
  return {
    "app.kubernetes.io/name": "dcgm-exporter",
    "app.kubernetes.io/instance": labels["app.kubernetes.io/instance"] ?? "",
  };
}

export interface DcgmExporter {
  configMap: IConfigMap;
  daemonSet: IDaemonSet;
  service: IService;
  /** The namespace denies ingress by default (render/gatewayManifests.ts): only the metrics scraper reaches 9400. */
  networkPolicy: INetworkPolicy;
  serviceMonitor: ServiceMonitor;
}

/** The instance types of every model's GPU nodes, in the order the models come. */
function gpuInstanceTypes(i: ObservabilityInput): string[] {
  return i.models ? [...new Set(i.models.list.map((m) => m.instanceType))] : [i.instanceType];
}

/**
 * Several models: the scrape copies the GPU node's model label onto the
 * exporter's series (Prometheus attaches node metadata to the endpoint's
 * target), so each model's GPU panels and alerts select its own nodes; the
 * exporter itself runs without pod attribution (no host paths).
 */
export function dcgmModelRelabeling(nodeLabelKey: string): ServiceMonitorRelabeling {
  return { sourceLabels: [nodeLabelMetaName(nodeLabelKey)], targetLabel: MODEL_SERIES_LABEL, action: "replace" };
}

/**
 * DCGM exporter on every GPU node of the serving instance type(s), under the
 * restricted pod security profile: non-root, no capabilities, no host paths
 * (so no per-pod attribution: GPU metrics carry the node's Hostname, and one
 * Triton pod per GPU set makes that enough), read-only root filesystem.
 */
export function renderDcgmExporter(i: ObservabilityInput): DcgmExporter {
  const name = `${i.name}-dcgm-exporter`;
  const selector = dcgmSelector(i.labels);
  const labels = { ...withComponent(i.labels, "gpu-metrics"), ...selector };
  const counters = [
    "# DCGM field, Prometheus type, help (subset of dcgm-exporter's default-counters.csv)",
    ...DCGM_COUNTERS.map(([f, t, h]) => `${f}, ${t}, ${h}`),
  ].join("\n");
  const configMap: IConfigMap = {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name, namespace: i.namespace, labels },
    data: { [COUNTERS_FILE]: counters + "\n" },
  };
  const daemonSet: IDaemonSet = {
    apiVersion: "apps/v1",
    kind: "DaemonSet",
    metadata: { name, namespace: i.namespace, labels, annotations: scannerSkipAnnotations(DCGM_SCANNER_SKIPS) },
    spec: {
      selector: { matchLabels: selector },
      updateStrategy: { type: "RollingUpdate", rollingUpdate: { maxUnavailable: 1 } },
      template: {
        metadata: { labels },
        spec: {
          automountServiceAccountToken: false,
          enableServiceLinks: false,
          priorityClassName: "system-node-critical",
          securityContext: podSecurityContext(DCGM_EXPORTER_IMAGE.uid),
          tolerations: [{ key: i.gpuTaint.key, operator: "Exists", effect: i.gpuTaint.effect }],
          affinity: {
            nodeAffinity: {
              requiredDuringSchedulingIgnoredDuringExecution: {
                nodeSelectorTerms: [
                  { matchExpressions: [{ key: i.instanceTypeLabel, operator: "In", values: gpuInstanceTypes(i) }] },
                ],
              },
            },
          },
          containers: [
            {
              name: "dcgm-exporter",
              // By digest alone (the pack's DIGEST_REF shape); the pin, its tag and its source: infra/catalog/images.ts.
              image: pinnedRef(DCGM_EXPORTER_IMAGE),
              args: ["-f", `${COUNTERS_DIR}/${COUNTERS_FILE}`],
              env: [
                { name: "DCGM_EXPORTER_LISTEN", value: `:${DCGM_PORT}` },
                // Pod attribution reads the kubelet's pod-resources socket, a host path the restricted profile forbids.
                { name: "DCGM_EXPORTER_KUBERNETES", value: "false" },
                // The NVIDIA runtime exposes the node's GPUs for monitoring without allocating them.
                { name: "NVIDIA_VISIBLE_DEVICES", value: "all" },
                { name: "NVIDIA_DRIVER_CAPABILITIES", value: "utility" },
              ],
              ports: [{ name: "metrics", containerPort: DCGM_PORT, protocol: "TCP" }],
              securityContext: supportContainerSecurityContext(),
              resources: {
                requests: {
                  cpu: `${DCGM_EXPORTER_REQUESTS.cpuMillis}m`,
                  memory: `${DCGM_EXPORTER_REQUESTS.memoryBytes / 1024 ** 2}Mi`,
                },
                // A scrape every 15 s: throttling only delays an answer, so a CPU limit costs nothing here.
                limits: { cpu: "500m", memory: "512Mi" },
              },
              readinessProbe: { httpGet: { path: "/health", port: "metrics" }, periodSeconds: 10, timeoutSeconds: 5 },
              livenessProbe: {
                httpGet: { path: "/health", port: "metrics" },
                initialDelaySeconds: 45,
                periodSeconds: 15,
                timeoutSeconds: 5,
              },
              volumeMounts: [
                { name: "counters", mountPath: COUNTERS_DIR, readOnly: true },
                { name: "tmp", mountPath: "/tmp" },
              ],
            },
          ],
          volumes: [
            { name: "counters", configMap: { name } },
            { name: "tmp", emptyDir: { sizeLimit: "64Mi" } },
          ],
        },
      },
    },
  };
  const service: IService = {
    apiVersion: "v1",
    kind: "Service",
    metadata: { name, namespace: i.namespace, labels },
    spec: {
      type: "ClusterIP",
      selector,
      ports: [{ name: "metrics", port: DCGM_PORT, targetPort: "metrics", protocol: "TCP" }],
    },
  };
  const networkPolicy: INetworkPolicy = {
    apiVersion: "networking.k8s.io/v1",
    kind: "NetworkPolicy",
    metadata: { name, namespace: i.namespace, labels },
    spec: {
      podSelector: { matchLabels: selector },
      policyTypes: ["Ingress", "Egress"],
      ingress: [
        {
          from: [{ namespaceSelector: { matchLabels: { [SCRAPER_NAMESPACE_LABEL]: "true" } } }],
          ports: [{ protocol: "TCP", port: DCGM_PORT }],
        },
      ],
      // The exporter talks to the node's GPUs only.
      egress: [],
    },
  };
  return {
    configMap,
    daemonSet,
    service,
    networkPolicy,
    serviceMonitor: serviceMonitor(
      name,
      i.namespace,
      labels,
      selector,
      i.models ? { attachNodeMetadata: true, relabelings: [dcgmModelRelabeling(i.models.nodeLabelKey)] } : {},
    ),
  };
}

/** The PromQL every alert and panel shares, so the dashboard shows exactly what the alerts test. */
export function expressions(i: ObservabilityInput) {
  const t = (extra: Record<string, string> = {}) => selectorText(i.triton, extra);
  const w = `${RATE_WINDOW_SECONDS}s`;
  const ensemble = t({ model: ENSEMBLE_MODEL });
  const ft = t({ model: SCALED_MODEL });
  const dep = `namespace="${i.namespace}",deployment="${i.deployment}"`;
  // The gateway (images/gateway/src/telemetry/metrics.ts): histograms in seconds, per route and consumer (and model).
  const g = selectorText(i.gateway, i.scope?.gateway);
  const gpu = labelMatchers({ namespace: i.namespace, ...i.scope?.gpu });
  const gw = `triton_ft_gateway_`;
  const quantile = (q: number, histogram: string) =>
    `histogram_quantile(${q}, sum by (le) (rate(${gw}${histogram}_bucket{${g}}[${w}])))`;
  const gdep = `namespace="${i.namespace}",deployment="${i.gatewayDeployment}"`;
  // A vLLM model queues inside vLLM, not in Triton: its queue, pending and batch series are vLLM's.
  const vllm = i.engine === "vllm";
  const v = vllmSelectorText(i.triton);
  const vm = VLLM_METRICS;
  const vllmQuantile = (q: number, histogram: string) =>
    `histogram_quantile(${q}, sum by (le) (rate(${histogram}_bucket{${v}}[${w}])))`;
  return {
    ttftP50Seconds: quantile(0.5, "time_to_first_token_seconds"),
    ttftP95Seconds: quantile(0.95, "time_to_first_token_seconds"),
    latencyP50Seconds: quantile(0.5, "request_duration_seconds"),
    latencyP95Seconds: quantile(0.95, "request_duration_seconds"),
    outputTokensPerSecond: `sum(rate(${gw}output_tokens_total{${g}}[${w}]))`,
    promptTokensPerSecond: `sum(rate(${gw}prompt_tokens_total{${g}}[${w}]))`,
    perRequestTokensPerSecondP50: quantile(0.5, "output_tokens_per_second"),
    gatewayRequestsPerSecond: `sum by (status) (rate(${gw}requests_total{${g}}[${w}]))`,
    gatewayErrorRatio: `sum(rate(${gw}errors_total{${g},status=~"5.."}[5m])) / clamp_min(sum(rate(${gw}requests_total{${g}}[5m])), 1e-9)`,
    gatewayInflight: `sum(${gw}inflight_requests{${g}})`,
    gatewayDesiredReplicas: `kube_deployment_spec_replicas{${gdep}}`,
    // Per team (the `consumer` label): what each team uses, and what it is refused.
    promptTokensPerSecondByTeam: `sum by (consumer) (rate(${gw}prompt_tokens_total{${g}}[${w}]))`,
    outputTokensPerSecondByTeam: `sum by (consumer) (rate(${gw}output_tokens_total{${g}}[${w}]))`,
    refusedPerSecondByTeam: `sum by (consumer) (rate(${gw}errors_total{${g},status="429"}[${w}]))`,
    // The shared store (images/gateway/src/telemetry/metrics.ts store_degraded, store_pods).
    gatewayStoreDegradedPods: `sum(${gw}store_degraded{${g}})`,
    gatewayStorePods: `max(${gw}store_pods{${g}})`,
    gatewayReadyReplicas: `kube_deployment_status_replicas_ready{${gdep}}`,
    queueComputeRatio: vllm ? vllmQueueRunningRatioQuery(i.triton) : queueComputeRatioQuery(i.triton),
    requestsPerSecond: `sum(rate(nv_inference_request_success{${ensemble}}[${w}]))`,
    failuresPerSecond: `sum(rate(nv_inference_request_failure{${ensemble}}[${w}]))`,
    errorRatio: `sum(rate(nv_inference_request_failure{${ensemble}}[5m])) / clamp_min(sum(rate(nv_inference_request_success{${ensemble}}[5m])) + sum(rate(nv_inference_request_failure{${ensemble}}[5m])), 1e-9)`,
    meanLatencySeconds: `sum(rate(nv_inference_request_duration_us{${ensemble}}[${w}])) / clamp_min(sum(rate(nv_inference_request_success{${ensemble}}[${w}])), 1e-9) / 1e6`,
    meanQueueSeconds: vllm
      ? `sum(rate(${vm.queueTime}_sum{${v}}[${w}])) / clamp_min(sum(rate(${vm.queueTime}_count{${v}}[${w}])), 1e-9)`
      : `sum(rate(nv_inference_queue_duration_us{${ft}}[${w}])) / clamp_min(sum(rate(nv_inference_request_success{${ft}}[${w}])), 1e-9) / 1e6`,
    pendingRequests: vllm ? `sum(${vm.waiting}{${v}})` : `sum(nv_inference_pending_request_count{${ft}})`,
    // vLLM: the sequences in its running batch (continuous batching has no per-execution batch).
    meanBatchSize: vllm
      ? `sum(${vm.running}{${v}})`
      : `sum(rate(nv_inference_count{${ft}}[${w}])) / clamp_min(sum(rate(nv_inference_exec_count{${ft}}[${w}])), 1e-9)`,
    // vLLM's own engine series (a vLLM model only).
    vllmKvCacheUsage: `max(${vm.kvCacheUsage}{${v}})`,
    vllmPreemptionsPerSecond: `sum(rate(${vm.preemptions}{${v}}[${w}]))`,
    vllmPreemptionsRate5m: `sum(rate(${vm.preemptions}{${v}}[5m]))`,
    vllmTtftP50Seconds: vllmQuantile(0.5, vm.timeToFirstToken),
    vllmTtftP95Seconds: vllmQuantile(0.95, vm.timeToFirstToken),
    vllmGenerationTokensPerSecond: `sum(rate(${vm.generationTokens}{${v}}[${w}]))`,
    vllmPromptTokensPerSecond: `sum(rate(${vm.promptTokens}{${v}}[${w}]))`,
    scrapedPods: `count(nv_inference_request_success{${ensemble}})`,
    tritonSeries: `nv_inference_request_success{${ensemble}}`,
    gpuUtilPercent: `avg by (Hostname, gpu) (DCGM_FI_DEV_GPU_UTIL{${gpu}})`,
    gpuMemoryFraction: `max by (Hostname, gpu) (DCGM_FI_DEV_FB_USED{${gpu}} / (DCGM_FI_DEV_FB_USED{${gpu}} + DCGM_FI_DEV_FB_FREE{${gpu}}))`,
    gpuNodes: `count(count by (Hostname) (DCGM_FI_DEV_GPU_UTIL{${gpu}}))`,
    desiredReplicas: `kube_deployment_spec_replicas{${dep}}`,
    readyReplicas: `kube_deployment_status_replicas_ready{${dep}}`,
    unavailableReplicas: `kube_deployment_status_replicas_unavailable{${dep}}`,
  };
}

/**
 * The live cost queries: GPU-hours paid ÷ tokens served. The GPU nodes are
 * the ones the DCGM exporter reports (every serving node runs one), priced at
 * the table's on-demand rate; the tokens are the gateway's generated tokens.
 * By team: the same dollars per hour split by each consumer's share of the
 * generated tokens (the gateway labels tokens with the caller's team).
 */
export function costExpressions(i: ObservabilityInput, p: GpuPricing) {
  const e = expressions(i);
  // One model of several: its GPU nodes (e.gpuNodes) and its tokens (`scope`).
  const g = selectorText(i.gateway, i.scope?.gateway);
  const w = `${RATE_WINDOW_SECONDS}s`;
  const tokens = `rate(triton_ft_gateway_output_tokens_total{${g}}[${w}])`;
  const usdPerHour = `(${e.gpuNodes} * ${p.nodeUsdPerHour})`;
  return {
    gpuUsdPerHour: usdPerHour,
    usdPer1kTokens: `${usdPerHour} / clamp_min(sum(${tokens}) * 3600, 1e-9) * 1000`,
    usdPerHourByTeam: `scalar(${usdPerHour}) * sum by (consumer) (${tokens}) / scalar(clamp_min(sum(${tokens}), 1e-9))`,
  };
}

/**
 * A model's canary as the gateway reports it (the `build` label, "stable" |
 * "canary", on its per-model series; the rolled-back gauge per model and
 * canary id): the share, TTFT p95 and error ratio of each build, and the
 * rollback state. Scoped to the model (`scope`).
 */
export function canaryExpressions(i: ObservabilityInput) {
  const g = selectorText(i.gateway, i.scope?.gateway);
  const w = `${RATE_WINDOW_SECONDS}s`;
  const gw = "triton_ft_gateway_";
  return {
    shareByBuild: `sum by (${BUILD_SERIES_LABEL}) (rate(${gw}requests_total{${g}}[${w}])) / scalar(clamp_min(sum(rate(${gw}requests_total{${g}}[${w}])), 1e-9))`,
    ttftP95ByBuild: `histogram_quantile(0.95, sum by (le, ${BUILD_SERIES_LABEL}) (rate(${gw}time_to_first_token_seconds_bucket{${g}}[${w}])))`,
    errorRatioByBuild: `sum by (${BUILD_SERIES_LABEL}) (rate(${gw}errors_total{${g},status=~"5.."}[5m])) / clamp_min(sum by (${BUILD_SERIES_LABEL}) (rate(${gw}requests_total{${g}}[5m])), 1e-9)`,
    rolledBack: `max by (${MODEL_SERIES_LABEL}, canary) (${CANARY_ROLLED_BACK_METRIC}{${g}})`,
  };
}

/** The gateway's label telling a model's two builds apart (images/gateway/src/telemetry/metrics.ts LABELS.build). */
export const BUILD_SERIES_LABEL = "build";
/** 1 once the gateway rolled a model's canary back, per model and canary id (METRICS.canaryRolledBack). */
export const CANARY_ROLLED_BACK_METRIC = "triton_ft_gateway_canary_rolled_back";

/**
 * A model with a canary: the alert that the gateway rolled it back (the
 * decision is the gateway's, shared through the store: one series per pod,
 * `max` makes it one per model and canary). No `for`: the gauge turns 1 once,
 * on the decision, and stays there for that canary id.
 */
function canaryRules(i: ObservabilityInput, m: ModelObservability): AlertRule[] {
  if (!m.canary) return [];
  return [
    {
      alert: "TritonFtCanaryRolledBack",
      expr: `${canaryExpressions(i).rolledBack} == 1`,
      for: "0m",
      labels: severity("warning"),
      annotations: {
        summary: `The gateway rolled back the canary {{ $labels.canary }} of ${m.id} (${m.canary.deployment})`,
        description:
          "It broke its rule (error rate or p95 time to first token against the stable build's, models.<id>.canary.rollback): the gateway sends it no new requests; in-flight streams finish. The reason is in the gateway's rollbacks counter and /v1/models. Fix the build and change the canary (a new canary id takes traffic again), or remove models.<id>.canary: docs/serving.md, Canary.",
      },
    },
  ];
}

/** Prometheus durations: whole minutes. */
function minutes(seconds: number): string {
  return `${Math.ceil(seconds / 60)}m`;
}

const severity = (level: "warning" | "critical") => ({ severity: level, "app.kubernetes.io/part-of": "triton-ft" });

/** The alerts on one Triton Deployment: queueing, errors, GPU memory, pods not ready, metrics gone. */
function tritonRules(i: ObservabilityInput): AlertRule[] {
  const e = expressions(i);
  const a = i.autoscaling;
  // With autoscaling, the ratio should sit near the target; twice the target for
  // longer than a scale-up takes means the autoscaler is not keeping up. A fixed
  // size alerts when requests wait longer than they compute.
  const queueThreshold = a ? Math.max(1, 2 * a.target) : 1;
  const queueFor = a ? minutes(a.scaleUpLatencySeconds) : "10m";
  const sleeps = a?.sleep !== undefined;
  const sev = severity;
  return [
    {
      alert: "TritonQueueTimeHigh",
      expr: `(${e.queueComputeRatio}) > ${queueThreshold}`,
      for: queueFor,
      labels: sev("warning"),
      annotations: {
        summary: `Requests to ${i.deployment} wait in queue longer than ${queueThreshold}× their compute time`,
        description: a
          ? `The queue/compute ratio has been above ${queueThreshold} for longer than a scale-up takes (${a.scaleUpLatencySeconds} s): check for Pending pods (GPU capacity, NodePool limits) or raise serving.autoscaling.max.`
          : "The fixed-size deployment is saturated: raise serving.replicas or enable serving.autoscaling.",
      },
    },
    {
      alert: "TritonErrorRateHigh",
      expr: `(${e.errorRatio}) > 0.05`,
      for: "5m",
      labels: sev("critical"),
      annotations: {
        summary: `More than 5% of ${i.deployment}'s ensemble requests fail`,
        description:
          "Triton counts rejected requests (bad input) and server errors alike: check the gateway's 4xx/5xx split and the tritonserver logs.",
      },
    },
    {
      alert: "TritonGpuMemoryNearFull",
      expr: `(${e.gpuMemoryFraction}) > ${i.gpuMemoryAlertFraction}`,
      for: "10m",
      labels: sev("warning"),
      annotations: {
        summary: `GPU memory on {{ $labels.Hostname }} GPU {{ $labels.gpu }} is above ${Math.round(i.gpuMemoryAlertFraction * 100)}%`,
        description:
          "Above the share the sizing formulas allow: a longer batch may run out of memory. Lower serving.maxBatchSize or the sequence lengths, or raise tensorParallel.",
      },
    },
    {
      alert: "TritonPodsNotReady",
      expr: `${e.unavailableReplicas} > 0`,
      // A starting pod is unavailable for its whole cold start; only longer is a fault.
      for: minutes(i.podStartBudgetSeconds),
      labels: sev("warning"),
      annotations: {
        summary: `${i.deployment} has pods not ready for longer than a cold start`,
        description: `Longer than the worst-case start (${i.podStartBudgetSeconds} s): see docs/operations.md, "Troubleshooting" (Pending, image pull, model load).`,
      },
    },
    // A model that sleeps has no Triton series while it has no pod, by design: only absent series
    // while pods are wanted count, and for longer than a wake from zero takes.
    {
      alert: "TritonMetricsAbsent",
      expr: sleeps ? `absent(${e.tritonSeries}) and on() (${e.desiredReplicas} > 0)` : `absent(${e.tritonSeries})`,
      for: sleeps ? minutes(Math.max(600, i.podStartBudgetSeconds)) : "10m",
      labels: sev(a ? "critical" : "warning"),
      annotations: {
        summary: `Prometheus has no Triton metrics for ${i.deployment}`,
        description: a
          ? "The autoscaler is blind: KEDA reports an error and the HPA holds the current size. Check the ServiceMonitor or scrape config."
          : "Check the ServiceMonitor or scrape config of the metrics Service.",
      },
    },
  ];
}

/**
 * A vLLM model: vLLM preempts running sequences when its KV cache is full
 * (their KV blocks are freed and recomputed later), so every preempted
 * request pays its prefill again. Sustained preemption means the KV cache is
 * too small for the traffic: the GPU-memory alert cannot see it, since vLLM
 * allocates its KV cache whole at start.
 */
function vllmRules(i: ObservabilityInput): AlertRule[] {
  if (i.engine !== "vllm") return [];
  const e = expressions(i);
  return [
    {
      alert: "VllmPreempting",
      expr: `(${e.vllmPreemptionsRate5m}) > 0`,
      for: "10m",
      labels: severity("warning"),
      annotations: {
        summary: `vLLM in ${i.deployment} keeps preempting requests: its KV cache is full`,
        description:
          "Preempted requests are recomputed later, which costs time to first token and throughput (the dashboard's KV-cache panel shows the usage). Raise vllm.kvCacheGiB or vllm.gpuMemoryUtilization, lower maxBatchSize or maxModelLen, or raise tensorParallel: docs/vllm.md.",
      },
    },
  ];
}

/** 5xx answers of the gateway: all of them (one model), or one model's share (`scope`) in a stack of several. */
function gatewayErrorsRule(i: ObservabilityInput, forWhat = ""): AlertRule {
  const e = expressions(i);
  return {
    alert: "GatewayServerErrorsHigh",
    expr: `(${e.gatewayErrorRatio}) > 0.01`,
    for: "5m",
    labels: severity("critical"),
    annotations: {
      summary: `More than 1% of the requests${forWhat} through ${i.gatewayDeployment} end in a 5xx`,
      description:
        "Client mistakes are 4xx and do not count here: a 5xx is the gateway or Triton failing. Check the gateway's JSON logs (code field) and the tritonserver logs.",
    },
  };
}

/** With a shared store: a gateway pod that cannot reach it (the stack's one store, whatever the model). */
function storeRules(i: ObservabilityInput): AlertRule[] {
  if (!i.sharedStore) return [];
  const e = expressions(i);
  return [
    {
      alert: "GatewayStoreDegraded",
      expr: `(${e.gatewayStoreDegradedPods}) > 0`,
      for: "1m",
      labels: severity("warning"),
      annotations: {
        summary: `{{ $value }} pod(s) of ${i.gatewayDeployment} cannot reach the shared store`,
        description:
          "Those pods enforce each team's limits divided by the gateway pod count, on their own; usage they serve is kept in memory and written once the store answers. Check the store (ElastiCache, or the in-cluster Valkey pod) and the gateway's 'store unreachable' log line: see docs/serving.md, Shared store.",
      },
    },
  ];
}

/** Autoscaled: the Deployment sits at its maximum and still queues. */
function scalingAtMaxRule(i: ObservabilityInput): AlertRule[] {
  const a = i.autoscaling;
  if (!a) return [];
  const e = expressions(i);
  return [
    {
      alert: "TritonScalingAtMax",
      expr: `(${e.desiredReplicas} >= ${a.maxReplicas}) and on() ((${e.queueComputeRatio}) > ${a.target})`,
      for: "15m",
      labels: severity("warning"),
      annotations: {
        summary: `${i.deployment} is at serving.autoscaling.max (${a.maxReplicas}) and still above its target`,
        description: "Raise serving.autoscaling.max (the NodePool limits follow), or expect queueing.",
      },
    },
  ];
}

/**
 * The alerts of the stack. One model: one group. Several models: one group per
 * model (`<its Deployment>.rules`), each rule on that model's own series
 * (its Triton metrics Service, its gateway requests, its GPU nodes) with its
 * own thresholds and a `model` label Alertmanager can route on; and a gateway
 * group for the 5xx of requests routed to no model (the gateway's own).
 */
export function renderPrometheusRule(i: ObservabilityInput): PrometheusRule {
  const groups = i.models
    ? [
        ...i.models.list.map((m) => {
          const mi = forModel(i, m);
          const rules = [
            ...tritonRules(mi),
            ...vllmRules(mi),
            ...scalingAtMaxRule(mi),
            gatewayErrorsRule(mi, ` for ${m.id}`),
            ...canaryRules(mi, m),
          ];
          return {
            name: `${m.deployment}.rules`,
            rules: rules.map((r) => ({ ...r, labels: { ...r.labels, [MODEL_SERIES_LABEL]: m.id } })),
          };
        }),
        {
          name: `${i.gatewayDeployment}.rules`,
          // `model=""` matches the series without the label: requests the gateway routed to no model.
          rules: [
            gatewayErrorsRule(
              { ...i, scope: { gateway: { [MODEL_SERIES_LABEL]: "" }, gpu: {} } },
              " routed to no model",
            ),
            ...storeRules(i),
          ],
        },
      ]
    : [
        {
          name: `${i.name}.rules`,
          rules: [...tritonRules(i), ...vllmRules(i), gatewayErrorsRule(i), ...storeRules(i), ...scalingAtMaxRule(i)],
        },
      ];
  return {
    apiVersion: "monitoring.coreos.com/v1",
    kind: "PrometheusRule",
    metadata: { name: i.name, namespace: i.namespace, labels: withComponent(i.labels, "alerts") },
    spec: { groups },
  };
}
