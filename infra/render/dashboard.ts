/**
 * The Grafana dashboard of one stack, as JSON (Grafana's dashboard model,
 * schemaVersion 39): load (requests/s, queue/compute ratio against its target,
 * pending requests, batch size), latency (mean request and queue time; the
 * gateway's TTFT, p50/p95 latency and tokens/s), errors,
 * GPUs (utilisation, memory), capacity (replicas desired/ready, GPU nodes) and,
 * when the serving instance has a price, live cost ($ per 1k tokens, $/hour by team).
 * The queries are observability.ts's `expressions`, shared with the alerts.
 * Shipped as a ConfigMap Grafana's sidecar loads (label grafana_dashboard=1)
 * and written by synth to `dashboards/<name>.json` for manual import.
 */
import type { IConfigMap } from "kubernetes-models/v1/ConfigMap";
import {
  canaryExpressions,
  costExpressions,
  expressions,
  forModel,
  type ModelObservability,
  type ObservabilityInput,
} from "./observability";

export interface GrafanaTarget {
  refId: string;
  expr: string;
  legendFormat: string;
  datasource: { type: "prometheus"; uid: string };
}
export interface GrafanaPanel {
  id: number;
  type: "timeseries" | "stat";
  title: string;
  description: string;
  gridPos: { x: number; y: number; w: number; h: number };
  datasource: { type: "prometheus"; uid: string };
  fieldConfig: { defaults: { unit: string; min?: number; max?: number }; overrides: never[] };
  targets: GrafanaTarget[];
}
/** A row header: in a stack of several models, one per model, its panels below it. */
export interface GrafanaRow {
  id: number;
  type: "row";
  title: string;
  collapsed: false;
  gridPos: { x: number; y: number; w: number; h: number };
  panels: never[];
}
export interface GrafanaDashboard {
  uid: string;
  title: string;
  tags: string[];
  timezone: "utc";
  schemaVersion: number;
  version: number;
  refresh: string;
  time: { from: string; to: string };
  templating: { list: Array<Record<string, unknown>> };
  panels: Array<GrafanaPanel | GrafanaRow>;
}

/** The Grafana sidecar of kube-prometheus-stack loads ConfigMaps carrying this label. */
export const GRAFANA_DASHBOARD_LABEL = "grafana_dashboard";
const DS = { type: "prometheus", uid: "${datasource}" } as const;

interface PanelSpec {
  title: string;
  description: string;
  unit: string;
  queries: Array<[string, string]>;
  type?: "timeseries" | "stat";
  min?: number;
  max?: number;
}

/** Where a model's queue is measured: FT's model in Triton, or vLLM's scheduler (waiting over running requests). */
function queueSource(i: ObservabilityInput): string {
  return i.engine === "vllm" ? "vLLM's waiting / running requests" : "fastertransformer";
}

/** A vLLM model's engine panels (vLLM's own series, from its model on Triton's metrics port); none for FT. */
function vllmSpecs(i: ObservabilityInput): PanelSpec[] {
  if (i.engine !== "vllm") return [];
  const e = expressions(i);
  return [
    {
      title: "vLLM: KV-cache usage",
      description:
        "Share of vLLM's KV cache in use (1 = full). When it is full vLLM preempts running sequences (alert VllmPreempting).",
      unit: "percentunit",
      min: 0,
      max: 1,
      queries: [["KV cache used", e.vllmKvCacheUsage]],
    },
    {
      title: "vLLM: time to first token (engine)",
      description:
        "From a request's arrival in vLLM to its first token, p50 and p95; the gateway's panel adds the way there.",
      unit: "s",
      min: 0,
      queries: [
        ["p50", e.vllmTtftP50Seconds],
        ["p95", e.vllmTtftP95Seconds],
      ],
    },
    {
      title: "vLLM: tokens and preemptions per second",
      description: "Prompt and generated tokens vLLM processed per second, and running sequences it preempted.",
      unit: "none",
      min: 0,
      queries: [
        ["generated tok/s", e.vllmGenerationTokensPerSecond],
        ["prompt tok/s", e.vllmPromptTokensPerSecond],
        ["preemptions/s", e.vllmPreemptionsPerSecond],
      ],
    },
  ];
}

