/**
 * Where the workload's series live in Prometheus and the queries over them:
 * metric names, label selectors, and the expressions the
 * scalers (render/scaling.ts), the alert rules and the dashboard
 * (render/observability.ts) share. Pure strings and numbers; the scrape
 * interval and rate window are conventions/metrics.ts (the scaling arithmetic
 * reads them too).
 */
import { RATE_WINDOW_SECONDS } from "../conventions/metrics";
import { ENSEMBLE_MODEL } from "../conventions/workload";

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

/**
 * vLLM's engine metrics, as the project's vLLM model reports them on Triton's
 * metrics port under vLLM's own names and labels
 * (images/vllm/python/tritonvllm/metrics.py METRICS; test/vllm/test_metrics.py
 * checks them against vLLM's source and a real server's /metrics).
 */
export const VLLM_METRICS = {
  running: "vllm:num_requests_running",
  waiting: "vllm:num_requests_waiting",
  kvCacheUsage: "vllm:kv_cache_usage_perc",
  promptTokens: "vllm:prompt_tokens_total",
  generationTokens: "vllm:generation_tokens_total",
  preemptions: "vllm:num_preemptions_total",
  timeToFirstToken: "vllm:time_to_first_token_seconds",
  queueTime: "vllm:request_queue_time_seconds",
} as const;
/** vLLM's label naming the served model: the Triton model's name, `ensemble` for every model of a stack. */
export const VLLM_MODEL_LABEL = "model_name";

/** The matchers of one vLLM model's engine series: its metrics Service and the ensemble. */
export function vllmSelectorText(sel: MetricsSelector): string {
  return selectorText(sel, { [VLLM_MODEL_LABEL]: ENSEMBLE_MODEL });
}

/**
 * A vLLM model's queue/compute ratio. vLLM queues inside the model (Triton
 * hands every request over at once, so Triton's queue time stays near 0);
 * its scheduler reports the requests waiting and running. By Little's law the
 * mean waiting count over the mean running count is the mean time waiting over
 * the mean time running: the ratio queueComputeRatioQuery gives an FT model, so
 * `serving.autoscaling.target` means the same for both engines. The divisor is
 * clamped to one request (requests wait only behind a running one); missing
 * series give an empty result, as for FT, so a broken scrape never scales down.
 */
export function vllmQueueRunningRatioQuery(sel: MetricsSelector): string {
  const s = vllmSelectorText(sel);
  const w = `${RATE_WINDOW_SECONDS}s`;
  return `sum(avg_over_time(${VLLM_METRICS.waiting}{${s}}[${w}])) / clamp_min(sum(avg_over_time(${VLLM_METRICS.running}{${s}}[${w}])), 1)`;
}

/** The gateway's in-flight gauge (images/gateway/src/telemetry/metrics.ts METRICS.inflight). */
export const GATEWAY_INFLIGHT_METRIC = "triton_ft_gateway_inflight_requests";

/** Requests the gateway holds for a model that sleeps (images/gateway/src/telemetry/metrics.ts METRICS.heldRequests). */
export const GATEWAY_HELD_METRIC = "triton_ft_gateway_held_requests";
/** Requests the gateway has answered (METRICS.requests), by model among other labels. */
export const GATEWAY_REQUESTS_METRIC = "triton_ft_gateway_requests_total";

/**
 * Whether a model that sleeps is in use, as 0 or 1: requests held for it on
 * any gateway pod, in flight to it, or answered within the rate window. Held
 * requests wake it (KEDA activates from 0 on any value above 0); the other two
 * keep it awake, since KEDA polls every few seconds and a short request
 * between two polls would otherwise count as idleness. Capped at 1 so, as an
 * AverageValue metric with target 1, it never asks for more than one pod: the
 * queue/compute ratio scales from there. The selector is the namespace and the
 * model id (the gauge's `model` label), not the gateway's Service, which is
 * named after the stack's first model. Every gateway pod exports the held gauge
 * of every model that sleeps from start-up, so an empty result is a broken
 * scrape: an error, as with the other scalers; the other two series appear
 * only with traffic, hence their `or vector(0)`.
 */
export function modelInUseQuery(namespace: string, model: string): string {
  const s = labelMatchers({ namespace, model });
  const w = `${RATE_WINDOW_SECONDS}s`;
  return `clamp_max(sum(${GATEWAY_HELD_METRIC}{${s}}) + (sum(${GATEWAY_INFLIGHT_METRIC}{${s}}) or vector(0)) + (sum(increase(${GATEWAY_REQUESTS_METRIC}{${s}}[${w}])) or vector(0)), 1)`;
}

/** Generations in flight through every gateway pod. */
export function gatewayInflightQuery(sel: MetricsSelector): string {
  return `sum(${GATEWAY_INFLIGHT_METRIC}{${selectorText(sel)}})`;
}
