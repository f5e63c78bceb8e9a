/**
 * The Triton metrics the autoscaler, the alerts and the dashboard read, checked
 * against what a real tritonserver exports (nvidia-pytriton's build, after it
 * served requests through every model of the repository). The other exporters'
 * names are checked in test/unit/metricNames.test.ts.
 */
import { describe, expect, inject, it } from "vitest";
import { TritonHttpClient } from "../../infra/client/http";
import { generate } from "../../infra/client/ensemble";
import { SCALED_MODEL } from "../../infra/render/prometheus";

import { gpt2Config } from "../lib/fixtures";
import { metricNames } from "../lib/promqlMetrics";
import { gptjAutoscaled, resolvedStack, shippedQueries } from "../lib/scalingFixtures";
import { renderOneModelScaling } from "../lib/scalingFixtures";

import { ENSEMBLE_MODEL } from "../../infra/conventions/workload";
const triton = inject("triton");

/** Metric families in a Prometheus exposition: `# TYPE <name> <type>` lines. */
function families(exposition: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const m of exposition.matchAll(/^# TYPE (\S+) (\S+)$/gm)) out.set(m[1], m[2]);
  return out;
}

describe("Triton metrics used by the scaler, alerts and dashboard", () => {
  it("exist on a real tritonserver, with the model label the queries select", async () => {
    const client = new TritonHttpClient(triton.http, { timeoutMs: 30_000 });
    try {
      // Per-model counters appear once the models have served a request.
      await generate(client, ["metrics please"], { maxTokens: 2 });
    } finally {
      client.close();
    }
    const text = await (await fetch(triton.metrics)).text();
    const exported = families(text);
    expect(exported.size).toBeGreaterThan(5);

    const missing: string[] = [];
    let checked = 0;
    for (const m of [
      renderOneModelScaling(resolvedStack(gptjAutoscaled())),
      renderOneModelScaling(resolvedStack(gpt2Config())),
    ]) {
      for (const { where, expr } of shippedQueries(m)) {
        for (const name of metricNames(expr).filter((n) => n.startsWith("nv_"))) {
          checked++;
          if (!exported.has(name)) missing.push(`${where}: ${name}`);
          // The queries select model="fastertransformer" / "ensemble": both must carry samples.
          for (const model of [SCALED_MODEL, ENSEMBLE_MODEL]) {
            if (exported.has(name) && !new RegExp(`^${name}\\{[^}]*model="${model}"`, "m").test(text))
              missing.push(`${where}: ${name} has no sample for model ${model}`);
          }
        }
      }
    }
    expect(missing).toEqual([]);
    expect(checked).toBeGreaterThan(10);
    // The ratio's counters are counters (rate() over a gauge would be wrong).
    expect(exported.get("nv_inference_queue_duration_us")).toBe("counter");
    expect(exported.get("nv_inference_compute_infer_duration_us")).toBe("counter");
    expect(exported.get("nv_inference_pending_request_count")).toBe("gauge");
  });
});
