/**
 * A further model's build steps on a builder that converts several models:
 * its step configs, plan files (expected weights, model repository, config.ini)
 * and the scripts' markers and scratch (STEP_SCOPE, scripts/remote/lib/state.sh)
 * move under the model's id, so two models' steps never share a path. The
 * first model keeps the one-model paths, so a live one-model stack's steps and
 * hashes do not change when it lists its model in `triton-ft:models`.
 *
 * Pure: step definitions in, step definitions out.
 */
import { REMOTE } from "./paths";
import type { ConfigValue, StepDefinition, StepId } from "./stepGraph";

/** The steps that belong to one model; the others (host, triton_with_ft, gateway image) are the builder's or the stack's. */
export const MODEL_STEP_IDS: readonly StepId[] = ["fetch", "convert", "gemm", "bake"];

/** The remote folder of a model's plan files. */
export function scopedPlanDir(scope: string): string {
  return `${REMOTE.plan}/${scope}`;
}

function rewrite(scope: string): (text: string) => string {
  const from = `${REMOTE.plan}/`;
  const to = `${scopedPlanDir(scope)}/`;
  return (text) => text.split(from).join(to);
}

function rewriteValue(value: ConfigValue, r: (t: string) => string): ConfigValue {
  if (typeof value === "string") return r(value);
  if (Array.isArray(value)) return (value as readonly string[]).map(r);
  return value;
}

/** The model steps of `steps` moved under `scope`; the others unchanged. */
export function scopeSteps(steps: StepDefinition[], scope: string): StepDefinition[] {
  if (!/^[a-z0-9][a-z0-9-]*$/.test(scope))
    throw new Error(`model id ${JSON.stringify(scope)} is not a safe folder name`);
  const r = rewrite(scope);
  return steps.map((step) => {
    if (!MODEL_STEP_IDS.includes(step.id)) return step;
    const config = step.config.map(([k, v]): [string, ConfigValue] => [k, rewriteValue(v, r)]);
    // STEP_SCOPE right after WORK_ROOT: markers, locks and scratch of this model (lib/state.sh).
    const at = config.findIndex(([k]) => k === "WORK_ROOT") + 1;
    config.splice(at, 0, ["STEP_SCOPE", scope]);
    return {
      ...step,
      scope,
      config,
      files: step.files.map((f) => ({ remotePath: r(f.remotePath), content: r(f.content) })),
    };
  });
}
