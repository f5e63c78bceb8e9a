/**
 * Overload of Triton itself: the real tritonserver refuses a request when the
 * model's queue is full ("Exceeds maximum queue size"), and the gateway turns
 * that into 503 with Retry-After; once the load is gone, requests succeed.
 *
 * Deterministic, no timing: the `queued` gateway calls a copy of the ensemble
 * with one instance and `max_queue_size: 1` (QUEUED_ENSEMBLE), and the FT
 * stand-in holds every batch while the hold file exists. With the hold on,
 * one request occupies the instance, at most a couple wait, and every other
 * concurrent request can only be refused: nothing can finish with 200 until
 * the test removes the file. The gateway's own admission limits are far
 * above the burst, so a 503 here can only be Triton's.
 */
import { rmSync, writeFileSync } from "node:fs";
import { afterEach, describe, expect, inject, it } from "vitest";
import { QUEUED_ENSEMBLE } from "./globalSetup";

const h = inject("gateway");
const BURST = 8;

interface Outcome {
  status: number;
  retryAfter: string | null;
  body: { error?: { message: string; code: string; type: string } };
}

async function complete(base: string, key: string): Promise<Outcome> {
  const r = await fetch(`${base}/v1/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model: h.model.id, prompt: "alpha beta gamma", max_tokens: 2, temperature: 0 }),
  });
  return { status: r.status, retryAfter: r.headers.get("retry-after"), body: (await r.json()) as Outcome["body"] };
}

/** Resolves once `n` of the promises have settled (in any order), or rejects after `ms`. */
function firstSettled<T>(promises: Promise<T>[], n: number, ms: number): Promise<T[]> {
  return new Promise((resolve, reject) => {
    const done: T[] = [];
    const timer = setTimeout(() => reject(new Error(`only ${done.length} of ${n} responses within ${ms / 1000}s`)), ms);
    for (const p of promises) {
      void p.then((v) => {
        done.push(v);
        if (done.length === n) {
          clearTimeout(timer);
          resolve([...done]);
        }
      });
    }
  });
}

describe(`Triton queue full (${QUEUED_ENSEMBLE.name}: 1 instance, max_queue_size ${QUEUED_ENSEMBLE.maxQueueSize})`, () => {
  afterEach(() => rmSync(h.standinHoldFile, { force: true }));

  it("answers 503 with Retry-After while Triton's queue is full, then serves normally", async () => {
    const key = h.queued.keys["team-a"];
    writeFileSync(h.standinHoldFile, "held by test/gateway/queue.test.ts\n");
    const burst = Array.from({ length: BURST }, () => complete(h.queued.url, key));
    // With the stand-in holding, whatever answers first was refused: nothing can complete.
    const early = await firstSettled(burst, 1, 60_000);
    expect(early[0].status, JSON.stringify(early[0].body)).toBe(503);
    rmSync(h.standinHoldFile, { force: true });

    const all = await Promise.all(burst);
    const refused = all.filter((o) => o.status === 503);
    const served = all.filter((o) => o.status === 200);
    expect(refused.length + served.length, JSON.stringify(all.map((o) => o.status))).toBe(BURST);
    // One in the instance plus the queue's one, and perhaps one the batcher already took: the rest are refused.
    expect(served.length).toBeGreaterThanOrEqual(1);
    expect(refused.length).toBeGreaterThanOrEqual(BURST - 3);
    for (const o of refused) {
      expect(Number(o.retryAfter)).toBeGreaterThanOrEqual(1);
      expect(o.body.error?.code).toBe("overloaded");
      expect(o.body.error?.type).toBe("server_error");
      // Triton's own refusal, passed through: not the gateway's admission.
      expect(o.body.error?.message).toMatch(/queue/i);
    }

    // The load is gone: the same gateway and model serve again, and so does the main ensemble.
    for (let i = 0; i < 3; i++) expect((await complete(h.queued.url, key)).status).toBe(200);
    expect((await complete(h.main.url, h.main.keys["team-a"])).status).toBe(200);
  });
});
