/**
 * The gateway's Prometheus metrics. Names and label names are exported here,
 * in one place, because the dashboard, the alerts and the gateway's autoscaler are built on them:
 * renaming one is a breaking change for those.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";

export const METRIC_PREFIX = "triton_ft_gateway_";

export const METRICS = {
  /** Counter {route, status, consumer, model, build}: every answered request. */
  requests: `${METRIC_PREFIX}requests_total`,
  /** Histogram {route, consumer, model, build}: request start to last byte, seconds. */
  requestDuration: `${METRIC_PREFIX}request_duration_seconds`,
  /** Histogram {route, consumer, model, build}: request start to the first generated text, seconds. */
  timeToFirstToken: `${METRIC_PREFIX}time_to_first_token_seconds`,
  /** Histogram {route, consumer, model, build}: generated tokens per second of generation, per request. */
  outputTokensPerSecond: `${METRIC_PREFIX}output_tokens_per_second`,
  /** Counter {consumer, model, build}: prompt tokens, as the tokenizer counted them. */
  promptTokens: `${METRIC_PREFIX}prompt_tokens_total`,
  /** Counter {consumer, model, build}: generated tokens returned. */
  outputTokens: `${METRIC_PREFIX}output_tokens_total`,
  /** Counter {status, code, consumer, model, build}: refused or failed requests (4xx/5xx). */
  errors: `${METRIC_PREFIX}errors_total`,
  /** Gauge {consumer, model, build}: generations in flight. */
  inflight: `${METRIC_PREFIX}inflight_requests`,
  /** Counter {reason, model, build}: Triton calls the gateway cancelled (client_disconnect, stop_sequence, timeout). */
  upstreamCancelled: `${METRIC_PREFIX}upstream_cancelled_total`,
  /**
   * Gauge {model}: requests of a model that may sleep held on this pod, waiting for its Triton to be
   * ready (admission/holding.ts). One series per served model from start-up, 0 when none is held (always
   * 0 for a model that never sleeps): a model's ScaledObject activates from 0 replicas on its sum
   * across the gateway pods.
   */
  heldRequests: `${METRIC_PREFIX}held_requests`,
  /** Gauge: 1 while this pod cannot reach the shared store (per-pod limits), else 0; absent without a store. */
  storeDegraded: `${METRIC_PREFIX}store_degraded`,
  /** Gauge: gateway pods this pod last counted in the store (the divisor of degraded limits). */
  storePods: `${METRIC_PREFIX}store_pods`,
  /**
   * Gauge {model, canary}: one series per model with a canary (canary: its id), 0 while the canary
   * takes its share of new requests, 1 once it is rolled back (canary/canaryMonitor.ts). The stack's
   * TritonFtCanaryRolledBack alert reads its max across pods.
   */
  canaryRolledBack: `${METRIC_PREFIX}canary_rolled_back`,
  /** Counter {model, canary, reason}: rollback decisions, counted once by the pod that made the decision (error_rate, ttft). */
  canaryRollbacks: `${METRIC_PREFIX}canary_rollbacks_total`,
} as const;

export const LABELS = {
  route: "route",
  status: "status",
  consumer: "consumer",
  code: "code",
  reason: "reason",
  /**
   * The served model id the request was routed to. Absent on requests routed to no model (probes,
   * /v1/models, refusals before routing): a name a client made up never becomes a label value,
   * so the series stay bounded by the config.
   */
  model: "model",
  /**
   * Which build of the model served the request: `stable`, or `canary` for the share sent to a
   * model's canary (canary/weightedSplit.ts). Every per-model series carries it; `stable` for a
   * model without a canary, and for a request refused before a build was picked.
   */
  build: "build",
  /** The canary's id on the canary series. */
  canary: "canary",
} as const;

/** Unauthenticated requests carry this consumer label. */
export const ANONYMOUS = "anonymous";

const LATENCY_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

export class GatewayMetrics {
  readonly registry = new Registry();
  readonly requests: Counter<"route" | "status" | "consumer" | "model" | "build">;
  readonly requestDuration: Histogram<"route" | "consumer" | "model" | "build">;
  readonly timeToFirstToken: Histogram<"route" | "consumer" | "model" | "build">;
  readonly outputTokensPerSecond: Histogram<"route" | "consumer" | "model" | "build">;
  readonly promptTokens: Counter<"consumer" | "model" | "build">;
  readonly outputTokens: Counter<"consumer" | "model" | "build">;
  readonly errors: Counter<"status" | "code" | "consumer" | "model" | "build">;
  readonly inflight: Gauge<"consumer" | "model" | "build">;
  readonly upstreamCancelled: Counter<"reason" | "model" | "build">;
  readonly heldRequests: Gauge<"model">;
  readonly canaryRolledBack: Gauge<"model" | "canary">;
  readonly canaryRollbacks: Counter<"model" | "canary" | "reason">;
  /** Only with a store (store/storePlugin.ts registers them): a pod without one exports neither. */
  storeDegraded: Gauge | undefined;
  storePods: Gauge | undefined;

