/**
 * Closed-loop load generator: `concurrency` workers each send one streamed
 * request after another for `durationSeconds`; every request records its
 * time to first token and total latency. Two kinds of target speak the same
 * workload: the gateway (OpenAI /v1/completions, SSE: bench/gatewayClient.ts)
 * and Triton directly (gRPC ModelStreamInfer on the ensemble, what the
 * gateway itself calls).
 */
import { TritonGateway } from "../../images/gateway/src/triton/tritonClient";
import { ensembleInputs } from "../../images/gateway/src/openai/generate";

export interface Sample {
  ok: boolean;
  status: string;
  ttftMs: number;
  latencyMs: number;
  outputTokens: number;
}

export interface Workload {
  prompt: string;
  maxTokens: number;
}

export interface TritonTarget {
  grpc: string;
  ensemble: string;
}

export type Sender = (w: Workload) => Promise<Sample>;

/** One streamed completion straight to Triton over gRPC, timed at the first generated token and at the end. */
export function tritonSender(t: TritonTarget): { send: Sender; close: () => void } {
  const client = new TritonGateway(t.grpc, t.ensemble);
  const send: Sender = async (w) => {
    const started = performance.now();
    let ttft = -1;
    let outputTokens = 0;
    const controller = new AbortController();
    try {
      const sampling = { maxTokens: w.maxTokens, temperature: 0, topP: 1, topK: 0, stop: [] };
      for await (const outputs of client.stream(ensembleInputs(w.prompt, sampling), {
        signal: controller.signal,
        deadline: Date.now() + 300_000,
        timeoutSeconds: 300,
      })) {
        const count = Number(outputs.get("output_token_count")?.data[0] ?? 0);
        if (ttft < 0 && count > 0) ttft = performance.now() - started;
        outputTokens = count;
      }
      return { ok: true, status: "OK", ttftMs: ttft, latencyMs: performance.now() - started, outputTokens };
    } catch (error) {
      return {
        ok: false,
        status: (error as Error).message.slice(0, 60),
        ttftMs: -1,
        latencyMs: performance.now() - started,
        outputTokens: 0,
      };
    }
  };
  return { send, close: () => client.close() };
}

export interface LevelResult {
  concurrency: number;
  durationSeconds: number;
  requests: number;
  errors: number;
  errorStatuses: Record<string, number>;
  requestsPerSecond: number;
  outputTokensPerSecond: number;
  ttftMs: { p50: number; p95: number; p99: number };
  latencyMs: { p50: number; p95: number; p99: number };
  /**
   * (interleaved runs, every target but the first) the median of this target's
   * difference to the first target's request sent just before it by the same
   * client: paired, so drift in the machine's load cancels out.
   */
  pairedAddedMs?: { pairs: number; latencyP50: number; ttftP50: number };
}

export function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

function stats(values: number[]): { p50: number; p95: number; p99: number } {
  const r = (v: number): number => Math.round(v * 10) / 10;
  return { p50: r(percentile(values, 50)), p95: r(percentile(values, 95)), p99: r(percentile(values, 99)) };
}

/** One level's figures from its samples. */
function summarize(samples: Sample[], concurrency: number, elapsed: number): LevelResult {
  const ok = samples.filter((s) => s.ok);
  const errorStatuses: Record<string, number> = {};
  for (const s of samples.filter((x) => !x.ok)) errorStatuses[s.status] = (errorStatuses[s.status] ?? 0) + 1;
  return {
    concurrency,
    durationSeconds: Math.round(elapsed * 100) / 100,
    requests: samples.length,
    errors: samples.length - ok.length,
    errorStatuses,
    requestsPerSecond: Math.round((ok.length / elapsed) * 100) / 100,
    outputTokensPerSecond: Math.round((ok.reduce((n, s) => n + s.outputTokens, 0) / elapsed) * 10) / 10,
    ttftMs: stats(ok.filter((s) => s.ttftMs >= 0).map((s) => s.ttftMs)),
    latencyMs: stats(ok.map((s) => s.latencyMs)),
  };
}

/**
 * Warm-up, before anything is measured: `requests` requests per target, `concurrency` at a time,
 * each target in turn, results discarded. V8 optimizes a function after about 400 calls (Maglev's
 * invocation count), and a measured level at c=1 sends a target one request every few tenths of a
 * second: without a warm-up, every once-per-request function of a gateway (and of the direct
 * target's client) runs unoptimized for the whole level, unlike a pod that has served its first
 * few hundred requests. Refusals and errors count as sent, so a failing target cannot hang it.
 */
export async function warmUp(
  targets: ReadonlyArray<{ name: string; send: Sender }>,
  workload: Workload,
  requests: number,
  concurrency: number,
  progress: (done: number) => void = () => undefined,
): Promise<void> {
  let next = 0;
  let done = 0;
  const total = requests * targets.length;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (let i = next++; i < total; i = next++) {
        await targets[i % targets.length].send(workload);
        progress(++done);
      }
    }),
  );
}

/** Run one concurrency level for `durationSeconds`, reporting progress once a second. */
export async function runLevel(
  send: Sender,
  workload: Workload,
  concurrency: number,
  durationSeconds: number,
  progress: (done: number, elapsed: number) => void = () => undefined,
): Promise<LevelResult> {
  const results = await runInterleaved([{ name: "only", send }], workload, concurrency, durationSeconds, progress);
  return results.only;
}

/**
 * One concurrency level over several targets at once: each client sends to
 * the targets in turn (client i starts at target i), so whatever else loads
 * the machine meanwhile falls on every target alike, and the differences
 * between targets are the targets' own. Rates are per target over the
 * level's whole duration, so they are 1/n of a target benched alone.
 */
export async function runInterleaved(
  targets: ReadonlyArray<{ name: string; send: Sender }>,
  workload: Workload,
  concurrency: number,
  durationSeconds: number,
  progress: (done: number, elapsed: number) => void = () => undefined,
): Promise<Record<string, LevelResult>> {
  const samples = targets.map((): Sample[] => []);
  /** Per target: [latency difference, TTFT difference] to the first target's request of the same round. */
  const pairs = targets.map((): Array<[number, number]> => []);
  let done = 0;
  const started = performance.now();
  const until = started + durationSeconds * 1000;
  const ticker = setInterval(() => progress(done, (performance.now() - started) / 1000), 1000);
  await Promise.all(
    Array.from({ length: concurrency }, async (_, client) => {
      let first: Sample | undefined;
      for (let i = client; performance.now() < until; i++) {
        const t = i % targets.length;
        const sample = await targets[t].send(workload);
        samples[t].push(sample);
        done += 1;
        if (t === 0) first = sample;
        else if (first?.ok && sample.ok) {
          pairs[t].push([sample.latencyMs - first.latencyMs, sample.ttftMs - first.ttftMs]);
        }
      }
    }),
  );
  clearInterval(ticker);
  const elapsed = (performance.now() - started) / 1000;
  const r = (v: number): number => Math.round(v * 10) / 10;
  return Object.fromEntries(
    targets.map((t, i) => {
      const result = summarize(samples[i], concurrency, elapsed);
      if (i > 0 && pairs[i].length > 0) {
        result.pairedAddedMs = {
          pairs: pairs[i].length,
          latencyP50: r(
            percentile(
              pairs[i].map(([l]) => l),
              50,
            ),
          ),
          ttftP50: r(
            percentile(
              pairs[i].map(([, f]) => f),
              50,
            ),
          ),
        };
      }
      return [t.name, result];
    }),
  );
}
