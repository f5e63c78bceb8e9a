/**
 * Stacks of FT and vLLM models (issue 37), resolved, planned and rendered as
 * the composition roots do: the committed example (SEED_MIXED_STACK: GPT-2 on
 * FT, TinyLlama 1.1B on vLLM, fixed sizes) and, inline, the example stack of
 * several models (test/stacks/models/Pulumi.seed-models.yaml) with KoGPT 6B
 * (GPT-J) and CodeGen-2B-mono (autoscaled from 0: it sleeps) served by vLLM
 * and h2oGPT by FT, for what the committed one does not have.
 */
import { resolveStack, formatProblems } from "../../infra/resolve";
import type { ResolvedStack } from "../../infra/config/stack";
import { buildStackPlan, type StackPlan } from "../../infra/plan/stack";
import { renderStackScaling, sharedScalingInput, type StackScalingManifests } from "../../infra/render/scaling";
import { SEED_MODELS_STACK, stackFileConfig } from "./modelsForm";

/** The committed example stack of both engines. */
export const SEED_MIXED_STACK = "test/stacks/models/Pulumi.seed-mixed.yaml";

const NO_SECRETS = { hfToken: false, kubeconfig: false };
const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** The vLLM models of the mixed stack, and the FT one. */
export const MIXED_VLLM_MODELS = ["kogpt-6b", "codegen-2b-mono"] as const;
export const MIXED_FT_MODEL = "h2ogpt-6-9b";

/** The mixed stack's raw config; `entries` overrides keys of a model's entry (e.g. tensorParallel; undefined removes one). */
export function mixedStackConfig(entries: Record<string, Record<string, unknown>> = {}): Record<string, unknown> {
  const raw = stackFileConfig(SEED_MODELS_STACK);
  const models = raw.models;
  if (!isRecord(models)) throw new Error("the example stack has no models map");
  for (const id of MIXED_VLLM_MODELS) {
    const entry = models[id];
    if (!isRecord(entry)) throw new Error(`the example stack has no model ${id}`);
    entry.engine = "vllm";
  }
  for (const [id, extra] of Object.entries(entries)) {
    const entry = models[id];
    if (!isRecord(entry)) throw new Error(`the example stack has no model ${id}`);
    // undefined removes a key.
    for (const [k, v] of Object.entries(extra))
      if (v === undefined) delete entry[k];
      else entry[k] = v;
  }
  return raw;
}

export function mixedStackPlan(raw = mixedStackConfig()): { models: ResolvedStack[]; plan: StackPlan } {
  const { models, problems } = resolveStack(raw, NO_SECRETS);
  if (!models) throw new Error(formatProblems("seed-mixed", problems));
  // Build-step hashes play no part in serving: a stand-in hasher spares reading the repository.
  return { models, plan: buildStackPlan(models, "seed-mixed", (p) => `h:${p}`) };
}

/** The committed mixed stack's raw config. */
export function seedMixedConfig(): Record<string, unknown> {
  return stackFileConfig(SEED_MIXED_STACK);
}

/** The mixed stack's scaling objects: what the models share, and each model's own. */
export function renderMixedScaling(raw = mixedStackConfig()): StackScalingManifests {
  const { plan } = mixedStackPlan(raw);
  return renderStackScaling(
    sharedScalingInput(
      plan.gateway.plan,
      plan.models.map((m) => m.plan.renderInputs.scaling),
    ),
  );
}
