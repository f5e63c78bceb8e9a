/**
 * The store going away and coming back, with two gateway processes in front
 * of the real tritonserver and their own real Redis (stopped and restarted
 * here, by its pid, on the same port and data): while it is down no request
 * gets a 5xx, each pod admits the team's limit divided by the pod count, the
 * `store_degraded` gauge is 1 and the transition is logged once; once it is
 * back the limits are exact across both pods again and the usage written
 * before the outage, and served during it, is all there.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { METRICS } from "../../images/gateway/src/telemetry/metrics";
import type { UsageReport } from "../../images/gateway/src/usage/usageLedger";
import { renderGatewayConfig } from "../../infra/plan/gatewayConfig";
import { sleep } from "../lib/net";
import { StoreServer } from "../lib/storeServer";
import { STORE_PASSWORD_ENV, storeSection } from "./globalSetup";
import { type RunningGateway, startGateway } from "./harness";

const h = inject("gateway");
const MODEL = h.model.id;
const TEAMS = [
  { name: "ten", requestsPerMinute: 10, maxConcurrent: 16 },
  { name: "six-after", requestsPerMinute: 6, maxConcurrent: 16 },
  { name: "kept" },
];

const work = mkdtempSync(path.join(os.tmpdir(), "triton-ft-store-outage-"));
const store = new StoreServer(path.join(work, "store"));
const stoppers: Array<() => Promise<void>> = [];
let pods: RunningGateway[] = [];

beforeAll(async () => {
  const info = await store.start();
  const config = {
    ...renderGatewayConfig([{ ...h.model, tritonGrpc: h.triton.grpc, maxInflight: 4 * h.model.maxBatchSize }], {
      requestTimeoutSeconds: 60,
    }),
    store: storeSection(info, "outage:", 2),
  };
  const env = { [STORE_PASSWORD_ENV]: info.password };
  const a = await startGateway(work, "outage-a", config, TEAMS, { env });
  stoppers.push(a.stop);
  const b = await startGateway(work, "outage-b", config, TEAMS, { env, keys: a.gateway.keys });
  stoppers.push(b.stop);
  pods = [a.gateway, b.gateway];
}, 120_000);

afterAll(async () => {
  for (const s of stoppers) await s();
  await store.stop();
  rmSync(work, { recursive: true, force: true });
});

function post(pod: RunningGateway, team: string, maxTokens = 1): Promise<Response> {
  return fetch(`${pod.url}/v1/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${pod.keys[team]}`, "content-type": "application/json" },
    body: JSON.stringify({ model: MODEL, prompt: "hi", max_tokens: maxTokens, temperature: 0 }),
  });
}

async function gauge(pod: RunningGateway, name: string): Promise<number> {
  const text = await (await fetch(`${pod.metricsUrl}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`${name} `));
  return line === undefined ? Number.NaN : Number(line.split(" ").pop());
}

async function usage(pod: RunningGateway, team: string): Promise<UsageReport> {
  const r = await fetch(`${pod.url}/v1/usage`, { headers: { authorization: `Bearer ${pod.keys[team]}` } });
  expect(r.status).toBe(200);
  return (await r.json()) as UsageReport;
}

async function until(what: string, check: () => Promise<boolean>, timeoutMs = 20_000): Promise<number> {
  const started = performance.now();
  while (!(await check())) {
    if (performance.now() - started > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
  return (performance.now() - started) / 1000;
}

/** Wait, if needed, until the clock's minute has at least 15 s left. */
async function windowWithRoom(): Promise<void> {
  const left = 60_000 - (Date.now() % 60_000);
  if (left < 15_000) await sleep(left + 100);
}

function logLines(pod: RunningGateway, message: string): string[] {
  return readFileSync(pod.log, "utf8")
    .split("\n")
    .filter((l) => l.includes(message));
}

describe("the store stopped mid-run and restarted", () => {
  it("degrades to per-pod limits without a 5xx, then is exact again with the usage intact", async () => {
    for (const pod of pods) {
      await until("both pods counted", async () => (await gauge(pod, METRICS.storePods)) === 2);
      expect(await gauge(pod, METRICS.storeDegraded)).toBe(0);
    }
    let before = 0;
    for (const pod of pods) {
      const r = await post(pod, "kept", 2);
      expect(r.status).toBe(200);
      before += 1;
      await r.text();
    }

    await store.stop();
    // Windows are the clock's minutes: each burst below starts with time to spare in its window.
    await windowWithRoom();
    // Pod A alone, never having seen the team's window, gets its 10 requests/minute divided by the 2 pods it last counted.
    const statuses: number[] = [];
    for (let i = 0; i < 10; i++) {
      const r = await post(pods[0], "ten");
      statuses.push(r.status);
      await r.text();
    }
    expect(statuses.filter((s) => s >= 500)).toEqual([]);
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429, 429, 429, 429, 429]);
    const during = await post(pods[1], "kept", 2);
    expect(during.status).toBe(200);
    await during.text();
    for (const pod of pods) {
      await until("the degraded gauge set", async () => (await gauge(pod, METRICS.storeDegraded)) === 1);
    }
    const podScope = await usage(pods[0], "kept");
    expect(podScope.scope).toBe("pod");
    expect(podScope.degraded).toBe(true);

    await store.start();
    const recovered = await Promise.all(
      pods.map((pod) => until("the store used again", async () => (await gauge(pod, METRICS.storeDegraded)) === 0)),
    );
    // Heartbeats every 2 s and ioredis reconnects within 0.5 s: back within a few seconds.
    for (const seconds of recovered) expect(seconds).toBeLessThan(6);
    process.stderr.write(`store back: pods exact again after ${recovered.map((s) => s.toFixed(1)).join(" s, ")} s\n`);

    // The usage written before the outage survived the restart, and the request served during it was written after.
    await sleep(200);
    for (const pod of pods) {
      const report = await usage(pod, "kept");
      expect(report.scope).toBe("cluster");
      expect(report.today.total.requests).toBe(before + 1);
    }

    // Exact across both pods again.
    await windowWithRoom();
    const after: number[] = [];
    for (let i = 0; i < 12; i++) {
      const r = await post(pods[i % 2], "six-after");
      after.push(r.status);
      await r.text();
    }
    expect(after.filter((s) => s === 200)).toHaveLength(6);
    expect(after.filter((s) => s >= 500)).toEqual([]);

    // One log line per transition: reachable at start and after the outage, unreachable once.
    for (const pod of pods) {
      const down = logLines(pod, "store unreachable");
      const up = logLines(pod, "store reachable");
      expect(down, down.join("\n")).toHaveLength(1);
      expect(up, up.join("\n")).toHaveLength(2);
    }
  }, 120_000);
});
