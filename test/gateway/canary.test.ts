/**
 * A weighted canary, the gateway's side (issue 36), against real parts: the
 * suite's tritonserver is every model's stable build; a second tritonserver
 * on the same repository is their canary build, its FT stand-in switched to
 * inject failures (every Nth request) or a delay before the first token
 * (TRITONFT_STANDIN_FAULT_FILE, test/triton/ft_standin). Three gateway
 * processes share the suite's Valkey/Redis under one key prefix, as three
 * pods of one deployment, and serve three models, each with its own canary id:
 *
 * - `steady` (weight 20): 2,000 requests spread unevenly over the three pods
 *   (50/30/20 %, half streaming): the canary's share per pod and overall
 *   within 3 points of 20; afterwards, the healthy canary still serving on
 *   every pod, its gauge 0;
 * - `erring` (weight 30): every 2nd canary request fails (error rate 50 %,
 *   limit 20 %): every pod stops sending it new requests, the time from the
 *   first failed request to the last pod's stop measured; no stream dropped,
 *   and every canary stream in flight at its pod's decision ends with [DONE];
 *   the decision counted once across the pods; new requests all stable;
 * - `slow` (weight 30): the canary's first token 1 s late (its p95 TTFT
 *   limit is 2 × the stable build's): the same;
 * - `outage` (weight 30): the store stopped, then the canary failing: every
 *   pod judges its own samples alone and rolls back by itself, serving goes
 *   on (no 5xx but the canary's own failures, no stream dropped), and once the
 *   store is back the decision made alone is written there.
 *
 * The store is this file's own (test/lib/storeServer.ts), so it can be stopped.
 *
 * The figures go to the log and to $CANARY_REPORT when set.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { METRICS } from "../../images/gateway/src/telemetry/metrics";
import { renderGatewayConfig } from "../../infra/plan/gatewayConfig";
import type { GatewayConfigFile } from "../../infra/plan/types";
import { sleep } from "../lib/net";
import { StoreServer } from "../lib/storeServer";
import { connectStore } from "../../images/gateway/src/store/connection";
import { StoreKeys } from "../../images/gateway/src/store/sharedStore";
import { stop, waitForState } from "../triton/serverProcess";
import { STEP_MS, STORE_PASSWORD_ENV, storeSection, testStoreConfig } from "./globalSetup";
import { ROOT, type RunningGateway, startGateway } from "./harness";

const h = inject("gateway");
const TEAM = { name: "canary-team", maxConcurrent: 500, requestsPerMinute: 100_000 };
/** A fresh id per run: a rollback is sticky per canary id in the store. */
const run = randomBytes(3).toString("hex");
const MODELS = {
  steady: { weight: 20, rollback: { maxErrorRate: 0.2, maxTtftRatio: 3, windowSeconds: 60, minRequests: 20 } },
  erring: { weight: 30, rollback: { maxErrorRate: 0.2, maxTtftRatio: 3, windowSeconds: 60, minRequests: 20 } },
  slow: { weight: 30, rollback: { maxErrorRate: 0.2, maxTtftRatio: 2, windowSeconds: 60, minRequests: 20 } },
  // Judged by each pod alone, on the error rate only: its failing canary also steps at 150 ms (first token
  // about 6 × the stable build's), and the stand-in fails every 2nd request it receives from all three pods,
  // so one pod's own share of failures can sit at 20 % or below while its TTFT count reaches minRequests.
  outage: { weight: 30, rollback: { maxErrorRate: 0.2, maxTtftRatio: 100, windowSeconds: 60, minRequests: 10 } },
} as const;
type ModelName = keyof typeof MODELS;
const SPLIT_REQUESTS = 2000;
const FIRST_TOKEN_DELAY_MS = 1000;

const work = mkdtempSync(path.join(os.tmpdir(), "triton-ft-canary-"));
const faultFile = path.join(work, "canary.faults.json");
const store = new StoreServer(path.join(work, "store"));
const PREFIX = "canary:";
const canaryId = (model: string): string => `c-${model.slice(0, 3)}${run}`;
const stoppers: Array<() => Promise<void>> = [];
let pods: RunningGateway[] = [];
const figures: Record<string, unknown> = {};

function log(message: string): void {
  process.stderr.write(`${new Date().toISOString().slice(11, 19)} [canary] ${message}\n`);
}

