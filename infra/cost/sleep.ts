/**
 * What sleeping saves and costs, per model that sleeps (autoscaling min 0):
 * its $/month awake all month (one pod's GPU nodes, the floor a woken model
 * holds) and asleep all month (no GPU node), and the minutes from zero to its
 * first token (activation, node boot, image pull, model load). A month is
 * somewhere between the two: every hour asleep saves `savedPerHourUsd`.
 *
 * The money is the model's own lines (cost/money.ts modelLines) at the two
 * node counts, so the figures add up with the rest of the estimate; the
 * minutes are the same assumed rates as the critical path's (catalog/timings.ts),
 * with the serial pull as the long end. Pure.
 */
import { HOURS_PER_MONTH, type RegionPrices } from "../catalog/prices";
import type { ModelCostInput, StackCostInput } from "./input";
import { modelLines, total } from "./money";
import type { Segment } from "./time";

export interface SleepReport {
  idleMinutes: number;
  /** $/month awake all month; absent when the region is unpriced. */
  awakeUsd?: number;
  /** $/month asleep all month; absent when the region is unpriced. */
  asleepUsd?: number;
  /** What an hour asleep saves; absent when the region is unpriced. */
  savedPerHourUsd?: number;
  /** What is still billed while it sleeps, in words. */
  remains: string;
  /** A held request to the model's first token: expected (FastImagePull when on) and the long end (serial pull). */
  zeroToFirstTokenSeconds: { expected: number; high: number };
  /** The expected path's segments, each with its basis. */
  path: Segment[];
}

const assumed = (step: string, seconds: number): Segment => ({ step, seconds, basis: "assumed" });

/** The sleep figures of `m`, or undefined when it does not sleep. `prices` undefined: the region is unpriced. */
export function sleepReport(
  stack: StackCostInput,
  m: ModelCostInput,
  prices: RegionPrices | undefined,
): SleepReport | undefined {
  const z = m.sleep;
  if (!z) return undefined;
  const sv = m.serving;
  const path = [
    assumed("activation (scrape + KEDA poll)", z.activationSeconds),
    assumed("GPU node boot", sv.nodeBootSeconds),
    assumed("image pull", sv.expectedPullSeconds),
    assumed("model load", sv.loadSeconds),
  ];
  const expected = path.reduce((a, s) => a + s.seconds, 0);
  const report: SleepReport = {
    idleMinutes: z.idleMinutes,
    remains: "its ECR images; the stack's shared lines (cluster, gateway, NAT, load balancer) do not change",
    zeroToFirstTokenSeconds: { expected, high: expected - sv.expectedPullSeconds + sv.pullSeconds },
    path,
  };
  if (!prices) return report;
  const at = (nodes: number) => {
    const lines = modelLines(stack, { ...m, nodes: { min: nodes, max: nodes } }, prices, []);
    return total(lines, "min");
  };
  const awakeUsd = at(z.awakeNodes);
  const asleepUsd = at(0);
  return { ...report, awakeUsd, asleepUsd, savedPerHourUsd: (awakeUsd - asleepUsd) / HOURS_PER_MONTH };
}