/** Every panel of one model's view, in the one-model dashboard's order. */
function panelSpecs(i: ObservabilityInput) {
  const e = expressions(i);
  const a = i.autoscaling;
  return {
    queueRatio: {
      title: "Queue / compute time ratio",
      description: a
        ? `The autoscaler's metric (${queueSource(i)}); it adds pods above the target ${a.target}.`
        : `Queue time per unit of compute time (${queueSource(i)}); above 1 requests wait longer than they run.`,
      unit: "none",
      queries: [
        ["ratio", e.queueComputeRatio],
        ...(a ? ([["target", `vector(${a.target})`]] as Array<[string, string]>) : []),
      ],
    },
    requests: {
      title: "Requests per second",
      description: "Ensemble requests completed and failed, all pods.",
      unit: "reqps",
      queries: [
        ["success", e.requestsPerSecond],
        ["failure", e.failuresPerSecond],
      ],
    },
    meanTimes: {
      title: "Mean request and queue time",
      description:
        "Triton 23.05 exports cumulative counters only, so these are means; p95, time to first token and tokens/s come from the gateway panels.",
      unit: "s",
      queries: [
        ["request (ensemble)", e.meanLatencySeconds],
        [i.engine === "vllm" ? "queue (vLLM)" : "queue (fastertransformer)", e.meanQueueSeconds],
      ],
    },
    ttft: {
      title: "Time to first token (gateway)",
      description: "From a request's arrival at the gateway to its first generated text: p50 and p95 over every route.",
      unit: "s",
      min: 0,
      queries: [
        ["p50", e.ttftP50Seconds],
        ["p95", e.ttftP95Seconds],
      ],
    },
    latency: {
      title: "Request latency p50 / p95 (gateway)",
      description: "Arrival to last byte at the gateway, streaming included: what clients see.",
      unit: "s",
      min: 0,
      queries: [
        ["p50", e.latencyP50Seconds],
        ["p95", e.latencyP95Seconds],
      ],
    },
    tokens: {
      title: "Tokens per second (gateway)",
      description: "Generated and prompt tokens per second, all pods; and the median per-request generation speed.",
      unit: "none",
      min: 0,
      queries: [
        ["generated tok/s", e.outputTokensPerSecond],
        ["prompt tok/s", e.promptTokensPerSecond],
        ["per request tok/s (p50)", e.perRequestTokensPerSecondP50],
      ],
    },
    gateway: {
      title: "Gateway: requests by status, in flight, pods",
      description: i.autoscaling
        ? "Answered requests per second by HTTP status; generations in flight (the gateway's autoscaler metric); desired and ready gateway pods."
        : "Answered requests per second by HTTP status; generations in flight; desired and ready gateway pods.",
      unit: "none",
      min: 0,
      queries: [
        ["{{status}}", e.gatewayRequestsPerSecond],
        ["in flight", e.gatewayInflight],
        ["desired pods", e.gatewayDesiredReplicas],
        ["ready pods", e.gatewayReadyReplicas],
      ],
    },
    teamTokens: {
      title: "Tokens per team (gateway)",
      description:
        "Prompt and generated tokens per second by team (the API key's consumer), all pods; GET /v1/usage gives a team its own totals for today and this month.",
      unit: "none",
      min: 0,
      queries: [
        ["{{consumer}} prompt", e.promptTokensPerSecondByTeam],
        ["{{consumer}} generated", e.outputTokensPerSecondByTeam],
      ],
    },
    teamRefused: {
      title: i.sharedStore ? "Refused per team (429) and the shared store" : "Refused per team (429)",
      description: i.sharedStore
        ? "Requests refused for a team's own limits (429) per second; pods that cannot reach the shared store (each then enforces the team limits divided by the pod count; alert after 1 minute) and the gateway pods the store counts."
        : "Requests refused for a team's own limits (429) per second. Without a shared store every limit is per gateway pod.",
      unit: "none",
      min: 0,
      queries: [
        ["{{consumer}} refused/s", e.refusedPerSecondByTeam],
        ...(i.sharedStore
          ? ([
              ["pods without the store", e.gatewayStoreDegradedPods],
              ["pods counted in the store", e.gatewayStorePods],
            ] as Array<[string, string]>)
          : []),
      ],
    },
    errors: {
      title: "Error ratio",
      description: "Failed / all ensemble requests over 5 minutes (alert above 5%).",
      unit: "percentunit",
      min: 0,
      queries: [["errors", e.errorRatio]],
    },
    pending:
      i.engine === "vllm"
        ? {
            title: "vLLM: requests waiting and running",
            description:
              "Requests waiting in vLLM's scheduler and sequences in its running batch (at most maxBatchSize); Triton hands every request to vLLM at once, so Triton's own queue stays empty.",
            unit: "none",
            queries: [
              ["waiting", e.pendingRequests],
              ["running", e.meanBatchSize],
            ],
          }
        : {
            title: "Pending requests and batch size",
            description: "Requests waiting for the FT model, and the mean dynamic batch size it runs.",
            unit: "none",
            queries: [
              ["pending", e.pendingRequests],
              ["mean batch size", e.meanBatchSize],
            ],
          },
    gpuUtil: {
      title: "GPU utilisation",
      description: "DCGM exporter, per node and GPU.",
      unit: "percent",
      min: 0,
      max: 100,
      queries: [["{{Hostname}} GPU {{gpu}}", e.gpuUtilPercent]],
    },
    gpuMemory: {
      title: "GPU memory used",
      description: `Framebuffer used / total per GPU; the alert fires above ${Math.round(i.gpuMemoryAlertFraction * 100)}%.`,
      unit: "percentunit",
      min: 0,
      max: 1,
      queries: [["{{Hostname}} GPU {{gpu}}", e.gpuMemoryFraction]],
    },
    replicas: {
      title: "Replicas and GPU nodes",
      description: a
        ? `Desired (HPA via KEDA, ${a.minReplicas}..${a.maxReplicas}) and ready Triton pods; GPU nodes with a DCGM exporter (NodePool limit ${a.nodeLimits.nodes}).`
        : "Desired and ready Triton pods; GPU nodes with a DCGM exporter.",
      unit: "none",
      min: 0,
      queries: [
        ["desired pods", e.desiredReplicas],
        ["ready pods", e.readyReplicas],
        ["GPU nodes", e.gpuNodes],
      ],
    },
  } satisfies Record<string, PanelSpec>;
}

