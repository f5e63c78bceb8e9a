/**
 * Scale to zero, the gateway's side (issue 35), against real tritonservers
 * and two gateway processes sharing the suite's real Valkey/Redis as two pods
 * of one deployment would. Each pod serves four models:
 *
 * - `sleepy` (may sleep, `wake` set): its tritonserver (the suite's
 *   repository, fixed loopback ports) is started only 20 s after 100 requests
 *   to it arrived, half of them streaming, half on each pod: all 100 are
 *   answered, none with a 5xx, and every stream sees a keepalive comment at
 *   most keepaliveSeconds (10) apart until its first event (the held time
 *   and the drained queue's wait in Triton alike);
 * - `twin`: the same tritonserver, never sleeping: once `sleepy` is awake,
 *   the same requests interleaved to both give the hold path's added latency;
 * - `never` (may sleep, a queue of 5, 15 s to wake): no tritonserver ever:
 *   past the queue's depth 429 with Retry-After, every held request the 503
 *   model_unavailable after the timeout, a client that leaves freeing its
 *   place and its team's permit at once;
 * - `other`: the suite's running tritonserver, served all along.
 *
 * After everything each pod's held-requests gauge is 0. Figures go to the
 * log (and to $WAKE_REPORT when set): answered, 429s, 503s, the longest
 * keepalive gap, the added latency.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { METRICS } from "../../images/gateway/src/telemetry/metrics";
import { renderGatewayConfig } from "../../infra/plan/gatewayConfig";
import type { GatewayConfigFile } from "../../infra/plan/types";
import { freePort, sleep } from "../lib/net";
import { stop, waitForState } from "../triton/serverProcess";
import { STEP_MS, STORE_PASSWORD_ENV, storeSection } from "./globalSetup";
import { ROOT, type RunningGateway, startGateway } from "./harness";

const h = inject("gateway");
const SLEEPY = { queueDepth: 60, activationTimeoutSeconds: 300, keepaliveSeconds: 10 };
const NEVER = { queueDepth: 5, activationTimeoutSeconds: 15, keepaliveSeconds: 10 };
/** The scenario: the tritonserver starts this long after the requests arrived. */
const START_AFTER_MS = 20_000;
const REQUESTS = 100;
const TEAMS = [
  { name: "wakers", maxConcurrent: 200, requestsPerMinute: 1000 },
  { name: "solo", maxConcurrent: 1, requestsPerMinute: 1000 },
];

const work = mkdtempSync(path.join(os.tmpdir(), "triton-ft-wake-"));
const stoppers: Array<() => Promise<void>> = [];
let pods: RunningGateway[] = [];
let ports: number[] = [];

function log(message: string): void {
  process.stderr.write(`${new Date().toISOString().slice(11, 19)} [wake] ${message}\n`);
}

beforeAll(async () => {
  ports = [await freePort(), await freePort(), await freePort()];
  const sleepyGrpc = `127.0.0.1:${ports[1]}`;
  // Nothing listens there: a port taken from the kernel and given back.
  const neverGrpc = `127.0.0.1:${await freePort()}`;
  const route = (id: string, grpc: string) => ({ ...h.model, id, tritonGrpc: grpc, maxInflight: 128 });
  const rendered = renderGatewayConfig(
    [route("sleepy", sleepyGrpc), route("twin", sleepyGrpc), route("never", neverGrpc), route("other", h.triton.grpc)],
    { requestTimeoutSeconds: 120, maxInflight: 128, maxConcurrent: 200 },
  );
  const wakes: Record<string, typeof SLEEPY> = { sleepy: SLEEPY, never: NEVER };
  const config: GatewayConfigFile = {
    ...rendered,
    models: rendered.models.map((m) => (wakes[m.id] ? { ...m, wake: wakes[m.id] } : m)),
    store: storeSection(h.store, "wake:", 2),
  };
  const env = { [STORE_PASSWORD_ENV]: h.store.password };
  const a = await startGateway(work, "wake-a", config, TEAMS, { env });
  stoppers.push(a.stop);
  const b = await startGateway(work, "wake-b", config, TEAMS, { env, keys: a.gateway.keys });
  stoppers.push(b.stop);
  pods = [a.gateway, b.gateway];
}, 120_000);