/** The suite's repository on a tritonserver of its own, its stand-in reading the fault file. */
async function startCanaryTriton(): Promise<string> {
  const stateFile = path.join(work, "canary.server.json");
  const child: ChildProcess = spawn(
    "bash",
    [
      path.join(ROOT, "test/triton/server.sh"),
      ...["--model-repository", h.triton.repository, "--state-file", stateFile],
      ...["--log", path.join(work, "canary.tritonserver.log"), "--watch-pid", String(process.pid)],
    ],
    {
      cwd: ROOT,
      stdio: ["ignore", "inherit", "inherit"],
      env: { ...process.env, TRITONFT_STANDIN_STEP_MS: String(STEP_MS), TRITONFT_STANDIN_FAULT_FILE: faultFile },
    },
  );
  stoppers.push(() => stop(child));
  return (await waitForState(child, stateFile, 300_000)).grpc;
}

beforeAll(async () => {
  const storeInfo = await store.start();
  stoppers.push(() => store.stop());
  const canaryGrpc = await startCanaryTriton();
  log(`canary tritonserver ready at grpc ${canaryGrpc}`);
  const names = Object.keys(MODELS) as ModelName[];
  const rendered = renderGatewayConfig(
    names.map((id) => ({ ...h.model, id, tritonGrpc: h.triton.grpc, maxInflight: 128 })),
    { requestTimeoutSeconds: 60, maxInflight: 256, maxConcurrent: 500 },
  );
  const config: GatewayConfigFile = {
    ...rendered,
    models: rendered.models.map((m) => ({
      ...m,
      canary: {
        id: canaryId(m.id),
        weight: MODELS[m.id as ModelName].weight,
        triton: { grpc: canaryGrpc, ensemble: m.triton.ensemble },
        maxInflight: 64,
        rollback: MODELS[m.id as ModelName].rollback,
      },
    })),
    store: storeSection(storeInfo, PREFIX, 3),
  };
  const env = { [STORE_PASSWORD_ENV]: storeInfo.password };
  const a = await startGateway(work, "canary-a", config, [TEAM], { env });
  stoppers.push(a.stop);
  const b = await startGateway(work, "canary-b", config, [TEAM], { env, keys: a.gateway.keys });
  stoppers.push(b.stop);
  const c = await startGateway(work, "canary-c", config, [TEAM], { env, keys: a.gateway.keys });
  stoppers.push(c.stop);
  pods = [a.gateway, b.gateway, c.gateway];
  // Every pod has read the (empty) shared decision: its canaries take their share.
  for (const pod of pods) for (const id of names) while ((await card(pod, id)).state !== "serving") await sleep(100);
}, 400_000);

afterAll(async () => {
  for (const s of stoppers.reverse()) await s();
  log(`figures: ${JSON.stringify(figures)}`);
  if (process.env.CANARY_REPORT) writeFileSync(process.env.CANARY_REPORT, JSON.stringify(figures, null, 2));
  rmSync(work, { recursive: true, force: true });
});

interface CanaryCard {
  id: string;
  weight: number;
  state: string;
  reason: string | null;
}

async function card(pod: RunningGateway, model: ModelName): Promise<CanaryCard> {
  const r = await fetch(`${pod.url}/v1/models/${model}`, {
    headers: { authorization: `Bearer ${pod.keys[TEAM.name]}` },
  });
  return ((await r.json()) as { canary: CanaryCard }).canary;
}

interface Answer {
  pod: number;
  build: string | null;
  status: number;
  /** A stream that ended with data: [DONE]. */
  done: boolean;
  /** A failure the gateway answered: an error status, or an error event as the stream's last. */
  answeredError: boolean;
  startedAt: number;
  endedAt: number;
  /** The start of an error's body, for the failure message. */
  error?: string;
}

