/**
 * The writers' contract: what a writer is given (one model's context, or the
 * stack's) and what it returns. A leaf of synth/: synth/artifacts.ts runs the
 * writers and the writers import only these types, so no writer imports the
 * module that imports it.
 */
import type { ResolvedStack } from "../config";
import type { Plan } from "../plan";
import type { MeasuredStep } from "../plan/measurements";
import type { StackPlan } from "../plan/stack";

export interface SynthContext {
  stackName: string;
  stack: ResolvedStack;
  plan: Plan;
  /**
   * The stack this model belongs to (a one-model stack: a stack of one): its
   * gateway, builders and registries, which a one-model stack's files show
   * beside the model's, and every model's resolved config in its order.
   */
  stackPlan: StackPlan;
  models: readonly ResolvedStack[];
  /** Read a file of this repository (relative path), or undefined when it does not exist. */
  readRepoFile(path: string): string | undefined;
  /** The stack file's aws:region, which the cost estimate prices in (cost.json warns without it). */
  region?: string;
  /** ISO date the estimate reads support phases at; today when unset. */
  today?: string;
  /**
   * The stack's own measured step times (`synth --measured`, plan/measurements.ts):
   * the estimate uses each for the step whose input hash it belongs to.
   * @default none: every step at the catalog's figure
   */
  measured?: readonly MeasuredStep[];
}

/** A stack of several models: every model's resolved config and the stack plan, in the stack's order. */
export interface StackSynthContext {
  stackName: string;
  models: readonly ResolvedStack[];
  stackPlan: StackPlan;
  readRepoFile(path: string): string | undefined;
  /** As SynthContext's: the region, date and measured step times the cost estimate reads. */
  region?: string;
  today?: string;
  measured?: readonly MeasuredStep[];
}

export interface SynthFile {
  /** Relative to the output folder. */
  path: string;
  content: string;
}

export interface WriterOutput {
  files: SynthFile[];
  directories?: string[];
  /** Sections merged into plan.json under their own keys. */
  plan?: Record<string, unknown>;
  /** Lines for the human summary. */
  summary?: string[];
}

export interface ArtifactWriter {
  name: string;
  /** Top-level entries of the output folder this writer owns; synth clears them before writing. */
  owns: string[];
  write(ctx: SynthContext): WriterOutput;
  /** A stack of several models: this model's files (under `models/<id>/`). Default: `write`. */
  writeModel?(ctx: SynthContext, stack: StackSynthContext): WriterOutput;
  /** A stack of several models: what the models share, written once at the top. Default: nothing. */
  writeShared?(stack: StackSynthContext): WriterOutput;
}
