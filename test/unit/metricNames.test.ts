/**
 * Every metric the scaler, the alerts and the dashboard read must exist. Each
 * name belongs to one exporter, told apart by prefix:
 *   nv_*    Triton: checked against a real tritonserver's /metrics in
 *           test/triton/metricNames.test.ts (here only that the prefix routes there);
 *   DCGM_*  the DCGM exporter: in its published default counters (vendored) and in
 *           the counters file this stack configures;
 *   kube_*  kube-state-metrics: in its documented metrics (vendored);
 *   triton_ft_gateway_*  the gateway: in the exposition of the gateway's own metrics
 *           registry (images/gateway/src/telemetry/metrics.ts, prom-client), here; and on a
 *           running gateway's /metrics after real requests in test/gateway/metricNames.test.ts;
 *   vllm:*  a vLLM model's engine metrics: among those the project's vLLM model reports
 *           (images/vllm/python/tritonvllm/metrics.py METRICS, read here; a histogram's
 *           series are its _bucket, _sum and _count), which test/vllm/test_metrics.py finds
 *           in vLLM's own source and, with samples, on a real tritonserver's /metrics.
 * A name from any other exporter fails the test until its source is added here.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { GatewayMetrics } from "../../images/gateway/src/telemetry/metrics";
import { GATEWAY_INFLIGHT_METRIC } from "../../infra/render/prometheus";
import { DCGM_COUNTERS } from "../../infra/render/observability";
import { exportedSeriesNames } from "../lib/exposition";
import { gpt2Config } from "../lib/fixtures";
import { PromQLSyntaxError, metricNames } from "../lib/promqlMetrics";
import { gptjAutoscaled, renderSeedModelsScaling, resolvedStack, shippedQueries } from "../lib/scalingFixtures";
import { renderOneModelScaling } from "../lib/scalingFixtures";
import type { StackScalingManifests } from "../../infra/render/scaling";
import { SEED_CANARY_STACK } from "../lib/modelsForm";
import { renderMixedScaling, seedMixedConfig } from "../lib/mixedStack";

const DATA = path.resolve(__dirname, "../data/metrics");

/**
 * The series the vLLM model reports: each METRICS entry of tritonvllm/metrics.py
 * (name and kind), a histogram as its _bucket, _sum and _count series.
 */