/** One request read to its end; `dropped` is whatever is neither [DONE], a JSON answer, nor an answered error. */
async function call(pod: number, model: ModelName, stream: boolean, maxTokens: number): Promise<Answer> {
  const startedAt = performance.now();
  const p = pods[pod];
  try {
    const r = await fetch(`${p.url}/v1/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${p.keys[TEAM.name]}`, "content-type": "application/json" },
      body: JSON.stringify({ model, prompt: "canary", max_tokens: maxTokens, stream }),
    });
    const text = await r.text();
    const done = stream && r.status === 200 && text.endsWith("data: [DONE]\n\n");
    const answeredError = r.status >= 400 || (stream && !done && /data: \{"error":/.test(text));
    return {
      pod,
      build: r.headers.get("x-triton-ft-build"),
      status: r.status,
      done: done || (!stream && r.status === 200),
      answeredError,
      startedAt,
      endedAt: performance.now(),
      ...(answeredError ? { error: text.slice(0, 300) } : {}),
    };
  } catch {
    return { pod, build: null, status: 0, done: false, answeredError: false, startedAt, endedAt: performance.now() };
  }
}

const dropped = (answers: Answer[]): Answer[] => answers.filter((a) => !a.done && !a.answeredError);

/** A series' value summed over lines matching every label, from one pod's /metrics. */
async function metric(pod: RunningGateway, name: string, labels: Record<string, string>): Promise<number> {
  const text = await (await fetch(`${pod.metricsUrl}/metrics`)).text();
  return text
    .split("\n")
    .filter(
      (l) =>
        (l.startsWith(`${name}{`) || l.startsWith(`${name} `)) &&
        Object.entries(labels).every(([k, v]) => l.includes(`${k}="${v}"`)),
    )
    .reduce((n, l) => n + Number(l.split(" ").at(-1)), 0);
}

/**
 * Load on `model` until every pod has rolled its canary back and `afterMs` more: `concurrency`
 * streams at a time, each on the next pod. Returns the answers and when each pod was seen rolled back.
 */
async function untilRolledBack(
  model: ModelName,
  concurrency: number,
  maxTokens: number,
  afterMs = 3000,
): Promise<{ answers: Answer[]; stoppedAt: number[]; reasons: Array<string | null> }> {
  const answers: Answer[] = [];
  const stoppedAt: number[] = pods.map(() => Number.NaN);
  const reasons: Array<string | null> = pods.map(() => null);
  let stopLoadAt = Number.POSITIVE_INFINITY;
  const deadline = performance.now() + 90_000;
  let next = 0;
  const worker = async (): Promise<void> => {
    while (performance.now() < Math.min(stopLoadAt, deadline))
      answers.push(await call(next++ % 3, model, true, maxTokens));
  };
  const watcher = async (): Promise<void> => {
    while (stoppedAt.some(Number.isNaN) && performance.now() < deadline) {
      await Promise.all(
        pods.map(async (pod, i) => {
          if (!Number.isNaN(stoppedAt[i])) return;
          const c = await card(pod, model);
          if (c.state === "rolled_back") {
            stoppedAt[i] = performance.now();
            reasons[i] = c.reason;
          }
        }),
      );
      await sleep(100);
    }
    stopLoadAt = performance.now() + afterMs;
  };
  await Promise.all([watcher(), ...Array.from({ length: concurrency }, worker)]);
  return { answers, stoppedAt, reasons };
}

