/**
 * The model plan a server image is built for: everything the bake puts in the
 * image that the serving side relies on (the model and its weights' source,
 * tensor parallelism, the limits in config.pbtxt, streaming, int8 mode, the
 * gpt_gemm shape and GPU, the CUDA archs compiled, the Triton release).
 *
 * Every stack exports it (`modelPlan`, canonical JSON) and its fingerprint
 * (`modelPlanFingerprint`, `sha256:<hex>` of that JSON); a promoted stack
 * (build.promoteFrom) computes its own from its config and refuses an image
 * whose building stack exported a different one. Pure, no Pulumi.
 */
import { createHash } from "node:crypto";
import { modelSourceUri } from "../outputs";
import type { Plan } from "../plan";

/** Bumped when a field is added or its meaning changes: plans of two versions never compare equal. */
export const MODEL_PLAN_VERSION = 1;

export interface ModelPlan {
  version: number;
  modelName: string;
  family: string;
  modelSource: string;
  arch: Plan["model"]["arch"];
  tensorParallel: number;
  maxBatchSize: number;
  maxInputLen: number;
  maxOutputLen: number;
  streaming: boolean;
  int8Mode: number;
  gemm: { batchSize: number; beamWidth: number; maxInputLen: number; dataType: number };
  gpuModel: string;
  smList: number[];
  tritonVersion: string;
}

/** The config key a person changes to move each field (named in a refusal's fix). */
export const MODEL_PLAN_KEYS: Record<Exclude<keyof ModelPlan, "version">, string> = {
  modelName: "model.name (or the preset's name)",
  family: "model.preset / model.family",
  modelSource: "model.source",
  arch: "model.preset / model.arch",
  tensorParallel: "serving.tensorParallel",
  maxBatchSize: "serving.maxBatchSize",
  maxInputLen: "serving.maxInputLen",
  maxOutputLen: "serving.maxOutputLen",
  streaming: "serving.streaming",
  int8Mode: "serving.int8Mode",
  gemm: "gemm.batchSize / gemm.beamWidth / gemm.maxInputLen",
  gpuModel: "serving.instanceType",
  smList: "serving.instanceType",
  tritonVersion: "build.tritonVersion",
};

/** The model plan of a stack's plan. Field order is fixed: it is the canonical JSON's. */
export function modelPlanOf(plan: Plan, int8Mode: number): ModelPlan {
  return {
    version: MODEL_PLAN_VERSION,
    modelName: plan.model.name,
    family: plan.model.family,
    modelSource: modelSourceUri(plan.model.source),
    arch: plan.model.arch,
    tensorParallel: plan.serving.tensorParallel,
    maxBatchSize: plan.serving.maxBatchSize,
    maxInputLen: plan.serving.maxInputLen,
    maxOutputLen: plan.serving.maxOutputLen,
    streaming: plan.serving.streaming,
    int8Mode,
    gemm: {
      batchSize: plan.gemm.args.batchSize,
      beamWidth: plan.gemm.args.beamWidth,
      maxInputLen: plan.gemm.args.maxInputLen,
      dataType: plan.gemm.args.dataType,
    },
    gpuModel: plan.serving.gpuModel,
    smList: [...plan.build.smList],
    tritonVersion: plan.build.tritonVersion,
  };
}

/** JSON with object keys sorted at every level, so equal plans serialise to equal text. */
function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value !== null && typeof value === "object")
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((k) => [k, canonical((value as Record<string, unknown>)[k])]),
    );
  return value;
}

/** The `modelPlan` output: canonical JSON of the model plan. */
export function serializeModelPlan(p: ModelPlan): string {
  return JSON.stringify(canonical(p));
}

/** The `modelPlanFingerprint` output: `sha256:<64 hex>` of the canonical JSON. */
export function modelPlanFingerprint(p: ModelPlan): string {
  return `sha256:${createHash("sha256").update(serializeModelPlan(p), "utf8").digest("hex")}`;
}

export interface ModelPlanDifference {
  field: string;
  built: unknown;
  planned: unknown;
  key: string;
}

/**
 * Fields that differ between the plan an image was built for (another
 * stack's `modelPlan` output, parsed) and this stack's. A field the built plan
 * lacks (an older version) counts as different.
 */
export function modelPlanDifferences(built: Record<string, unknown>, planned: ModelPlan): ModelPlanDifference[] {
  const out: ModelPlanDifference[] = [];
  for (const field of Object.keys(planned) as (keyof ModelPlan)[]) {
    const a = JSON.stringify(canonical(built[field]));
    const b = JSON.stringify(canonical(planned[field]));
    if (a !== b)
      out.push({
        field,
        built: built[field],
        planned: planned[field],
        key: field === "version" ? "(the program version of both stacks)" : MODEL_PLAN_KEYS[field],
      });
  }
  return out;
}