afterAll(async () => {
  for (const s of stoppers.reverse()) await s();
  rmSync(work, { recursive: true, force: true });
});

/** The suite's repository served by a tritonserver of its own on `ports` (http, grpc, metrics). */
function startTriton(): { child: ChildProcess; ready: Promise<void> } {
  const stateFile = path.join(work, "sleepy.server.json");
  const [http, grpc, metrics] = ports.map(String);
  const child = spawn(
    "bash",
    [
      path.join(ROOT, "test/triton/server.sh"),
      ...["--model-repository", h.triton.repository, "--state-file", stateFile],
      ...["--log", path.join(work, "sleepy.tritonserver.log"), "--watch-pid", String(process.pid)],
      ...["--http-port", http, "--grpc-port", grpc, "--metrics-port", metrics],
    ],
    {
      cwd: ROOT,
      stdio: ["ignore", "inherit", "inherit"],
      env: { ...process.env, TRITONFT_STANDIN_STEP_MS: String(STEP_MS) },
    },
  );
  stoppers.push(() => stop(child));
  return { child, ready: waitForState(child, stateFile, 300_000).then(() => undefined) };
}

interface Answer {
  status: number;
  retryAfter: string | null;
  /** The error code of a refusal (status or a stream's last event), if any. */
  code: string | null;
  /** For streams: the longest time between two received chunks before the first data event, ms. */
  longestGapMs: number;
  keepalives: number;
  text: string;
  ms: number;
}

function post(
  pod: RunningGateway,
  model: string,
  stream: boolean,
  team = "wakers",
  signal?: AbortSignal,
): Promise<Response> {
  return fetch(`${pod.url}/v1/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${pod.keys[team]}`, "content-type": "application/json" },
    body: JSON.stringify({ model, prompt: "wake up", max_tokens: 4, stream }),
    ...(signal ? { signal } : {}),
  });
}

/** One request read to its end: a stream chunk by chunk, timing the gaps until its first data event. */
async function call(pod: RunningGateway, model: string, stream: boolean): Promise<Answer> {
  const started = performance.now();
  const r = await post(pod, model, stream);
  const answer = { status: r.status, retryAfter: r.headers.get("retry-after"), code: null as string | null };
  let text = "";
  let longestGapMs = 0;
  let keepalives = 0;
  if (stream && r.status === 200 && r.body) {
    let last = started;
    let dataSeen = false;
    const decoder = new TextDecoder();
    for await (const chunk of r.body) {
      const now = performance.now();
      const piece = decoder.decode(chunk, { stream: true });
      if (!dataSeen) longestGapMs = Math.max(longestGapMs, now - last);
      keepalives += piece.split(": keepalive\n\n").length - 1;
      if (piece.includes("data: ")) dataSeen = true;
      last = now;
      text += piece;
    }
  } else {
    text = await r.text();
  }
  const code = /"code":"([a-z_]+)"/.exec(text)?.[1] ?? null;
  return { ...answer, code, longestGapMs, keepalives, text, ms: performance.now() - started };
}