/** The checks and figures of one rollback: every pod stopped, nothing dropped, in-flight canary streams finished. */
async function checkRollback(
  model: ModelName,
  reason: string,
  from: number,
  r: Awaited<ReturnType<typeof untilRolledBack>>,
): Promise<void> {
  expect(r.stoppedAt.some(Number.isNaN), "every pod rolled back").toBe(false);
  expect(r.reasons).toEqual(pods.map(() => reason));
  const last = Math.max(...r.stoppedAt);
  figures[`${model}RollbackSeconds`] = Number(((last - from) / 1000).toFixed(2));
  log(`${model}: every pod stopped ${String(figures[`${model}RollbackSeconds`])} s after the start`);
  expect(last - from).toBeLessThan(60_000);
  figures[`${model}Requests`] = r.answers.length;
  figures[`${model}StreamsDropped`] = dropped(r.answers).length;
  expect(dropped(r.answers)).toEqual([]);
  // Canary streams still running when their pod stopped picking the canary were picked before it: the
  // rollback cut none of them. Each ended with its [DONE], or with the canary's own injected failure
  // (a 502 before its first event, when the stand-in took it from its queue), never without an answer.
  const spanning = r.answers.filter((a) => a.build === "canary" && a.endedAt > r.stoppedAt[a.pod]);
  const finished = spanning.filter((a) => a.done);
  figures[`${model}CanaryStreamsInFlightAtDecision`] = spanning.length;
  figures[`${model}CanaryStreamsInFlightAtDecisionDone`] = finished.length;
  expect(finished.length).toBeGreaterThan(0);
  expect(spanning.filter((a) => !a.done && a.status !== 502)).toEqual([]);
  // Started after their pod's stop (plus one poll's slack): never the canary.
  const later = r.answers.filter((a) => a.startedAt > r.stoppedAt[a.pod] + 150);
  expect(later.length).toBeGreaterThan(0);
  expect(later.filter((a) => a.build !== "stable")).toEqual([]);
  // From the decision (its time, in the store) to the last pod's own rollback (its log line).
  const adopted = pods.map((p) => {
    const line = readFileSync(p.log, "utf8")
      .split("\n")
      .find((l) => l.includes('"msg":"canary rolled back') && l.includes(`"model":"${model}"`));
    const entry = JSON.parse(line ?? "{}") as { time?: number; decidedAt?: string };
    return { at: entry.time ?? Number.NaN, decidedAt: Date.parse(entry.decidedAt ?? "") };
  });
  figures[`${model}DecisionToLastPodMs`] = Math.max(...adopted.map((a) => a.at)) - adopted[0].decidedAt;
  expect(new Set(adopted.map((a) => a.decidedAt)).size).toBe(1);
  expect(figures[`${model}DecisionToLastPodMs`]).toBeLessThan(60_000);
  // The decision was made once, by one pod; every pod's gauge says rolled back.
  const decisions = await Promise.all(pods.map((p) => metric(p, METRICS.canaryRollbacks, { model, reason })));
  expect(decisions.reduce((a, b) => a + b, 0)).toBe(1);
  expect(await Promise.all(pods.map((p) => metric(p, METRICS.canaryRolledBack, { model })))).toEqual([1, 1, 1]);
}

