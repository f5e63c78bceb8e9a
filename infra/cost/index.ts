/**
 * The estimate of a stack: $/month (itemised, at the configured size and,
 * for autoscaled models, at min and max), minutes to serve per model, and $
 * per 1k generated tokens per model, from a StackCostInput (cost/input.ts)
 * and the vendored price table. synth writes it as cost.json, `synth --diff`
 * compares two of them, the Pulumi program logs its summary at preview.
 *
 *   resolved stack + plan -> cost/fromStack.ts -> StackCostInput -> estimateCost -> CostReport
 *
 * Pure: no Pulumi, no file or network access.
 */
import { ASSUMED, TIMINGS, type TimingEntry } from "../catalog/timings";
import { GATEWAY_IMAGE_BYTES, NLCU_TCP, STORE, TRAFFIC } from "./assumptions";
import { HOURS_PER_MONTH } from "../catalog/prices";
import type { GpuPricing } from "../render/observability";
import type { LineItem, StackCostInput } from "./input";
import { modelLines, stackLines, total } from "./money";
import { PRICE_TABLE, instanceHourly, regionPrices, type PriceSource, type PriceTable } from "../catalog/prices";
import { buildSeconds, stepFinishSeconds, changeInputs, estimateTime, type ChangeInputs, type Segment } from "./time";
import { estimateTokens, type Range } from "./tokens";
import { sleepReport, type SleepReport } from "./sleep";

export const COST_SCHEMA_VERSION = 1;

export interface ModelReport {
  id: string;
  instanceType: string;
  nodes: { min: number; max: number };
  monthlyUsd: { min: number; max: number };
  firstDeploySeconds: number;
  criticalPath: Segment[];
  newReplicaSeconds: number;
  tokensPerSecondPerPod: Range;
  usdPer1kTokens?: Range;
  /** A model that sleeps (autoscaling min 0): $/month awake and asleep, minutes from zero to its first token. */
  sleep?: SleepReport;
  /** A canary build of model `of` (issue 36): its lines are what the canary adds to the stack. */
  canary?: { of: string; weight: number };
  /** What a later `--diff` needs to time a change: step hashes and durations, the rollout's shape. */
  change: ChangeInputs;
}

export interface CostReport {
  schemaVersion: number;
  stack: string;
  region?: string;
  /** False when the region is not in the table: no money figure is given, only the warning. */
  priced: boolean;
  monthlyUsd: { min: number; max: number };
  items: LineItem[];
  /** What one build run costs on each builder (its instance hours while the first deploy's build runs). */
  buildRuns: Array<{ builder: string; compiles?: boolean; instanceType: string; hours: number; usd?: number }>;
  models: ModelReport[];
  warnings: string[];
  /** The sources the prices came from (only those used). */
  sources: Record<string, PriceSource>;
  assumptions: {
    hoursPerMonth: number;
    traffic: typeof TRAFFIC;
    nlcuTcp: typeof NLCU_TCP;
    store: typeof STORE;
    gatewayImageBytes: number;
  };
  /** Every timing rate with its kind (measured or assumed). */
  rates: readonly TimingEntry[];
}

export function estimateCost(input: StackCostInput, table: PriceTable = PRICE_TABLE): CostReport {
  const warnings: string[] = [];
  const lookup = regionPrices(input.region, table);
  const items: LineItem[] = [];
  if (lookup.ok) {
    for (const m of input.models) items.push(...modelLines(input, m, lookup.prices, warnings));
    items.push(...stackLines(input, lookup.prices, warnings));
  } else {
    warnings.push(lookup.warning);
  }
  const models = input.models.map((m): ModelReport => {
    const hourly = lookup.ok ? instanceHourly(lookup.prices, m.instanceType) : undefined;
    const t = estimateTime(input, m, ASSUMED.builderLaunchSeconds);
    const k = estimateTokens(m, hourly && "usd" in hourly ? hourly.usd : undefined);
    const own = items.filter((i) => i.scope === m.id);
    const sleep = sleepReport(input, m, lookup.ok ? lookup.prices : undefined);
    return {
      id: m.id,
      instanceType: m.instanceType,
      nodes: m.nodes,
      monthlyUsd: { min: total(own, "min"), max: total(own, "max") },
      firstDeploySeconds: t.firstDeploySeconds,
      criticalPath: t.criticalPath,
      newReplicaSeconds: t.newReplicaSeconds,
      tokensPerSecondPerPod: k.tokensPerSecondPerPod,
      ...(k.usdPer1kTokens ? { usdPer1kTokens: k.usdPer1kTokens } : {}),
      ...(sleep ? { sleep } : {}),
      ...(m.canary ? { canary: { ...m.canary } } : {}),
      change: changeInputs(m, input.builders.find((b) => b.id === m.build.builder)?.stopWhenDone ?? false),
    };
  });
  const buildRuns = input.builders.map((b) => {
    const mine = input.models.filter((m) => m.build.builder === (b.compilesFor ?? b.id));
    // A GPU builder runs from launch until its last model's last image: the longest build on it.
    // A compile host runs from launch until its triton_with_ft is pushed.
    const seconds = Math.max(
      0,
      ...mine.map((m) =>
        b.compilesFor
          ? stepFinishSeconds(m, "triton-with-ft", ASSUMED.builderLaunchSeconds)
          : buildSeconds(m, ASSUMED.builderLaunchSeconds),
      ),
    );
    const hourly = lookup.ok ? instanceHourly(lookup.prices, b.instanceType) : undefined;
    const hours = seconds / 3600;
    return {
      builder: b.id,
      ...(b.compilesFor ? { compiles: true } : {}),
      instanceType: b.instanceType,
      hours,
      ...(hourly && "usd" in hourly ? { usd: hours * hourly.usd } : {}),
    };
  });
  const used = new Set(items.flatMap((i) => (i.price ? [i.price.source] : [])));
  return {
    schemaVersion: COST_SCHEMA_VERSION,
    stack: input.stack,
    ...(input.region ? { region: input.region } : {}),
    priced: lookup.ok,
    monthlyUsd: { min: total(items, "min"), max: total(items, "max") },
    items,
    buildRuns,
    models,
    warnings,
    sources: Object.fromEntries(Object.entries(table.sources).filter(([id]) => used.has(id))),
    assumptions: {
      hoursPerMonth: HOURS_PER_MONTH,
      traffic: TRAFFIC,
      nlcuTcp: NLCU_TCP,
      store: STORE,
      gatewayImageBytes: GATEWAY_IMAGE_BYTES,
    },
    rates: TIMINGS,
  };
}

/**
 * The price of one model's GPU node for the dashboard's live cost panels
 * (render/dashboard.ts); undefined when the table cannot price it.
 */
export function gpuPricing(r: CostReport, modelId?: string): GpuPricing | undefined {
  const m = modelId ? r.models.find((x) => x.id === modelId) : r.models[0];
  const line = r.items.find((i) => i.id === "gpu-nodes" && i.scope === m?.id);
  if (!m || !line?.price) return undefined;
  const taken = r.sources[line.price.source]?.taken;
  return {
    nodeUsdPerHour: line.price.usd,
    instanceType: m.instanceType,
    source: `on-demand list price, ${line.price.source}${taken ? ` of ${taken}` : ""}`,
  };
}

export type { StackCostInput } from "./input";