/** Live cost, when the price table prices the serving instance: what a token really costs at today's load. */
function costSpecs(i: ObservabilityInput): PanelSpec[] {
  if (!i.pricing) return [];
  const c = costExpressions(i, i.pricing);
  const price = `${i.pricing.instanceType} at $${i.pricing.nodeUsdPerHour}/h (${i.pricing.source})`;
  return [
    {
      title: "$ per 1k generated tokens (live)",
      description: `GPU-hours paid ÷ tokens served: GPU nodes reporting to DCGM × ${price}, over the gateway's generated tokens per hour. Idle hours raise it; compare with the preview's estimate at full batch (docs/cost.md).`,
      unit: "currencyUSD",
      min: 0,
      queries: [
        ["$/1k tokens", c.usdPer1kTokens],
        ["GPU $/hour", c.gpuUsdPerHour],
      ],
    },
    {
      title: "GPU $/hour by team (share of generated tokens)",
      description: `The GPU nodes' cost per hour (${price}) split by each team's share of the generated tokens.`,
      unit: "currencyUSD",
      min: 0,
      queries: [["{{consumer}}", c.usdPerHourByTeam]],
    },
  ];
}

/** A model's canary (issue 36): each build's share, TTFT p95 and error ratio, and whether it was rolled back. */
function canarySpecs(i: ObservabilityInput, m: ModelObservability): PanelSpec[] {
  if (!m.canary) return [];
  const c = canaryExpressions(i);
  return [
    {
      title: "Canary: share of requests by build",
      description: `Requests answered by each build; the canary (${m.canary.deployment}) is configured for ${m.canary.weight} % of the new ones, 0 once rolled back.`,
      unit: "percentunit",
      min: 0,
      max: 1,
      queries: [["{{build}}", c.shareByBuild]],
    },
    {
      title: "Canary: time to first token p95 by build",
      description:
        "The rule compares the canary's p95 with the stable build's over its window (models.<id>.canary.rollback.maxTtftRatio).",
      unit: "s",
      min: 0,
      queries: [["{{build}}", c.ttftP95ByBuild]],
    },
    {
      title: "Canary: error ratio (5xx) by build",
      description: "Server-side failures per request, per build (models.<id>.canary.rollback.maxErrorRate).",
      unit: "percentunit",
      min: 0,
      queries: [["{{build}}", c.errorRatioByBuild]],
    },
    {
      title: "Canary: rolled back",
      description:
        "1 once the gateway rolled this canary id back (sticky until the canary changes); the alert TritonFtCanaryRolledBack fires with it.",
      unit: "none",
      min: 0,
      max: 1,
      queries: [["{{canary}}", c.rolledBack]],
    },
  ];
}

