/**
 * Admission that no client slips past, against the real tritonserver (the FT
 * stand-in cannot cancel a generation, as FT cannot) and a real Valkey/Redis
 * of its own, with two gateway processes sharing it as two pods would, and a
 * third that is killed:
 *
 * - a team limited to one generation in flight opens and drops 20 streams:
 *   the second is refused while the first still generates, another team's
 *   time to first token stays within 1.2× its baseline (measured in the same
 *   run while the team uses what its limit allows), and the team's usage
 *   counts every token generated;
 * - the store stopped while a permit is held, the generation ending during
 *   the outage: once the pods are back on the store, the ended request's
 *   permit refuses no one;
 * - a window that spans an outage and its end admits at most the limit plus
 *   one request per pod;
 * - a pod killed with SIGKILL while holding a permit: the permit lapses
 *   within the lease (15 s).
 */
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { LEASE_TIMEOUT_MS, WINDOW_MS } from "../../images/gateway/src/admission/windowRule";
import { METRICS } from "../../images/gateway/src/telemetry/metrics";
import type { UsageReport } from "../../images/gateway/src/usage/usageLedger";
import { renderGatewayConfig } from "../../infra/plan/gatewayConfig";
import { sleep } from "../lib/net";
import { StoreServer } from "../lib/storeServer";
import { STORE_PASSWORD_ENV, storeSection } from "./globalSetup";
import { type RunningGateway, startGateway } from "./harness";

const h = inject("gateway");
/** A test that needs the FT stand-in (its echo, step time, hold file or FT-only refusals): skipped in vLLM mode. */
const itOnFt = it.skipIf(h.upstream === "vllm");
const MODEL = h.model.id;
/** A generation long enough to outlive a burst of requests: the model's longest, at the stand-in's pace. */
const LONG = h.model.maxOutputLen;
const TEAMS = [
  { name: "solo", maxConcurrent: 1, requestsPerMinute: 600 },
  { name: "ghost", maxConcurrent: 1, requestsPerMinute: 600 },
  { name: "victim", requestsPerMinute: 600 },
  { name: "six", requestsPerMinute: 6, maxConcurrent: 16 },
  { name: "doomed", maxConcurrent: 1, requestsPerMinute: 600 },
];

const work = mkdtempSync(path.join(os.tmpdir(), "triton-ft-admission-"));
const store = new StoreServer(path.join(work, "store"));
const stoppers: Array<() => Promise<void>> = [];
let pods: RunningGateway[] = [];
let doomed: RunningGateway;

beforeAll(async () => {
  const info = await store.start();
  const config = {
    ...renderGatewayConfig([{ ...h.model, tritonGrpc: h.triton.grpc, maxInflight: 64 }], {
      requestTimeoutSeconds: 60,
    }),
    store: storeSection(info, "admission:", 3),
  };
  const env = { [STORE_PASSWORD_ENV]: info.password };
  const a = await startGateway(work, "adm-a", config, TEAMS, { env });
  stoppers.push(a.stop);
  const b = await startGateway(work, "adm-b", config, TEAMS, { env, keys: a.gateway.keys });
  stoppers.push(b.stop);
  const c = await startGateway(work, "adm-c", config, TEAMS, { env, keys: a.gateway.keys });
  stoppers.push(c.stop);
  pods = [a.gateway, b.gateway];
  doomed = c.gateway;
}, 120_000);

afterAll(async () => {
  for (const s of stoppers) await s();
  await store.stop();
  rmSync(work, { recursive: true, force: true });
});

function post(
  pod: RunningGateway,
  team: string,
  maxTokens = 1,
  stream = false,
  signal?: AbortSignal,
): Promise<Response> {
  return fetch(`${pod.url}/v1/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${pod.keys[team]}`, "content-type": "application/json" },
    body: JSON.stringify({ model: MODEL, prompt: "hi", max_tokens: maxTokens, temperature: 0, stream }),
    ...(signal ? { signal } : {}),
  });
}

/** Milliseconds to the first streamed chunk of a short completion. */
async function ttft(pod: RunningGateway, team: string): Promise<number> {
  const started = performance.now();
  const r = await post(pod, team, 2, true);
  const reader = r.body!.getReader();
  await reader.read();
  const ms = performance.now() - started;
  while (!(await reader.read()).done);
  return ms;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? Number.NaN;
}

async function usage(pod: RunningGateway, team: string): Promise<UsageReport["today"]["total"]> {
  const r = await fetch(`${pod.url}/v1/usage`, { headers: { authorization: `Bearer ${pod.keys[team]}` } });
  return ((await r.json()) as UsageReport).today.total;
}

