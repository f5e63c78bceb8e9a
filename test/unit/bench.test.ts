/**
 * The bench's measuring parts (scripts/bench/): one level interleaves its
 * targets client by client, pairs each gateway request with the direct
 * request its client sent just before it, and the report gives what each
 * gateway target adds over direct Triton at p50 latency and p50 TTFT, in ms
 * and as a ratio, of the p50s and paired. Senders here are plain functions
 * returning chosen timings: no server is involved.
 */
import { describe, expect, it } from "vitest";
import { TARGETS, addedLine, compare } from "../../scripts/bench/compare";
import { SseReader } from "../../scripts/bench/gatewayClient";
import { type LevelResult, type Sample, type Sender, runInterleaved, warmUp } from "../../scripts/bench/loadgen";

const WORKLOAD = { prompt: "p", maxTokens: 4 };

function sample(latencyMs: number, ttftMs: number): Sample {
  return { ok: true, status: "OK", ttftMs, latencyMs, outputTokens: 4 };
}

describe("runInterleaved", () => {
  it("sends each client's requests to the targets in turn, client i starting at target i", async () => {
    const calls: string[] = [];
    const target = (name: string): { name: string; send: Sender } => ({
      name,
      send: async () => {
        calls.push(name);
        await new Promise((resolve) => setImmediate(resolve));
        return sample(1, 1);
      },
    });
    await runInterleaved([target("a"), target("b"), target("c")], WORKLOAD, 1, 0.05);
    expect(calls.length).toBeGreaterThan(6);
    calls.forEach((name, i) => expect(name).toBe("abc"[i % 3]));

    calls.length = 0;
    await runInterleaved([target("a"), target("b"), target("c")], WORKLOAD, 2, 0.05);
    // Two clients at once: the first sends a, b, c, ...; the second b, c, a, ...
    expect(calls.slice(0, 2)).toEqual(["a", "b"]);
    const counts = ["a", "b", "c"].map((n) => calls.filter((c) => c === n).length);
    expect(Math.max(...counts) - Math.min(...counts)).toBeLessThanOrEqual(2);
  });

  it("pairs every gateway request with the direct request its client sent just before it", async () => {
    // Each direct request is 10 ms slower than the one before; each gateway request adds 3 ms (TTFT 1 ms),
    // the store one 5 ms (TTFT 2 ms) over the direct request just before it. Paired, the drift cancels.
    let last = 0;
    const direct: Sender = async () => {
      last += 10;
      return sample(100 + last, 20 + last);
    };
    const over =
      (latency: number, ttft: number): Sender =>
      async () =>
        sample(100 + last + latency, 20 + last + ttft);
    const level = await runInterleaved(
      [
        { name: "direct", send: direct },
        { name: "gw", send: over(3, 1) },
        { name: "store", send: over(5, 2) },
      ],
      WORKLOAD,
      1,
      0.05,
    );
    expect(level.direct.pairedAddedMs).toBeUndefined();
    expect(level.gw.pairedAddedMs).toMatchObject({ latencyP50: 3, ttftP50: 1 });
    expect(level.store.pairedAddedMs).toMatchObject({ latencyP50: 5, ttftP50: 2 });
    expect(level.gw.pairedAddedMs?.pairs).toBe(level.gw.requests);
  });
});

describe("warmUp", () => {
  it("sends each target exactly its requests, never more than `concurrency` at once, failures included", async () => {
    const sent = new Map<string, number>();
    let open = 0;
    let most = 0;
    const target = (name: string, ok: boolean): { name: string; send: Sender } => ({
      name,
      send: async () => {
        sent.set(name, (sent.get(name) ?? 0) + 1);
        most = Math.max(most, ++open);
        await new Promise((resolve) => setImmediate(resolve));
        open -= 1;
        return ok ? sample(1, 1) : { ...sample(1, -1), ok: false, status: "429" };
      },
    });
    const seen: number[] = [];
    await warmUp([target("a", true), target("b", false), target("c", true)], WORKLOAD, 7, 3, (done) => seen.push(done));
    expect(Object.fromEntries(sent)).toEqual({ a: 7, b: 7, c: 7 });
    expect(most).toBe(3);
    // Progress counts every request once, in order, up to the total.
    expect(seen).toEqual(Array.from({ length: 21 }, (_, i) => i + 1));

    sent.clear();
    await warmUp([target("a", true)], WORKLOAD, 0, 4);
    expect(sent.size).toBe(0);
  });
});