export function vllmExported(): Set<string> {
  const source = readFileSync(path.resolve(__dirname, "../../images/vllm/python/tritonvllm/metrics.py"), "utf8");
  const specs = [...source.matchAll(/MetricSpec\(\s*"(vllm:[a-z0-9_]+)",\s*(COUNTER|GAUGE|HISTOGRAM)/g)];
  const out = new Set<string>();
  for (const [, name, kind] of specs) {
    if (!name) continue;
    if (kind === "HISTOGRAM") for (const suffix of ["_bucket", "_sum", "_count"]) out.add(`${name}${suffix}`);
    else out.add(name);
  }
  return out;
}

/** Fields dcgm-exporter publishes by default: uncommented lines of default-counters.csv. */
function dcgmPublished(): Set<string> {
  const lines = readFileSync(path.join(DATA, "dcgm-exporter-default-counters.csv"), "utf8").split("\n");
  return new Set(
    lines
      .map((l) => l.trim())
      .filter((l) => l !== "" && !l.startsWith("#"))
      .map((l) => l.split(",")[0].trim()),
  );
}
function kubeStateMetrics(): Set<string> {
  const lines = readFileSync(path.join(DATA, "kube-state-metrics-v2.20.0.txt"), "utf8").split("\n");
  return new Set(lines.map((l) => l.trim()).filter((l) => l !== "" && !l.startsWith("#")));
}

const stacks: Record<string, () => StackScalingManifests[]> = {
  autoscaled: () => [renderOneModelScaling(resolvedStack(gptjAutoscaled()))],
  fixed: () => [renderOneModelScaling(resolvedStack(gpt2Config()))],
  // The first model's render carries the stack's dashboard rows and per-model alerts; each its own scaler.
  "several models": () => [renderSeedModelsScaling()],
  // The canary's alert and panels read the gateway's canary series (canary/canaryPlugin.ts).
  "a canary": () => [renderSeedModelsScaling(false, SEED_CANARY_STACK)],
  // vLLM models beside an FT model: their scaler (the inline stack autoscales them), row and alerts
  // read vLLM's engine series.
  "FT and vLLM models": () => [renderMixedScaling()],
  "the committed mixed stack": () => [renderMixedScaling(seedMixedConfig())],
};

describe("PromQL metric-name extraction", () => {
  it("finds the selected metrics, not functions, labels, ranges, grouping or numbers", () => {
    expect(
      metricNames(
        'sum by (Hostname, gpu) (rate(a_total{model="x",job=~"b|c"}[5m])) / clamp_min(sum(rate(b_us[1m])), 1e-9) > 0.92',
      ),
    ).toEqual(["a_total", "b_us"]);
    expect(metricNames("(x >= 8) and on() (y > 0.5)")).toEqual(["x", "y"]);
    expect(metricNames('absent(up{job="z"})')).toEqual(["up"]);
    expect(metricNames("vector(0.5)")).toEqual([]);
  });

  it("refuses invalid PromQL", () => {
    expect(() => metricNames("sum(rate(foo[5m])")).toThrow(PromQLSyntaxError);
    expect(() => metricNames('foo{a="b"} >')).toThrow(PromQLSyntaxError);
  });
});

describe("metric names in the scaler, alerts and dashboard", () => {
  const dcgm = dcgmPublished();
  const ksm = kubeStateMetrics();
  const configured = new Set(DCGM_COUNTERS.map(([f]) => f));
  const vllm = vllmExported();

  it("reads the vLLM model's metrics (a histogram as its three series)", () => {
    expect(vllm.has("vllm:num_requests_waiting")).toBe(true);
    expect(vllm.has("vllm:time_to_first_token_seconds_bucket")).toBe(true);
    expect(vllm.has("vllm:time_to_first_token_seconds")).toBe(false);
    expect(vllm.size).toBeGreaterThan(10);
  });

  it("the vendored lists are non-trivial", () => {
    expect(dcgm.has("DCGM_FI_DEV_GPU_UTIL")).toBe(true);
    // Commented out in the published file: not exported.
    expect(dcgm.has("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL")).toBe(false);
    expect(ksm.has("kube_deployment_spec_replicas")).toBe(true);
  });

  for (const [label, make] of Object.entries(stacks)) {
    it(`names only exported metrics (${label})`, async () => {
      // A gateway with a shared store (the stacks' default): its store gauges exist only then.
      const metrics = new GatewayMetrics();
      metrics.withStore();
      const gateway = exportedSeriesNames(await metrics.registry.metrics());
      const unknown: string[] = [];
      let triton = 0;
      let gatewayNames = 0;
      let vllmNames = 0;
      for (const { where, expr } of make().flatMap(shippedQueries)) {
        for (const name of metricNames(expr)) {
          if (name.startsWith("nv_")) triton++;
          else if (name.startsWith("DCGM_")) {
            if (!dcgm.has(name)) unknown.push(`${where}: ${name} is not a default dcgm-exporter counter`);
            if (!configured.has(name)) unknown.push(`${where}: ${name} is not in the stack's DCGM counters file`);
          } else if (name.startsWith("triton_ft_gateway_")) {
            gatewayNames++;
            if (!gateway.has(name)) unknown.push(`${where}: ${name} is not a series the gateway exports`);
          } else if (name.startsWith("vllm:")) {
            vllmNames++;
            if (!vllm.has(name)) unknown.push(`${where}: ${name} is not a series the vLLM model reports`);
          } else if (name.startsWith("kube_")) {
            if (!ksm.has(name)) unknown.push(`${where}: ${name} is not a kube-state-metrics v2.20.0 metric`);
          } else unknown.push(`${where}: ${name} comes from no exporter this stack knows`);
        }
      }
      expect(unknown).toEqual([]);
      expect(triton).toBeGreaterThan(0);
      // TTFT, latency percentiles, tokens/s, in flight: the dashboard reads the gateway.
      expect(gatewayNames).toBeGreaterThan(8);
      // The stack with vLLM models reads their engine series; an FT-only stack none.
      if (label === "FT and vLLM models" || label === "the committed mixed stack") expect(vllmNames).toBeGreaterThan(8);
      else expect(vllmNames).toBe(0);
    });
  }

  it("the gateway's scaler reads the gateway's in-flight gauge", async () => {
    const text = await new GatewayMetrics().registry.metrics();
    expect(text).toMatch(new RegExp(`^# TYPE ${GATEWAY_INFLIGHT_METRIC} gauge$`, "m"));
    // Before any request: a zero series, so the scaler's sum is 0 (not empty, which it reads as a broken scrape).
    expect(text).toMatch(new RegExp(`^${GATEWAY_INFLIGHT_METRIC}\\{consumer="anonymous"\\} 0$`, "m"));
  });

  it("every configured DCGM counter is a published one", () => {
    for (const f of configured) expect(dcgm.has(f), f).toBe(true);
  });
});