async function gauge(pod: RunningGateway, name: string): Promise<number> {
  const text = await (await fetch(`${pod.metricsUrl}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`${name} `));
  return line === undefined ? Number.NaN : Number(line.split(" ").pop());
}

async function until(what: string, check: () => Promise<boolean>, timeoutMs = 30_000): Promise<number> {
  const started = performance.now();
  while (!(await check())) {
    if (performance.now() - started > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
  return performance.now() - started;
}

/** Wait, if needed, until the clock's minute has at least `ms` left (windows are the clock's minutes). */
async function windowWithRoom(ms: number): Promise<void> {
  const left = WINDOW_MS - (Date.now() % WINDOW_MS);
  if (left < ms) await sleep(left + 100);
}

describe("admission that no client slips past", () => {
  // Counts on FT's uncancellable generations at the stand-in's step time; vLLM aborts a dropped stream
  // (test/vllm/gateway.test.ts).
  itOnFt(
    "20 dropped streams: the second is refused while the first generates; another team's TTFT holds; usage counts every token",
    async () => {
      // The victim's baseline: its TTFT while the one-at-a-time team uses what its limit allows, one
      // stream at a time read to the end (FT batches no request into a running generation, so any
      // generation in flight delays others; the limit is what keeps that to one).
      const baseline: number[] = [];
      let busy = true;
      const legit = (async () => {
        for (let i = 0; busy; i++) {
          const r = await post(pods[i % 2], "solo", LONG, true);
          await r.text();
        }
      })();
      for (let i = 0; i < 7; i++) baseline.push(await ttft(pods[i % 2], "victim"));
      busy = false;
      await legit;
      // The last of those is recorded after its response ends, and written to the store within 50 ms.
      await sleep(500);
      const before = await usage(pods[0], "solo");

      const statuses: number[] = [];
      const during: number[] = [];
      let dropping = true;
      const victim = (async () => {
        for (let i = 0; dropping; i++) during.push(await ttft(pods[i % 2], "victim"));
      })();
      const started = performance.now();
      for (let i = 0; i < 20; i++) {
        const controller = new AbortController();
        const r = await post(pods[i % 2], "solo", LONG, true, controller.signal);
        statuses.push(r.status);
        if (r.status === 200) await r.body!.getReader().read();
        controller.abort();
        await sleep(Math.max(0, (i + 1) * 150 - (performance.now() - started)));
      }
      dropping = false;
      await victim;
      expect(statuses[0]).toBe(200);
      expect(statuses[1]).toBe(429);
      const admitted = statuses.filter((s) => s === 200).length;
      // At most one generation at a time over the 3 s: one more each time the last one has finished.
      expect(admitted).toBeLessThanOrEqual(Math.ceil(3000 / (LONG * h.stepMs)) + 1);
      process.stderr.write(
        `dropped streams: ${admitted} of 20 admitted (limit 1 in flight); victim TTFT p50 ${median(baseline).toFixed(1)} ms with the team at its limit, ${median(during).toFixed(1)} ms during the drops\n`,
      );
      expect(median(during)).toBeLessThanOrEqual(1.2 * median(baseline));
      // Every admitted generation ran to its end in Triton, and is billed to the team.
      await until(
        "the abandoned generations ended",
        async () => (await usage(pods[1], "solo")).requests === before.requests + admitted,
      );
      const after = await usage(pods[1], "solo");
      process.stderr.write(
        `dropped streams: usage ${after.completion_tokens - before.completion_tokens} completion tokens for ${admitted} × ${LONG} generated\n`,
      );
      expect(after.completion_tokens - before.completion_tokens).toBe(admitted * LONG);
    },
    90_000,
  );

  it("a permit released while the store is away refuses no one once the pods are back on the store", async () => {
    const long = post(pods[0], "ghost", LONG);
    await sleep(200); // admitted: its permit is in the store
    await store.stop();
    expect((await long).status).toBe(200); // ended during the outage: its release could not be sent
    await store.start();
    const back = performance.now();
    await Promise.all(
      pods.map((pod) => until("exact again", async () => (await gauge(pod, METRICS.storeDegraded)) === 0)),
    );
    process.stderr.write(`store back: both pods exact after ${(performance.now() - back).toFixed(0)} ms\n`);
    await sleep(Math.max(0, 1000 - (performance.now() - back)));
    // Pod B never held it; with the permit still in the store it would refuse for up to 15 s.
    const r = await post(pods[1], "ghost");
    expect(r.status).toBe(200);
  }, 60_000);

  it("a window that spans an outage and its end admits at most the limit plus one request per pod", async () => {
    await windowWithRoom(40_000);
    const statuses: number[] = [];
    const send = async (i: number): Promise<void> => {
      const r = await post(pods[i % 2], "six");
      statuses.push(r.status);
      await r.text();
    };
    // The store goes away as the team starts: each pod admits its part of the whole limit (3 of 6) alone;
    // back, the store must count those, or it would admit the limit once more.
    await store.stop();
    for (let i = 0; i < 10; i++) await send(i);
    await store.start();
    await Promise.all(
      pods.map((pod) => until("exact again", async () => (await gauge(pod, METRICS.storeDegraded)) === 0)),
    );
    for (let i = 0; i < 10; i++) await send(i);
    const admitted = statuses.filter((s) => s === 200).length;
    process.stderr.write(`outage-spanning window: ${admitted} admitted for a limit of 6 on 2 pods\n`);
    expect(statuses.filter((s) => s >= 500)).toEqual([]);
    expect(admitted).toBeLessThanOrEqual(6 + pods.length);
  }, 90_000);

  it("a pod killed with SIGKILL while holding a permit: the permit lapses within the lease", async () => {
    const held = post(doomed, "doomed", LONG).catch(() => undefined);
    await sleep(300);
    process.kill(doomed.pid, "SIGKILL");
    const killed = performance.now();
    await held;
    expect((await post(pods[0], "doomed")).status).toBe(429);
    const lapsed = await until(
      "the killed pod's permit lapsed",
      async () => {
        const r = await post(pods[0], "doomed");
        await r.text();
        return r.status === 200;
      },
      LEASE_TIMEOUT_MS + 5000,
    );
    process.stderr.write(
      `killed pod: its permit lapsed ${((performance.now() - killed) / 1000).toFixed(1)} s after SIGKILL\n`,
    );
    expect(lapsed).toBeLessThanOrEqual(LEASE_TIMEOUT_MS + 1000);
  }, 60_000);
});
