/**
 * npm run bench -- [options]
 *
 * Load generator for the endpoint: a concurrency sweep of streamed
 * completions for a fixed duration per level, reporting requests/s, output
 * tokens/s, time to first token and latency p50/p95/p99, written as
 * bench.json and a self-contained chart (bench.html).
 *
 * Targets (one or both):
 *   --gateway URL --key KEY [--model ID]   the OpenAI endpoint (SSE)
 *   --triton HOST:PORT [--ensemble NAME]   Triton's gRPC port directly (ModelStreamInfer)
 *   --local                                start the test suite's real tritonserver
 *                                          (FT stand-in, decoupled, --step-ms per token) and a
 *                                          gateway in front of it, and bench both in one run:
 *                                          the report then holds the gateway's added latency ratio
 *   --store                                (--local) also a real Valkey/Redis (test/lib/storeServer.ts) and a
 *                                          second gateway using it, benched in the same run: the report then
 *                                          holds what the store adds (ms and ratios at p50/p99)
 * With several targets, each level interleaves them (every client sends to
 * each target in turn, bench/loadgen.ts runInterleaved): the machine's other
 * load falls on all of them alike, and the report holds what each gateway
 * adds over direct Triton (bench/compare.ts gatewayAdded), at p50 latency and
 * p50 TTFT, in ms and as a ratio, of the p50s and paired request by request.
 *   --client http|fetch                    the gateway targets' HTTP client (bench/gatewayClient.ts):
 *                                          node:http (default) or Node's fetch, as the openai npm client
 * Workload:
 *   --concurrency 1,2,4,8   levels (default 1,2,4,8)
 *   --duration SECS         per level (default 20)
 *   --prompt-words N        prompt length in words (default 32)
 *   --max-tokens N          output length (default 64, capped by the model)
 *   --step-ms N             (--local) stand-in time per generated token (default 20)
 *   --warmup N              requests per target before anything is measured, 1 token each,
 *                           4 at a time: a pod's steady state, its per-request code optimized
 *                           by V8 (bench/loadgen.ts warmUp); default 500 with --local, else 0
 *                           (a deployed endpoint is warm, and the requests count in its limits)
 *   --out DIR               report folder (default out/bench)
 * Progress goes to stderr; the last stdout line is the report path.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { renderGatewayConfig } from "../infra/plan/gatewayConfig";
import { startGateway } from "../test/gateway/harness";
import { STORE_PASSWORD_ENV, startTritonDecoupled, storeSection } from "../test/gateway/globalSetup";
import { StoreServer } from "../test/lib/storeServer";
import { type BenchReport, renderHtml } from "./bench/chart";
import { TARGETS, addedLine, compare } from "./bench/compare";
import { GATEWAY_CLIENTS, type GatewayClient, gatewaySender } from "./bench/gatewayClient";
import {
  type LevelResult,
  type Sender,
  type Workload,
  runInterleaved,
  runLevel,
  tritonSender,
  warmUp,
} from "./bench/loadgen";
import { measureAdmission } from "./bench/storeAdmission";

/** The warm-up (bench/loadgen.ts warmUp): requests per target by default with --local, and how many at once. */
const WARMUP = { localRequests: 500, concurrency: 4 } as const;

function log(message: string): void {
  process.stderr.write(`${new Date().toISOString().slice(11, 19)} [bench] ${message}\n`);
}

function fail(message: string): never {
  process.stderr.write(`bench: ${message}\n`);
  process.exit(2);
}

const WORDS = "the quick brown fox jumps over the lazy dog while seven bright stars watch the quiet river flow".split(
  " ",
);