describe("a weighted canary across three gateway pods sharing the store", () => {
  it("sends the canary its weight (20 %) within 3 points over 2,000 requests, per pod and overall; a healthy canary stays", async () => {
    let seed = 11;
    const podOf = (): number => {
      // Fixed pseudo-random spread, 50/30/20 %: the pods do not see equal load behind a real balancer.
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      const r = seed / 2 ** 31;
      return r < 0.5 ? 0 : r < 0.8 ? 1 : 2;
    };
    const order = Array.from({ length: SPLIT_REQUESTS }, podOf);
    const answers: Answer[] = [];
    let next = 0;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (next < SPLIT_REQUESTS) {
          const i = next++;
          answers.push(await call(order[i], "steady", i % 2 === 0, 2));
        }
      }),
    );
    figures.splitSeconds = Number(((performance.now() - started) / 1000).toFixed(1));
    expect(answers.filter((a) => a.status !== 200)).toEqual([]);
    const want = MODELS.steady.weight;
    const perPod = await Promise.all(
      pods.map(async (p) => {
        const ok = { model: "steady", status: "200", route: "/v1/completions" };
        const canary = await metric(p, METRICS.requests, { ...ok, build: "canary" });
        const stable = await metric(p, METRICS.requests, { ...ok, build: "stable" });
        return {
          requests: canary + stable,
          canary,
          sharePercent: Number(((canary / (canary + stable)) * 100).toFixed(2)),
        };
      }),
    );
    const total = perPod.reduce((n, p) => n + p.requests, 0);
    const canary = perPod.reduce((n, p) => n + p.canary, 0);
    figures.splitPerPod = perPod;
    figures.splitOverallPercent = Number(((canary / total) * 100).toFixed(2));
    log(`split: ${JSON.stringify(perPod)}, overall ${String(figures.splitOverallPercent)} %`);
    expect(total).toBe(SPLIT_REQUESTS);
    // What the callers saw agrees with the metrics.
    expect(answers.filter((a) => a.build === "canary")).toHaveLength(canary);
    for (const p of perPod) expect(Math.abs(p.sharePercent - want)).toBeLessThanOrEqual(3);
    expect(Math.abs((canary / total) * 100 - want)).toBeLessThanOrEqual(3);
    // Two more ticks of every pod (TICK_MS 2 s) over a window holding 400 healthy canary requests: still serving.
    await sleep(4500);
    for (const pod of pods) expect((await card(pod, "steady")).state).toBe("serving");
    expect(await Promise.all(pods.map((p) => metric(p, METRICS.canaryRolledBack, { model: "steady" })))).toEqual([
      0, 0, 0,
    ]);
  }, 300_000);

  it("rolls back a canary whose error rate breaks its rule on every pod within 60 s, dropping no stream", async () => {
    // Slow steps on the canary (150 ms, 3 s a stream): its streams that did not fail are in flight at the decision.
    writeFileSync(faultFile, JSON.stringify({ errorEvery: 2, stepMs: 150 }));
    try {
      const from = performance.now();
      const r = await untilRolledBack("erring", 12, 20);
      const firstFailure = Math.min(...r.answers.filter((a) => a.status >= 500).map((a) => a.endedAt));
      expect(Number.isFinite(firstFailure)).toBe(true);
      figures.erringFirstFailureAfterFaultSeconds = Number(((firstFailure - from) / 1000).toFixed(2));
      await checkRollback("erring", "error_rate", firstFailure, r);
      figures.erringFailedAnswered = r.answers.filter((a) => a.answeredError).length;
    } finally {
      rmSync(faultFile, { force: true });
    }
  }, 150_000);

  it("rolls back a canary whose p95 time to first token breaks its rule on every pod within 60 s, dropping no stream", async () => {
    writeFileSync(faultFile, JSON.stringify({ firstTokenDelayMs: FIRST_TOKEN_DELAY_MS, stepMs: 100 }));
    try {
      const from = performance.now();
      // Few at once: the stable build's TTFT stays its own (not queueing on a loaded machine), the canary's 1 s more.
      const r = await untilRolledBack("slow", 6, 12);
      // From the delay's start: the first slow first token is one request in, the rule needs minRequests of them.
      await checkRollback("slow", "ttft", from, r);
      expect(r.answers.filter((a) => a.answeredError)).toEqual([]);
    } finally {
      rmSync(faultFile, { force: true });
    }
    // The healthy canary was not touched by its neighbours' rollbacks.
    for (const pod of pods) expect((await card(pod, "steady")).state).toBe("serving");
  }, 150_000);

  it("keeps serving through a store outage: each pod judges alone, and the decision is written once the store is back", async () => {
    await store.stop();
    for (const pod of pods) while ((await metric(pod, METRICS.storeDegraded, {})) !== 1) await sleep(200);
    writeFileSync(faultFile, JSON.stringify({ errorEvery: 2, stepMs: 150 }));
    let r: Awaited<ReturnType<typeof untilRolledBack>>;
    try {
      r = await untilRolledBack("outage", 12, 20);
    } finally {
      rmSync(faultFile, { force: true });
    }
    expect(r.stoppedAt.some(Number.isNaN), "every pod rolled back alone").toBe(false);
    expect(r.reasons).toEqual(pods.map(() => "error_rate"));
    figures.outageRequests = r.answers.length;
    figures.outageStreamsDropped = dropped(r.answers).length;
    expect(dropped(r.answers)).toEqual([]);
    // Nothing failed for want of the store: the stable build answered everything, the canary all but its own failures.
    expect(r.answers.filter((a) => a.status !== 200 && !(a.build === "canary" && a.status === 502))).toEqual([]);
    // Each pod decided for itself (no store to agree through), and counted it.
    expect(await Promise.all(pods.map((p) => metric(p, METRICS.canaryRollbacks, { model: "outage" })))).toEqual([
      1, 1, 1,
    ]);

    const info = await store.start();
    // Not waiting for it to be ready: the loop below reads until the store answers.
    const client = connectStore(testStoreConfig(info, PREFIX), info.password);
    try {
      const key = new StoreKeys(PREFIX).canaryDecision("outage", canaryId("outage"));
      const back = performance.now();
      let stored: string | null = null;
      while (stored === null && performance.now() - back < 20_000) {
        stored = await client.get(key).catch(() => null);
        if (stored === null) await sleep(200);
      }
      figures.outageDecisionWrittenAfterStoreBackMs = Math.round(performance.now() - back);
      expect(JSON.parse(stored ?? "{}")).toMatchObject({ reason: "error_rate" });
      for (const pod of pods) expect((await card(pod, "outage")).state).toBe("rolled_back");
    } finally {
      client.disconnect();
    }
  }, 200_000);
});
