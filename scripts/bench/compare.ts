/**
 * What each gateway target adds over direct Triton, and the store over the
 * plain gateway, from one bench run's levels: differences in ms and ratios,
 * at p50 latency and p50 time to first token. Pure: bench.ts logs and
 * writes what this returns.
 */
import type { GatewayAdded, GatewayOverhead, StoreOverhead } from "./chart";
import type { LevelResult } from "./loadgen";

/** The bench's target names (bench.ts), by role. */
export const TARGETS = {
  direct: "triton (direct gRPC)",
  gateway: "gateway (OpenAI SSE)",
  store: "gateway + store (OpenAI SSE)",
} as const;

export interface Comparison {
  gatewayAdded?: GatewayAdded[];
  storeOverhead?: StoreOverhead[];
  gatewayOverhead?: GatewayOverhead[];
}

const ms = (a: number, b: number): number => Math.round((a - b) * 10) / 10;
const ratio = (a: number, b: number): number => Math.round((a / b) * 1000) / 1000;

/** `levels` over `direct`, level by level (both ran the same levels, in order). */
function addedOver(target: string, levels: readonly LevelResult[], direct: readonly LevelResult[]): GatewayAdded[] {
  return levels.map((l, i): GatewayAdded => {
    const d = direct[i];
    const paired = l.pairedAddedMs;
    return {
      target,
      concurrency: l.concurrency,
      latencyP50AddedMs: ms(l.latencyMs.p50, d.latencyMs.p50),
      ttftP50AddedMs: ms(l.ttftMs.p50, d.ttftMs.p50),
      latencyP50Ratio: ratio(l.latencyMs.p50, d.latencyMs.p50),
      ttftP50Ratio: ratio(l.ttftMs.p50, d.ttftMs.p50),
      ...(paired
        ? {
            paired: {
              pairs: paired.pairs,
              latencyP50AddedMs: paired.latencyP50,
              ttftP50AddedMs: paired.ttftP50,
              // The paired difference over the direct p50: what the gateway adds, as a ratio.
              latencyP50Ratio: ratio(d.latencyMs.p50 + paired.latencyP50, d.latencyMs.p50),
              ttftP50Ratio: ratio(d.ttftMs.p50 + paired.ttftP50, d.ttftMs.p50),
            },
          }
        : {}),
    };
  });
}

export function compare(targets: Readonly<Record<string, readonly LevelResult[]>>): Comparison {
  const d = targets[TARGETS.direct];
  const g = targets[TARGETS.gateway];
  const gs = targets[TARGETS.store];
  const out: Comparison = {};
  if (g && gs) {
    out.storeOverhead = gs.map((sl, i): StoreOverhead => ({
      concurrency: sl.concurrency,
      latencyP50AddedMs: ms(sl.latencyMs.p50, g[i].latencyMs.p50),
      latencyP99AddedMs: ms(sl.latencyMs.p99, g[i].latencyMs.p99),
      ttftP50AddedMs: ms(sl.ttftMs.p50, g[i].ttftMs.p50),
      latencyP50Ratio: ratio(sl.latencyMs.p50, g[i].latencyMs.p50),
      latencyP99Ratio: ratio(sl.latencyMs.p99, g[i].latencyMs.p99),
    }));
  }
  if (d && (g || gs)) {
    out.gatewayAdded = [...(g ? addedOver(TARGETS.gateway, g, d) : []), ...(gs ? addedOver(TARGETS.store, gs, d) : [])];
  }
  if (d && g) {
    out.gatewayOverhead = g.map((gl, i) => ({
      concurrency: gl.concurrency,
      latencyP50Ratio: ratio(gl.latencyMs.p50, d[i].latencyMs.p50),
      latencyP95Ratio: ratio(gl.latencyMs.p95, d[i].latencyMs.p95),
      ttftP50Ratio: ratio(gl.ttftMs.p50, d[i].ttftMs.p50),
    }));
  }
  return out;
}

/** One line per gateway target and level: what it adds over direct Triton, of the p50s and paired. */
export function addedLine(o: GatewayAdded): string {
  const sign = (v: number): string => (v >= 0 ? `+${v}` : `${v}`);
  const paired = o.paired
    ? `; paired (${o.paired.pairs}): latency p50 ${sign(o.paired.latencyP50AddedMs)} ms (x${o.paired.latencyP50Ratio}), TTFT p50 ${sign(o.paired.ttftP50AddedMs)} ms (x${o.paired.ttftP50Ratio})`
    : "";
  return `${o.target} adds at c=${o.concurrency}: latency p50 ${sign(o.latencyP50AddedMs)} ms (x${o.latencyP50Ratio}), TTFT p50 ${sign(o.ttftP50AddedMs)} ms (x${o.ttftP50Ratio})${paired}`;
}
