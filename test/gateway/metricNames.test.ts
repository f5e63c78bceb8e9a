/**
 * The gateway metrics the dashboard, the alerts and the gateway's autoscaler
 * read, checked against what a running gateway really exports: after
 * a streamed and a plain completion and one refused request, every `triton_ft_gateway_*` name the
 * shipped PromQL selects has samples on its /metrics. Triton's names are checked
 * in test/triton/metricNames.test.ts, the other exporters' in test/unit/metricNames.test.ts.
 */
import { describe, expect, inject, it } from "vitest";
import { gpt2Config } from "../lib/fixtures";
import { metricNames } from "../lib/promqlMetrics";
import { gptjAutoscaled, renderOneModelScaling, resolvedStack, shippedQueries } from "../lib/scalingFixtures";

const h = inject("gateway");

/** Names with at least one sample line in a Prometheus text exposition. */
function sampled(exposition: string): Set<string> {
  const out = new Set<string>();
  for (const line of exposition.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    out.add(/^[^{ ]+/.exec(line)?.[0] ?? "");
  }
  return out;
}

describe("gateway metrics used by the dashboard, alerts and autoscaler", () => {
  it("have samples on a running gateway once it has served requests", async () => {
    const key = h.plain.keys["team-a"];
    const headers = { authorization: `Bearer ${key}`, "content-type": "application/json" };
    for (const stream of [true, false]) {
      const r = await fetch(`${h.plain.url}/v1/completions`, {
        method: "POST",
        headers,
        body: JSON.stringify({ model: h.model.id, prompt: "metrics please", max_tokens: 4, stream }),
      });
      expect(r.status).toBe(200);
      await r.text();
    }
    // A refused request: the error counter has samples only once something failed.
    const bad = await fetch(`${h.plain.url}/v1/completions`, {
      method: "POST",
      headers,
      body: JSON.stringify({ model: h.model.id, prompt: "x", max_tokens: -1 }),
    });
    expect(bad.status).toBe(400);
    await bad.text();
    const exported = sampled(await (await fetch(`${h.plain.metricsUrl}/metrics`)).text());

    const missing: string[] = [];
    let checked = 0;
    for (const m of [
      renderOneModelScaling(resolvedStack(gptjAutoscaled())),
      renderOneModelScaling(resolvedStack(gpt2Config())),
    ])
      for (const { where, expr } of shippedQueries(m))
        for (const name of metricNames(expr).filter((n) => n.startsWith("triton_ft_gateway_"))) {
          checked++;
          if (!exported.has(name)) missing.push(`${where}: ${name}`);
        }
    expect(missing).toEqual([]);
    // TTFT p50/p95, latency p50/p95, tokens/s, requests, errors, in flight: in both stacks.
    expect(checked).toBeGreaterThan(16);
  });

  it("label requests, tokens and latencies with the model served, on a gateway serving two", async () => {
    const headers = { authorization: `Bearer ${h.multi.keys["team-a"]}`, "content-type": "application/json" };
    const ids = [h.models.first.id, h.models.second.id];
    for (const model of ids) {
      const r = await fetch(`${h.multi.url}/v1/completions`, {
        method: "POST",
        headers,
        body: JSON.stringify({ model, prompt: "label me", max_tokens: 3, stream: true }),
      });
      expect(r.status).toBe(200);
      await r.text();
    }
    const exposition = await (await fetch(`${h.multi.metricsUrl}/metrics`)).text();
    const names = [
      "requests_total",
      "request_duration_seconds_count",
      "time_to_first_token_seconds_count",
      "output_tokens_per_second_count",
      "prompt_tokens_total",
      "output_tokens_total",
    ].map((n) => `triton_ft_gateway_${n}`);
    const missing = names.flatMap((name) =>
      ids
        .filter((id) => !new RegExp(`^${name}\\{[^}]*model="${id}"[^}]*\\} [1-9]`, "m").test(exposition))
        .map((id) => `${name}{model="${id}"}`),
    );
    expect(missing).toEqual([]);
  });
});