async function sweep(
  name: string,
  send: Sender,
  workload: Workload,
  levels: number[],
  duration: number,
): Promise<LevelResult[]> {
  const results: LevelResult[] = [];
  for (const c of levels) {
    log(`${name}: ${c} concurrent client(s) for ${duration}s`);
    const r = await runLevel(send, workload, c, duration, (done, elapsed) =>
      process.stderr.write(`\r  ${name} c=${c}: ${done} requests in ${elapsed.toFixed(0)}s   `),
    );
    process.stderr.write("\n");
    log(
      `${name} c=${c}: ${r.requestsPerSecond} req/s, ${r.outputTokensPerSecond} tok/s, TTFT p50 ${r.ttftMs.p50} ms, latency p50/p95/p99 ${r.latencyMs.p50}/${r.latencyMs.p95}/${r.latencyMs.p99} ms, errors ${r.errors}`,
    );
    results.push(r);
  }
  return results;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      gateway: { type: "string" },
      key: { type: "string" },
      model: { type: "string" },
      triton: { type: "string" },
      ensemble: { type: "string", default: "ensemble" },
      local: { type: "boolean", default: false },
      store: { type: "boolean", default: false },
      concurrency: { type: "string", default: "1,2,4,8" },
      duration: { type: "string", default: "20" },
      "prompt-words": { type: "string", default: "32" },
      "max-tokens": { type: "string", default: "64" },
      "step-ms": { type: "string", default: "20" },
      out: { type: "string", default: "out/bench" },
      client: { type: "string", default: "http" },
      warmup: { type: "string" },
    },
  });
  const levels = values.concurrency.split(",").map(Number);
  if (levels.some((n) => !Number.isInteger(n) || n < 1))
    fail(`--concurrency ${values.concurrency}: positive integers, comma-separated`);
  const duration = Number(values.duration);
  const promptWords = Number(values["prompt-words"]);
  let maxTokens = Number(values["max-tokens"]);
  // Only local targets start cold: a deployed endpoint's pods are warm with their traffic, and 500 requests
  // there would spend the key's own rate limit before the measured levels.
  const warmup = Number(values.warmup ?? (values.local ? WARMUP.localRequests : 0));
  if (!Number.isInteger(warmup) || warmup < 0) fail(`--warmup ${values.warmup}: a whole number of requests, 0 or more`);
  for (const [k, v] of [
    ["duration", duration],
    ["prompt-words", promptWords],
    ["max-tokens", maxTokens],
  ] as const) {
    if (!(v > 0)) fail(`--${k} must be a positive number`);
  }
  if (!values.local && !values.gateway && !values.triton)
    fail("give --gateway URL --key KEY, --triton HOST:PORT, or --local");
  if (values.gateway && !values.key) fail("--gateway needs --key");
  if (values.store && !values.local) fail("--store needs --local");
  const client = values.client as GatewayClient;
  if (!GATEWAY_CLIENTS.includes(client)) fail(`--client ${values.client}: one of ${GATEWAY_CLIENTS.join(", ")}`);

  const cleanup: Array<() => Promise<void> | void> = [];
  let gateway = values.gateway
    ? { url: values.gateway, key: values.key as string, model: values.model ?? "" }
    : undefined;
  let triton = values.triton;
  let storeGateway: { url: string; key: string; model: string } | undefined;
  let storeInfo: Awaited<ReturnType<StoreServer["start"]>> | undefined;
  let environment = "external endpoints";
  try {
    if (values.local) {
      const work = mkdtempSync(path.join(os.tmpdir(), "triton-ft-bench-"));
      cleanup.push(() => rmSync(work, { recursive: true, force: true }));
      const stepMs = Number(values["step-ms"]);
      log(`starting tritonserver (FT stand-in, decoupled, ${stepMs} ms per token) in ${work}`);
      const server = await startTritonDecoupled(work, stepMs);
      cleanup.unshift(server.stop);
      const model = server.model;
      maxTokens = Math.min(maxTokens, model.maxOutputLen);
      const config = renderGatewayConfig([{ ...model, tritonGrpc: server.info.grpc, maxInflight: 1024 }], {
        requestTimeoutSeconds: 120,
        maxConcurrent: 1024,
        requestsPerMinute: 1_000_000,
      });
      const gw = await startGateway(work, "bench", config, [{ name: "bench" }]);
      cleanup.unshift(gw.stop);
      gateway = { url: gw.gateway.url, key: gw.gateway.keys.bench, model: model.id };
      if (values.store) {
        const store = new StoreServer(path.join(work, "store"));
        const info = await store.start();
        storeInfo = info;
        cleanup.unshift(() => store.stop());
        // The same gateway with the store: every request takes its rate, tokens and concurrency there.
        const sgw = await startGateway(
          work,
          "bench-store",
          { ...config, store: storeSection(info, "bench:") },
          [{ name: "bench", tokensPerMinute: 1_000_000_000 }],
          { env: { [STORE_PASSWORD_ENV]: info.password } },
        );
        cleanup.unshift(sgw.stop);
        storeGateway = { url: sgw.gateway.url, key: sgw.gateway.keys.bench, model: model.id };
      }
      triton = server.info.grpc;
      environment = `local: real tritonserver (nvidia-pytriton, CPU) with the FT stand-in at ${stepMs} ms/token, ${os.cpus().length} CPUs`;
    }
    if (gateway && !gateway.model) {
      const models = (await (
        await fetch(`${gateway.url}/v1/models`, { headers: { authorization: `Bearer ${gateway.key}` } })
      ).json()) as { data: { id: string }[] };
      gateway.model = models.data[0]?.id ?? fail("the gateway lists no model");
    }
    const promptOf = (n: number): string => Array.from({ length: n }, (_, i) => WORDS[i % WORDS.length]).join(" ");
    let words = promptWords;
    // A prompt longer than the model takes fails every request: shorten it until one is served.
    const targets: Array<{ name: string; send: Sender }> = [];
    if (triton) {
      const direct = tritonSender({ grpc: triton, ensemble: values.ensemble });
      cleanup.unshift(direct.close);
      targets.push({ name: TARGETS.direct, send: direct.send });
    }
    if (gateway) {
      const sender = gatewaySender(gateway, client);
      cleanup.unshift(sender.close);
      targets.push({ name: TARGETS.gateway, send: sender.send });
    }
    const probe = targets[targets.length - 1].send;
    for (;;) {
      const sample = await probe({ prompt: promptOf(words), maxTokens });
      if (sample.ok) break;
      if (words <= 1) fail(`even a one-word prompt fails: ${sample.status}`);
      const shorter = Math.max(1, Math.floor(words * 0.8));
      log(`a ${words}-word prompt is refused (${sample.status}); trying ${shorter} words`);
      words = shorter;
    }
    const workload = { prompt: promptOf(words), maxTokens };
    const report: BenchReport = {
      createdAt: new Date().toISOString(),
      workload: { promptWords: words, maxTokens, durationSeconds: duration, warmupRequests: warmup },
      environment,
      ...(gateway ? { client } : {}),
      targets: {},
    };
    if (storeInfo) {
      report.storeAdmission = await measureAdmission(storeInfo);
      const a = report.storeAdmission;
      log(
        `admission over ${a.samples} calls: store p50 ${a.storeMs.p50} ms / p99 ${a.storeMs.p99} ms; pod-local p50 ${a.localMs.p50} ms / p99 ${a.localMs.p99} ms`,
      );
    }
    if (storeGateway) {
      const sender = gatewaySender(storeGateway, client);
      cleanup.unshift(sender.close);
      targets.push({ name: TARGETS.store, send: sender.send });
    }
    for (const t of targets) await t.send(workload); // each target answers before the warm-up starts
    if (warmup > 0) {
      log(`warm-up: ${warmup} requests per target (1 token each, ${WARMUP.concurrency} at a time), not measured`);
      await warmUp(targets, { ...workload, maxTokens: 1 }, warmup, WARMUP.concurrency, (done) =>
        process.stderr.write(`\r  warm-up: ${done}/${warmup * targets.length} requests   `),
      );
      process.stderr.write("\n");
    }
    if (targets.length === 1)
      report.targets[targets[0].name] = await sweep(targets[0].name, targets[0].send, workload, levels, duration);
    else {
      for (const t of targets) report.targets[t.name] = [];
      for (const c of levels) {
        log(`${targets.map((t) => t.name).join(", ")} interleaved: ${c} concurrent client(s) for ${duration}s`);
        const level = await runInterleaved(targets, workload, c, duration, (done, elapsed) =>
          process.stderr.write(`\r  c=${c}: ${done} requests in ${elapsed.toFixed(0)}s   `),
        );
        process.stderr.write("\n");
        for (const t of targets) {
          const r = level[t.name];
          report.targets[t.name].push(r);
          log(
            `${t.name} c=${c}: ${r.requests} requests, TTFT p50 ${r.ttftMs.p50} ms, latency p50/p95/p99 ${r.latencyMs.p50}/${r.latencyMs.p95}/${r.latencyMs.p99} ms, errors ${r.errors}`,
          );
        }
      }
    }
    Object.assign(report, compare(report.targets));
    for (const o of report.storeOverhead ?? []) {
      log(
        `store added at c=${o.concurrency}: latency p50 ${o.latencyP50AddedMs} ms (x${o.latencyP50Ratio}), p99 ${o.latencyP99AddedMs} ms (x${o.latencyP99Ratio}), TTFT p50 ${o.ttftP50AddedMs} ms`,
      );
    }
    for (const o of report.gatewayAdded ?? []) log(addedLine(o));
    mkdirSync(values.out, { recursive: true });
    writeFileSync(path.join(values.out, "bench.json"), `${JSON.stringify(report, null, 2)}\n`);
    writeFileSync(path.join(values.out, "bench.html"), renderHtml(report));
    log(`report: ${path.join(values.out, "bench.json")}, chart: ${path.join(values.out, "bench.html")}`);
    process.stdout.write(`${path.join(values.out, "bench.html")}\n`);
  } finally {
    for (const c of cleanup) await c();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`bench: ${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