  constructor() {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry, prefix: METRIC_PREFIX });
    this.requests = new Counter({
      name: METRICS.requests,
      help: "Requests answered, by route, HTTP status, consumer and model.",
      labelNames: [LABELS.route, LABELS.status, LABELS.consumer, LABELS.model, LABELS.build],
      registers,
    });
    this.requestDuration = new Histogram({
      name: METRICS.requestDuration,
      help: "Request latency from arrival to the last byte, seconds.",
      labelNames: [LABELS.route, LABELS.consumer, LABELS.model, LABELS.build],
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.timeToFirstToken = new Histogram({
      name: METRICS.timeToFirstToken,
      help: "Time from arrival to the first generated text, seconds.",
      labelNames: [LABELS.route, LABELS.consumer, LABELS.model, LABELS.build],
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.outputTokensPerSecond = new Histogram({
      name: METRICS.outputTokensPerSecond,
      help: "Generated tokens per second of generation time, per request.",
      labelNames: [LABELS.route, LABELS.consumer, LABELS.model, LABELS.build],
      buckets: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000],
      registers,
    });
    this.promptTokens = new Counter({
      name: METRICS.promptTokens,
      help: "Prompt tokens processed.",
      labelNames: [LABELS.consumer, LABELS.model, LABELS.build],
      registers,
    });
    this.outputTokens = new Counter({
      name: METRICS.outputTokens,
      help: "Generated tokens returned.",
      labelNames: [LABELS.consumer, LABELS.model, LABELS.build],
      registers,
    });
    this.errors = new Counter({
      name: METRICS.errors,
      help: "Refused or failed requests, by HTTP status, error code, consumer and model.",
      labelNames: [LABELS.status, LABELS.code, LABELS.consumer, LABELS.model, LABELS.build],
      registers,
    });
    this.inflight = new Gauge({
      name: METRICS.inflight,
      help: "Generations in flight, by consumer and model.",
      labelNames: [LABELS.consumer, LABELS.model, LABELS.build],
      registers,
    });
    // A series from start-up (anonymous requests never generate, so it stays 0): the autoscaler's
    // sum then exists whenever the scrape works, and an empty result means a broken scrape.
    this.inflight.set({ [LABELS.consumer]: ANONYMOUS }, 0);
    this.upstreamCancelled = new Counter({
      name: METRICS.upstreamCancelled,
      help: "Triton calls cancelled by the gateway, by reason and model.",
      labelNames: [LABELS.reason, LABELS.model, LABELS.build],
      registers,
    });
    this.heldRequests = new Gauge({
      name: METRICS.heldRequests,
      help: "Requests held on this pod while their model's Triton wakes, by model (always 0 for a model that never sleeps).",
      labelNames: [LABELS.model],
      registers,
    });
    this.canaryRolledBack = new Gauge({
      name: METRICS.canaryRolledBack,
      help: "1 once the model's canary is rolled back (new requests go to the stable build), 0 while it takes its share.",
      labelNames: [LABELS.model, LABELS.canary],
      registers,
    });
    this.canaryRollbacks = new Counter({
      name: METRICS.canaryRollbacks,
      help: "Canary rollback decisions made by this pod, by model, canary id and reason (error_rate, ttft).",
      labelNames: [LABELS.model, LABELS.canary, LABELS.reason],
      registers,
    });
  }

  /** The store's gauges, from the moment a store is configured. */
  withStore(): { degraded: Gauge; pods: Gauge } {
    this.storeDegraded ??= new Gauge({
      name: METRICS.storeDegraded,
      help: "1 while the shared store is unreachable from this pod (limits divided by the pod count), else 0.",
      registers: [this.registry],
    });
    this.storePods ??= new Gauge({
      name: METRICS.storePods,
      help: "Gateway pods counted by their heartbeats in the shared store.",
      registers: [this.registry],
    });
    return { degraded: this.storeDegraded, pods: this.storePods };
  }
}
