/**
 * Where the workload's series live in Prometheus and the queries over them:
 * metric names, label selectors, and the expressions the
 * scalers (render/scaling.ts), the alert rules and the dashboard
 * (render/observability.ts) share. Pure strings and numbers; the scrape
 * interval and rate window are conventions/metrics.ts (the scaling arithmetic
 * reads them too).
 */
import { RATE_WINDOW_SECONDS } from "../conventions/metrics";

/** The FT model: the pipeline's GPU stage and its bottleneck; the Python stages queue behind it. */
export const SCALED_MODEL = "fastertransformer";
/** Triton counters (µs, cumulative) the ratio is built from. */
export const QUEUE_METRIC = "nv_inference_queue_duration_us";
export const COMPUTE_METRIC = "nv_inference_compute_infer_duration_us";

/** Where the Triton metrics of this workload live in Prometheus: the labels a ServiceMonitor (or the documented scrape config) attaches. */
export interface MetricsSelector {
  namespace: string;
  /** The metrics Service's name (Prometheus `service` label). */
  service: string;
}

/** PromQL equality matchers, in the order given: `a="x",b="y"`. */
export function labelMatchers(labels: Record<string, string>): string {
  return Object.entries(labels)
    .map(([k, v]) => `${k}="${v}"`)
    .join(",");
}

export function selectorText(sel: MetricsSelector, extra: Record<string, string> = {}): string {
  return labelMatchers({ namespace: sel.namespace, service: sel.service, ...extra });
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

/** The gateway's in-flight gauge (images/gateway/src/telemetry/metrics.ts METRICS.inflight). */
export const GATEWAY_INFLIGHT_METRIC = "triton_ft_gateway_inflight_requests";

/** Generations in flight through every gateway pod. */
export function gatewayInflightQuery(sel: MetricsSelector): string {
  return `sum(${GATEWAY_INFLIGHT_METRIC}{${selectorText(sel)}})`;
}