/** This pod's held-requests gauge for `model`, from its /metrics. */
async function held(pod: RunningGateway, model: string): Promise<number> {
  const text = await (await fetch(`${pod.metricsUrl}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`${METRICS.heldRequests}{model="${model}"}`));
  return line === undefined ? Number.NaN : Number(line.split(" ").at(-1));
}

async function heldEverywhere(model: string): Promise<number> {
  return (await Promise.all(pods.map((p) => held(p, model)))).reduce((a, b) => a + b, 0);
}

async function status(pod: RunningGateway, model: string): Promise<string> {
  const r = await fetch(`${pod.url}/v1/models/${model}`, { headers: { authorization: `Bearer ${pod.keys.wakers}` } });
  return ((await r.json()) as { status: string }).status;
}

const p50 = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const figures: Record<string, number> = {};

describe("a model that sleeps: requests held, not dropped", () => {
  it("with its tritonserver never started: 429 past the queue, 503 after the timeout, the other models served", async () => {
    expect(await status(pods[0], "never")).toBe("sleeping");
    // A held request whose client leaves: its place and its team's only permit come back at once.
    const leaving = new AbortController();
    const left = post(pods[0], "never", true, "solo", leaving.signal).catch(() => undefined);
    while ((await held(pods[0], "never")) < 1) await sleep(50);
    expect(await status(pods[0], "never")).toBe("waking");
    const leftAt = performance.now();
    leaving.abort();
    await left;
    while ((await held(pods[0], "never")) > 0 && performance.now() - leftAt < 5000) await sleep(20);
    figures.placeFreedAfterLeavingMs = Math.round(performance.now() - leftAt);
    // At once, not at the activation timeout (15 s).
    expect(figures.placeFreedAfterLeavingMs).toBeLessThan(1000);
    const after = await post(pods[0], "other", false, "solo");
    expect(after.status).toBe(200);
    await after.text();

    const started = performance.now();
    // Eight per pod, half streaming: five held on each, three refused.
    const calls = pods.flatMap((pod) =>
      Array.from({ length: NEVER.queueDepth + 3 }, (_, i) => call(pod, "never", i % 2 === 0)),
    );
    await sleep(2000);
    expect(await heldEverywhere("never")).toBe(2 * NEVER.queueDepth);
    const others = await Promise.all(pods.map((pod) => call(pod, "other", true)));
    expect(others.map((o) => [o.status, o.text.endsWith("data: [DONE]\n\n")])).toEqual(pods.map(() => [200, true]));
    const answers = await Promise.all(calls);
    const seconds = (performance.now() - started) / 1000;
    const refused = answers.filter((a) => a.status === 429);
    const unavailable = answers.filter((a) => a.code === "model_unavailable");
    expect(refused).toHaveLength(2 * 3);
    for (const r of refused) {
      expect(r.code).toBe("model_queue_full");
      expect(Number(r.retryAfter)).toBeGreaterThanOrEqual(1);
    }
    expect(unavailable).toHaveLength(2 * NEVER.queueDepth);
    for (const u of unavailable) {
      expect(u.ms).toBeGreaterThanOrEqual(NEVER.activationTimeoutSeconds * 1000 - 100);
      // A plain request gets the status and the header; a held stream, its 200 and the error as its last event.
      if (u.status === 503) expect(u.retryAfter).toBe("5");
      else expect([u.status, /retry: 5000\ndata: /.test(u.text)]).toEqual([200, true]);
    }
    expect(await heldEverywhere("never")).toBe(0);
    figures.never429 = refused.length;
    figures.never503 = unavailable.length;
    log(
      `never: ${refused.length} × 429, ${unavailable.length} × 503 model_unavailable after ${seconds.toFixed(1)} s; ` +
        `a leaving client's place and permit free after ${figures.placeFreedAfterLeavingMs} ms`,
    );
  }, 120_000);

  it("with its tritonserver started 20 s later: all 100 answered, no 5xx, keepalives at most 10 s apart", async () => {
    expect(await status(pods[1], "sleepy")).toBe("sleeping");
    const started = performance.now();
    const calls = Array.from({ length: REQUESTS }, (_, i) => call(pods[i % 2], "sleepy", i % 4 < 2));
    await sleep(2000);
    expect(await heldEverywhere("sleepy")).toBe(REQUESTS);
    await sleep(START_AFTER_MS - 2000);
    log("starting the sleepy model's tritonserver");
    const triton = startTriton();
    await triton.ready;
    const tritonReadyAt = performance.now();
    log(`tritonserver ready ${((tritonReadyAt - started) / 1000).toFixed(1)} s after the requests`);
    const answers = await Promise.all(calls);
    const done = performance.now();
    const statuses = answers.map((a) => a.status);
    const streams = answers.filter((_, i) => i % 4 < 2);
    const longestGapMs = Math.max(...streams.map((s) => s.longestGapMs));
    figures.answered = statuses.filter((s) => s === 200).length;
    figures.server_errors = statuses.filter((s) => s >= 500).length;
    figures.longestKeepaliveGapMs = Math.round(longestGapMs);
    figures.drainedAfterTritonReadyMs = Math.round(done - tritonReadyAt);
    log(
      `sleepy: ${figures.answered}/${REQUESTS} answered, ${figures.server_errors} 5xx, longest keepalive gap ` +
        `${(longestGapMs / 1000).toFixed(2)} s, all answered ${(figures.drainedAfterTritonReadyMs / 1000).toFixed(1)} s after Triton was ready`,
    );
    expect(statuses).toEqual(answers.map(() => 200));
    for (const s of streams) {
      expect(s.code).toBeNull();
      expect(s.keepalives).toBeGreaterThanOrEqual(2);
      expect(s.text.endsWith("data: [DONE]\n\n")).toBe(true);
    }
    // Keepalives run until the first event, not only while held, and never further apart than keepaliveSeconds.
    expect(longestGapMs).toBeLessThanOrEqual(SLEEPY.keepaliveSeconds * 1000);
    expect(await heldEverywhere("sleepy")).toBe(0);
    expect(await status(pods[0], "sleepy")).toBe("ready");
  }, 420_000);

  it("adds nothing measurable to an awake model's requests: sleepy vs its never-sleeping twin, paired", async () => {
    // Pairs on one pod, the order alternating, the first few dropped (warm-up): the median of the
    // pairs' differences is robust to the load drifting on a shared machine.
    const diffs: number[] = [];
    const times: Record<"sleepy" | "twin", number[]> = { sleepy: [], twin: [] };
    for (let i = 0; i < 65; i++) {
      const pair: Record<string, number> = {};
      for (const model of i % 2 === 0 ? (["sleepy", "twin"] as const) : (["twin", "sleepy"] as const)) {
        const a = await call(pods[0], model, false);
        expect(a.status).toBe(200);
        pair[model] = a.ms;
      }
      if (i < 5) continue;
      times.sleepy.push(pair.sleepy);
      times.twin.push(pair.twin);
      diffs.push(pair.sleepy - pair.twin);
    }
    figures.awakeP50Ms = Number(p50(times.sleepy).toFixed(2));
    figures.twinP50Ms = Number(p50(times.twin).toFixed(2));
    figures.addedMedianPairedMs = Number(p50(diffs).toFixed(2));
    log(
      `awake: p50 ${figures.awakeP50Ms} ms through the hold path, ${figures.twinP50Ms} ms without one; ` +
        `median paired difference ${figures.addedMedianPairedMs} ms over ${diffs.length} pairs`,
    );
    // Same Triton, same gateway: the hold path is one property read. Not a speed target (the figure is
    // reported, not asserted): the bound only tells a request that waited on a readiness poll (+250 ms)
    // from a loaded runner's noise (runs gave 0.11 to 5.17 ms on 2 cores).
    expect(Math.abs(figures.addedMedianPairedMs)).toBeLessThan(100);
    expect(await heldEverywhere("sleepy")).toBe(0);
    expect(await heldEverywhere("never")).toBe(0);
    if (process.env.WAKE_REPORT) writeFileSync(process.env.WAKE_REPORT, JSON.stringify(figures, null, 2));
  }, 120_000);
});
