/**
 * The canary's rollback rule, pure arithmetic on one window's tally: the
 * canary's error rate, and its p95 time to first token against the stable
 * build's. TTFT is kept as a histogram with geometric buckets (each bound
 * 2^(1/8), about 9 %, above the last) so that pods can add theirs up in the
 * store; a p95 read from it is the upper bound of the bucket holding the
 * 95th sample, at most one bucket (9 %) above the exact one, the same bias
 * for both builds.
 */
import type { CanaryRollback } from "./canaryConfig";

/** Upper bound of bucket 0, seconds. */
export const TTFT_BUCKET_BASE_SECONDS = 0.001;
export const TTFT_BUCKET_FACTOR = 2 ** (1 / 8);
/** Buckets 0..TTFT_BUCKETS-1: the last one (up to 0.001 s × 2^(159/8), about 16 min) also holds anything longer. */
export const TTFT_BUCKETS = 160;

export type RollbackReason = "error_rate" | "ttft";

/** TTFT histogram: bucket index -> samples. */
export type TtftHistogram = Map<number, number>;

/** One window of a canary, summed over its slots (and over the pods, with a store). */
export interface WindowTally {
  /** Canary requests finished (any outcome). */
  finished: number;
  /** Of those, the ones that ended in a server-side failure. */
  errors: number;
  canaryTtft: TtftHistogram;
  stableTtft: TtftHistogram;
}

export interface Verdict {
  reason: RollbackReason;
  /** The figures that broke the rule, for the log and the stored decision. */
  detail: string;
}

/** The bucket a TTFT of `seconds` falls in: the first whose upper bound is at least `seconds`. */
export function ttftBucket(seconds: number): number {
  if (!(seconds > TTFT_BUCKET_BASE_SECONDS)) return 0;
  const i = Math.ceil(Math.log(seconds / TTFT_BUCKET_BASE_SECONDS) / Math.log(TTFT_BUCKET_FACTOR) - 1e-9);
  return Math.min(TTFT_BUCKETS - 1, i);
}

/** Upper bound of bucket `i`, seconds. */
export function bucketUpper(i: number): number {
  return TTFT_BUCKET_BASE_SECONDS * TTFT_BUCKET_FACTOR ** i;
}

function total(h: TtftHistogram): number {
  let n = 0;
  for (const c of h.values()) n += c;
  return n;
}

/** The 95th percentile (nearest rank) as its bucket's upper bound; undefined for an empty histogram. */
export function p95(h: TtftHistogram): number | undefined {
  const n = total(h);
  if (n === 0) return undefined;
  const rank = Math.ceil(0.95 * n);
  let seen = 0;
  for (const i of [...h.keys()].sort((a, b) => a - b)) {
    seen += h.get(i) ?? 0;
    if (seen >= rank) return bucketUpper(i);
  }
  return undefined;
}

/**
 * Whether the canary broke its rule over the window: nothing is judged before
 * `minRequests` canary requests finished in it; then an error rate above
 * maxErrorRate, or (with at least minRequests first tokens of each build to
 * compare) a canary p95 TTFT above maxTtftRatio × the stable build's.
 */
export function judge(t: WindowTally, rule: CanaryRollback): Verdict | undefined {
  if (t.finished < rule.minRequests) return undefined;
  const rate = t.errors / t.finished;
  if (rate > rule.maxErrorRate) {
    return {
      reason: "error_rate",
      detail: `${t.errors} of ${t.finished} canary requests failed (${(rate * 100).toFixed(1)} %, the limit is ${(rule.maxErrorRate * 100).toFixed(1)} %)`,
    };
  }
  if (total(t.canaryTtft) < rule.minRequests || total(t.stableTtft) < rule.minRequests) return undefined;
  const canary = p95(t.canaryTtft);
  const stable = p95(t.stableTtft);
  if (canary === undefined || stable === undefined) return undefined;
  const ratio = canary / stable;
  if (ratio > rule.maxTtftRatio) {
    return {
      reason: "ttft",
      detail: `canary p95 time to first token ${canary.toFixed(3)} s is ${ratio.toFixed(2)} × the stable build's ${stable.toFixed(3)} s (the limit is ${rule.maxTtftRatio} ×)`,
    };
  }
  return undefined;
}
