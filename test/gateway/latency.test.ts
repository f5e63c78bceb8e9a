/**
 * Huge prompts do not stall small requests. Before this gateway, one 5 MB
 * prompt was tokenized in full (17.9 s) and a concurrent 2-token request
 * went from 5 ms to 12 s. Now the gateway refuses it by its size before
 * reading it as JSON (413), and a prompt just under the byte cap is refused
 * by preprocessing's token check after a tokenization of at most
 * maxPromptBytes. The bound checked here: while one client sends 5 MB prompts
 * back to back and another sends prompts at the byte cap, the p95 latency of a small request grows by less than
 * LATENCY_BOUND_MS over its p95 alone.
 */
import { describe, expect, inject, it } from "vitest";

const h = inject("gateway");
const MODEL = h.model.id;
const KEY = h.main.keys.latency;
const SAMPLES = 30;
/**
 * Allowed growth of a small request's p95 latency when huge prompts arrive with it. The defect
 * this guards against cost 12 s; measured growth is about 100 ms on an idle 2-core machine, but
 * the suite runs on 2 cores shared with other jobs, where 250 ms was exceeded by noise alone
 * (250.2 ms once), so the bound leaves room for that noise and still fails on any real stall.
 */
export const LATENCY_BOUND_MS = 1000;

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

async function small(): Promise<number> {
  const started = performance.now();
  const r = await fetch(`${h.main.url}/v1/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
    body: JSON.stringify({ model: MODEL, prompt: "hello there", max_tokens: 2, temperature: 0 }),
  });
  await r.text();
  expect(r.status).toBe(200);
  return performance.now() - started;
}

async function sample(n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push(await small());
  return out;
}

describe("latency under huge prompts", () => {
  it(`keeps a small request's p95 within ${LATENCY_BOUND_MS} ms of its unloaded p95`, async () => {
    await sample(5); // warm up connections and the model instances
    const baseline = await sample(SAMPLES);

    const fiveMb = JSON.stringify({ model: MODEL, prompt: "word ".repeat(1_000_000), max_tokens: 2 });
    // Just under the byte cap: passes the gateway, tokenized by preprocessing, refused as too many tokens.
    const atCap = JSON.stringify({
      model: MODEL,
      prompt: "ab ".repeat(Math.floor((h.model.maxInputLen * 32) / 3)),
      max_tokens: 2,
    });
    const refused = { fiveMb: 0, atCap: 0 };
    const huge = async (body: string, expectStatus: number, counter: "fiveMb" | "atCap"): Promise<void> => {
      const r = await fetch(`${h.main.url}/v1/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${h.main.keys["team-b"]}`, "content-type": "application/json" },
        body,
      });
      await r.text();
      expect(r.status).toBe(expectStatus);
      refused[counter] += 1;
    };
    // Each small request is sent together with a 5 MB prompt and a prompt at the byte cap.
    const loaded: number[] = [];
    for (let i = 0; i < SAMPLES; i++) {
      const [latency] = await Promise.all([small(), huge(fiveMb, 413, "fiveMb"), huge(atCap, 400, "atCap")]);
      loaded.push(latency);
    }

    const report = {
      baselineP50: percentile(baseline, 50),
      baselineP95: percentile(baseline, 95),
      loadedP50: percentile(loaded, 50),
      loadedP95: percentile(loaded, 95),
      refused5MbPrompts: refused.fiveMb,
      refusedAtCapPrompts: refused.atCap,
    };
    console.log(
      `latency (ms): ${JSON.stringify(Object.fromEntries(Object.entries(report).map(([k, v]) => [k, Math.round(v)])))}`,
    );
    expect(refused).toEqual({ fiveMb: SAMPLES, atCap: SAMPLES });
    expect(report.loadedP95 - report.baselineP95).toBeLessThan(LATENCY_BOUND_MS);
  });
});