function level(latencyP50: number, ttftP50: number, paired?: { latencyP50: number; ttftP50: number }): LevelResult {
  return {
    concurrency: 1,
    durationSeconds: 10,
    requests: 30,
    errors: 0,
    errorStatuses: {},
    requestsPerSecond: 3,
    outputTokensPerSecond: 48,
    ttftMs: { p50: ttftP50, p95: ttftP50 + 5, p99: ttftP50 + 9 },
    latencyMs: { p50: latencyP50, p95: latencyP50 + 20, p99: latencyP50 + 40 },
    ...(paired ? { pairedAddedMs: { pairs: 30, ...paired } } : {}),
  };
}

describe("compare", () => {
  const report = compare({
    [TARGETS.direct]: [level(400, 30)],
    [TARGETS.gateway]: [level(401, 31.5, { latencyP50: 1.2, ttftP50: 1.4 })],
    [TARGETS.store]: [level(402, 33, { latencyP50: 2.4, ttftP50: 1.8 })],
  });

  it("gives both gateway targets' p50 latency and TTFT over direct Triton, in ms and as ratios", () => {
    expect(report.gatewayAdded).toEqual([
      {
        target: TARGETS.gateway,
        concurrency: 1,
        latencyP50AddedMs: 1,
        ttftP50AddedMs: 1.5,
        latencyP50Ratio: 1.003,
        ttftP50Ratio: 1.05,
        paired: { pairs: 30, latencyP50AddedMs: 1.2, ttftP50AddedMs: 1.4, latencyP50Ratio: 1.003, ttftP50Ratio: 1.047 },
      },
      {
        target: TARGETS.store,
        concurrency: 1,
        latencyP50AddedMs: 2,
        ttftP50AddedMs: 3,
        latencyP50Ratio: 1.005,
        ttftP50Ratio: 1.1,
        paired: { pairs: 30, latencyP50AddedMs: 2.4, ttftP50AddedMs: 1.8, latencyP50Ratio: 1.006, ttftP50Ratio: 1.06 },
      },
    ]);
  });

  it("gives what the store adds over the plain gateway", () => {
    expect(report.storeOverhead).toEqual([
      {
        concurrency: 1,
        latencyP50AddedMs: 1,
        latencyP99AddedMs: 1,
        ttftP50AddedMs: 1.5,
        latencyP50Ratio: 1.002,
        latencyP99Ratio: 1.002,
      },
    ]);
  });

  it("logs a gain with its sign", () => {
    const line = addedLine({ ...(report.gatewayAdded ?? [])[1], ttftP50AddedMs: -0.4 });
    expect(line).toContain("TTFT p50 -0.4 ms (x1.1)");
    expect(line).toContain("paired (30): latency p50 +2.4 ms (x1.006), TTFT p50 +1.8 ms (x1.06)");
  });

  it("compares nothing without direct Triton", () => {
    expect(compare({ [TARGETS.gateway]: [level(401, 31)] })).toEqual({});
  });
});

describe("SseReader", () => {
  it("gives each event's data once it is complete, across chunk boundaries", () => {
    const r = new SseReader();
    expect(r.push('data: {"a"')).toEqual([]);
    expect(r.push(":1}\n")).toEqual([]);
    expect(r.push('\ndata: {"b":2}\n\ndata: [DO')).toEqual(['{"a":1}', '{"b":2}']);
    expect(r.push("NE]\n\n")).toEqual(["[DONE]"]);
  });
});
