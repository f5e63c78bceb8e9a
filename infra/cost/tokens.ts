/**
 * Expected decode throughput and $ per 1k generated tokens of one model.
 *
 * FT's decode step is memory-bandwidth-bound: every step each GPU streams its
 * weight shard and the KV cache of the batch once, and emits one token per
 * sequence. With the batch full,
 *
 *   tokens/s per pod ≈ B × η × BW / (W_gpu + KV_gpu)
 *
 * B the max batch size, BW one GPU's peak bandwidth, η the share of it a
 * decode step reaches, W_gpu the fp16 weights one GPU holds, KV_gpu its KV
 * cache (the GPUs of a tensor-parallel pod work in parallel, each on its
 * shard, so the per-GPU figures give the pod's step time). Then
 *
 *   $/1k tokens = (node $/h ÷ pods per node) ÷ (tokens/s × 3600) × 1000.
 *
 * A step never takes less than a fixed launch cost per layer
 * (catalog/timings.ts DECODE_STEP_FLOOR_SECONDS_PER_LAYER): only very small
 * models reach it. The range it reports: `low` throughput takes η = 0.5 (the drains' figure,
 * catalog/timings.ts) and the KV cache at the longest request; `central`
 * η = 0.5 with the KV cache at the mean context of a request (prompt at its
 * maximum, half the output generated); `high` η = 0.8. Not modelled, and all
 * pushing the real figure down: the prompt (context) phase, tensor-parallel
 * all-reduce (PCIe on g5/g6/g6e), sampling, and batches that are not full.
 */
import {
  DECODE_BANDWIDTH_EFFICIENCY,
  DECODE_BANDWIDTH_EFFICIENCY_HIGH,
  DECODE_STEP_FLOOR_SECONDS_PER_LAYER,
} from "../catalog/timings";
import type { ModelCostInput } from "./input";

export interface Range {
  low: number;
  central: number;
  high: number;
}

export interface TokenEstimate {
  /** Generated tokens per second of one pod with a full batch. */
  tokensPerSecondPerPod: Range;
  /** Bytes one GPU reads per decode step at the central estimate. */
  bytesPerStep: number;
  /** $ per 1,000 generated tokens (low throughput gives the high price); undefined when the instance is unpriced. */
  usdPer1kTokens?: Range;
  formula: string;
}

export const TOKENS_FORMULA =
  "tokens/s per pod ≈ maxBatchSize ÷ max((weights per GPU + KV cache per GPU) ÷ (η × GPU bandwidth), layers × step floor); $/1k tokens = (node $/h ÷ pods per node) ÷ (tokens/s × 3600) × 1000";

/** Share of the longest request's KV cache a decode step reads on average: full prompt, half the output. */
export function meanContextShare(maxInputLen: number, maxOutputLen: number): number {
  return (maxInputLen + maxOutputLen / 2) / (maxInputLen + maxOutputLen);
}

export function estimateTokens(m: ModelCostInput, nodeHourlyUsd: number | undefined): TokenEstimate {
  const d = m.decode;
  const bandwidth = d.memoryBandwidthGBps * 1e9;
  const meanKv = d.kvCacheBytesPerGpu * meanContextShare(d.maxInputLen, d.maxOutputLen);
  // A step streams its bytes, but never takes less than its kernels' fixed launch cost.
  const floor = d.layers * DECODE_STEP_FLOOR_SECONDS_PER_LAYER;
  const rate = (efficiency: number, bytes: number) =>
    d.maxBatchSize / Math.max(bytes / (efficiency * bandwidth), floor);
  // The engine's range (a vLLM model's from the catalog); FT's by default.
  const eff = d.efficiency ?? { low: DECODE_BANDWIDTH_EFFICIENCY, high: DECODE_BANDWIDTH_EFFICIENCY_HIGH };
  const tokens: Range = {
    low: rate(eff.low, d.weightsBytesPerGpu + d.kvCacheBytesPerGpu),
    central: rate(eff.low, d.weightsBytesPerGpu + meanKv),
    high: rate(eff.high, d.weightsBytesPerGpu + meanKv),
  };
  const out: TokenEstimate = {
    tokensPerSecondPerPod: tokens,
    bytesPerStep: d.weightsBytesPerGpu + meanKv,
    formula: TOKENS_FORMULA,
  };
  if (nodeHourlyUsd === undefined) return out;
  const podHourly = nodeHourlyUsd / m.podsPerNode;
  const per1k = (tps: number) => (podHourly / (tps * 3600)) * 1000;
  // The price range runs the other way: the lowest throughput is the highest price.
  out.usdPer1kTokens = { low: per1k(tokens.high), central: per1k(tokens.central), high: per1k(tokens.low) };
  return out;
}
