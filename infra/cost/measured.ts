/**
 * A stack's own measured step times in its estimate: a build step whose input
 * hash equals that of a measurement the stack exported (`buildStepTimes`,
 * plan/measurements.ts) takes the measured seconds and says when they were
 * measured; every other step keeps the catalog's figure and its basis
 * (catalog/timings.ts: assumed, or partly measured from the converter runs).
 * The catalog itself never changes here: a measured rate replaces an assumed
 * one only through a reviewed change of catalog/timings.ts. Pure.
 */
import type { MeasuredStep } from "../plan/measurements";
import type { StepTiming } from "./input";

/** The steps with the measurements that belong to them (the latest when a step has several for its inputs). */
export function withMeasuredSteps(steps: readonly StepTiming[], measured: readonly MeasuredStep[]): StepTiming[] {
  return steps.map((s) => {
    const m = measured
      .filter((x) => x.step === s.id && x.inputHash === s.inputHash)
      .sort((a, b) => a.measuredAt.localeCompare(b.measuredAt))
      .at(-1);
    return m ? { ...s, seconds: m.seconds, basis: "measured", measuredAt: m.measuredAt } : s;
  });
}

/** How a figure is labelled: "measured on <UTC date>" for a stack's own measurement, else its catalog basis. */
export function basisLabel(x: { basis?: string; measuredAt?: string }): string | undefined {
  return x.measuredAt ? `measured on ${x.measuredAt.slice(0, 10)}` : x.basis;
}