/** The panels of one model's row in a stack of several: the brief view of its load, latency, throughput and capacity. */
const MODEL_ROW: ReadonlyArray<keyof ReturnType<typeof panelSpecs>> = [
  "queueRatio",
  "ttft",
  "tokens",
  "requests",
  "replicas",
  "gpuUtil",
];
/**
 * What the models share, above their rows: the gateway in front of them, its
 * teams' tokens and refusals (and the shared store), and every GPU's memory.
 */
const STACK_PANELS: ReadonlyArray<keyof ReturnType<typeof panelSpecs>> = [
  "gateway",
  "latency",
  "teamTokens",
  "teamRefused",
  "gpuMemory",
];

function panel(s: PanelSpec, id: number, gridPos: GrafanaPanel["gridPos"]): GrafanaPanel {
  return {
    id,
    type: s.type ?? "timeseries",
    title: s.title,
    description: s.description,
    gridPos,
    datasource: DS,
    fieldConfig: {
      defaults: {
        unit: s.unit,
        ...(s.min !== undefined ? { min: s.min } : {}),
        ...(s.max !== undefined ? { max: s.max } : {}),
      },
      overrides: [],
    },
    targets: s.queries.map(([legend, expr], k) => ({
      refId: String.fromCharCode(65 + k),
      expr,
      legendFormat: legend,
      datasource: DS,
    })),
  };
}

/** Two panels per line, 12 wide and 8 high. */
const halfWidth = (n: number, top = 0) => ({ x: (n % 2) * 12, y: top + Math.floor(n / 2) * 8, w: 12, h: 8 });

/** Several models: the shared panels, then a row per model with its own series (forModel). */
function severalModelPanels(i: ObservabilityInput, models: NonNullable<ObservabilityInput["models"]>) {
  const shared = panelSpecs(i);
  const panels: Array<GrafanaPanel | GrafanaRow> = STACK_PANELS.map((k, n) => panel(shared[k], n + 1, halfWidth(n)));
  let y = Math.ceil(STACK_PANELS.length / 2) * 8;
  for (const m of models.list) {
    panels.push({
      id: panels.length + 1,
      type: "row",
      title: `${m.id} (${m.deployment}, ${m.instanceType})`,
      collapsed: false,
      gridPos: { x: 0, y, w: 24, h: 1 },
      panels: [],
    });
    y += 1;
    const mi = forModel(i, m);
    const own = panelSpecs(mi);
    // Its cost, at its GPU nodes' price, when the price table has one; its canary's panels when it has one.
    // A vLLM model's row adds vLLM's queue and engine panels.
    const engine = m.engine === "vllm" ? [own.pending, ...vllmSpecs(mi)] : [];
    const specs = [...MODEL_ROW.map((k) => own[k]), ...engine, ...costSpecs(mi), ...canarySpecs(mi, m)];
    // Three panels per line, 8 wide.
    specs.forEach((spec, n) =>
      panels.push(panel(spec, panels.length + 1, { x: (n % 3) * 8, y: y + Math.floor(n / 3) * 8, w: 8, h: 8 })),
    );
    y += Math.ceil(specs.length / 3) * 8;
  }
  return panels;
}

export function renderDashboard(i: ObservabilityInput): GrafanaDashboard {
  const panels = i.models
    ? severalModelPanels(i, i.models)
    : [...Object.values(panelSpecs(i)), ...vllmSpecs(i), ...costSpecs(i)].map((s, n) => panel(s, n + 1, halfWidth(n)));
  return {
    uid: i.name.slice(0, 40),
    title: i.models
      ? `triton-ft: ${i.models.list.map((m) => m.id).join(", ")} (${i.namespace})`
      : `triton-ft: ${i.deployment} (${i.namespace})`,
    tags: ["triton-ft", "triton", "gpu"],
    timezone: "utc",
    schemaVersion: 39,
    version: 1,
    refresh: "30s",
    time: { from: "now-6h", to: "now" },
    templating: {
      list: [{ name: "datasource", type: "datasource", query: "prometheus", label: "Prometheus", current: {} }],
    },
    panels,
  };
}

export function dashboardConfigMap(i: ObservabilityInput, d: GrafanaDashboard): IConfigMap {
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: {
      name: `${i.name}-dashboard`,
      namespace: i.namespace,
      labels: { ...i.labels, "app.kubernetes.io/component": "dashboard", [GRAFANA_DASHBOARD_LABEL]: "1" },
    },
    data: { [`${i.name}.json`]: JSON.stringify(d, null, 2) + "\n" },
  };
}
