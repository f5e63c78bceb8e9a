/**
 * synth writer for the cost and time estimate: `<out>/cost.json` (every line
 * of the monthly sum with its arithmetic and price source, each model's
 * minutes to serve and $ per 1k tokens, the assumptions and rates used) and
 * the summary lines synth prints. `synth --diff` reads two cost.json files
 * to show what a change costs and how long it takes.
 */
import { isoDate } from "../catalog/eks";
import { estimateCost, type CostReport } from "../cost";
import { summaryLines } from "../cost/format";
import { costInput } from "../cost/fromStack";

import type { ArtifactWriter, StackSynthContext, SynthContext, WriterOutput } from "./types";
export const COST_FILE = "cost.json";

/** One estimate for the whole stack: every model's lines, the builders, registries and store. */
export function stackCostReport(stack: StackSynthContext): CostReport {
  const view = stack.models[0];
  if (!view) throw new Error("synth: a stack has at least one model");
  return estimateCost(
    costInput(view, stack.models, stack.stackPlan, {
      stackName: stack.stackName,
      region: stack.region,
      today: stack.today ?? isoDate(new Date()),
      ...(stack.measured ? { measured: stack.measured } : {}),
    }),
  );
}

/** A one-model stack's estimate: its stack of one. */
export const costReport = (ctx: SynthContext): CostReport => stackCostReport(ctx);

function costFile(report: CostReport): WriterOutput {
  return {
    files: [{ path: COST_FILE, content: JSON.stringify(report, null, 2) + "\n" }],
    summary: summaryLines(report, COST_FILE),
  };
}

export const costWriter: ArtifactWriter = {
  name: "cost",
  owns: [COST_FILE],
  write: (ctx) => costFile(costReport(ctx)),
  // Several models: the estimate is the stack's (cost.json at the top), not a model's.
  writeModel: () => ({ files: [] }),
  writeShared: (stack) => costFile(stackCostReport(stack)),
};

/** Reads a cost.json written by this writer (the `--diff` side); throws on another shape. */
export function parseCostReport(text: string, file: string): CostReport {
  const doc = JSON.parse(text) as Partial<CostReport>;
  if (typeof doc.stack !== "string" || !Array.isArray(doc.items) || !Array.isArray(doc.models) || !doc.monthlyUsd)
    throw new Error(`${file} is not a cost.json written by synth`);
  return doc as CostReport;
}
