/**
 * How validation reports: every problem collected into one ConfigError, each
 * with its key, value, reason and fix, so a bad stack file is fixed in one
 * round trip; warnings in the same shape. The rule files take an `Add` (config/schema.ts).
 */
import { PROJECT, type ConfigProblem } from "../config/schema";

export class ConfigError extends Error {
  constructor(
    readonly stack: string,
    readonly problems: ConfigProblem[],
  ) {
    super(formatProblems(stack, problems));
    this.name = "ConfigError";
  }
}

export function formatProblems(stack: string, problems: ConfigProblem[]): string {
  const noun = problems.length === 1 ? "problem" : "problems";
  return `${PROJECT}: ${problems.length} configuration ${noun} in stack "${stack}" (nothing was created):\n${problemLines(problems)}`;
}

/** Warnings: the stack can deploy, but its author should know (printed at preview and by synth). */
export function formatWarnings(stack: string, warnings: ConfigProblem[]): string {
  const noun = warnings.length === 1 ? "warning" : "warnings";
  return `${PROJECT}: ${warnings.length} configuration ${noun} in stack "${stack}":\n${problemLines(warnings)}`;
}

function problemLines(problems: ConfigProblem[]): string {
  return problems.map((p, i) => `  ${i + 1}. ${p.key} = ${display(p)}: ${p.message}.\n     fix: ${p.fix}`).join("\n");
}

function display(p: ConfigProblem): string {
  if (p.hideValue) return "(value not shown)";
  if (p.value === undefined) return "(unset)";
  return JSON.stringify(p.value);
}
