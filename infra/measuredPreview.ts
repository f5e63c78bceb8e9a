/**
 * A preview's estimate with the stack's own measured step times: the program
 * logs the catalog's estimate (cost/format.ts summaryLines), and a preview of a
 * stack whose last update exported `buildStepTimes` (plan/measurements.ts)
 * logs each model's first deploy and critical path again with every step whose
 * input hash is unchanged at its measured time ("measured on <date>"), the
 * others at the catalog's ("assumed", "partly measured"). Read through the
 * reference to the stack itself (secretChanges.ts selfReference). A first
 * update, an update (not a preview) and a stack with no measurement say
 * nothing more.
 */
import * as pulumi from "@pulumi/pulumi";
import type { CostReport } from "./cost";
import { criticalPathText, minutes } from "./cost/format";
import { STEP_TIMES_OUTPUT, readMeasuredSteps, type MeasuredStep } from "./plan/measurements";

/** The lines a preview logs for an estimate made with `measured` (pure). */
export function measuredEstimateLines(measured: readonly MeasuredStep[], report: CostReport): string[] {
  return [
    `with this stack's own step times (${measured.length} measured, ${STEP_TIMES_OUTPUT} of its last update; a step whose inputs changed stays the catalog's):`,
    ...report.models.map(
      (m) =>
        `  ${m.id}: first deploy ${minutes(m.firstDeploySeconds)}; critical path: ${criticalPathText(m.criticalPath)}`,
    ),
  ];
}

/** In a preview: the estimate again with the measurements the stack's last update exported, when it has any. */
export function reportMeasuredEstimate(
  self: pulumi.StackReference,
  estimate: (measured: MeasuredStep[]) => CostReport,
): void {
  if (!pulumi.runtime.isDryRun()) return;
  self.getOutput(STEP_TIMES_OUTPUT).apply((value: unknown) => {
    // A first update, or a stack last updated before the output existed.
    if (value === undefined || value === null) return;
    let measured: MeasuredStep[];
    try {
      measured = readMeasuredSteps(value, `this stack's ${STEP_TIMES_OUTPUT} output`);
    } catch (err) {
      void pulumi.log.warn(`the estimate uses the catalog's figures only: ${(err as Error).message}`);
      return;
    }
    if (measured.length === 0) return;
    for (const line of measuredEstimateLines(measured, estimate(measured))) void pulumi.log.info(line);
  });
}
