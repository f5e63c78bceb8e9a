/** Config fixtures in the `triton-ft:models` form. */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { MODEL_SERVING_KEYS } from "../../infra/config/schema";
import { parseStackFile } from "../../infra/synth/stackFile";

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * A one-model config moved to the `models` form with one entry under `id`:
 * the model's keys, its serving keys and gemm go into the entry, as a user
 * migrating a live stack would write it (docs/serving.md, Several models).
 */
export function toModelsForm(raw: Record<string, unknown>, id: string): Record<string, unknown> {
  const { model, gemm, serving, ...rest } = structuredClone(raw);
  const m = isRecord(model) ? model : {};
  const s = isRecord(serving) ? serving : {};
  const entry: Record<string, unknown> = { ...m };
  delete entry.name;
  const stackServing: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(s)) {
    // The one-model form's serving.canary is the entry's canary.
    if ((MODEL_SERVING_KEYS as readonly string[]).includes(k) || k === "canary") entry[k] = v;
    else stackServing[k] = v;
  }
  if (gemm !== undefined) entry.gemm = gemm;
  return {
    ...rest,
    ...(Object.keys(stackServing).length > 0 ? { serving: stackServing } : {}),
    models: { [id]: entry },
  };
}

const ROOT = join(__dirname, "..", "..");

/** The raw config of a stack file under the repository (e.g. `test/stacks/models/Pulumi.seed-models.yaml`). */
export function stackFileConfig(relativePath: string): Record<string, unknown> {
  return parseStackFile(readFileSync(join(ROOT, relativePath), "utf8"), relativePath).raw;
}

export const SEED_MODELS_STACK = "test/stacks/models/Pulumi.seed-models.yaml";

/** The same stack with a canary on KoGPT (docs/serving.md, Canary). */
export const SEED_CANARY_STACK = "test/stacks/models/Pulumi.seed-canary.yaml";
