/**
 * The model plan a server image is built for, as promotion compares it: the
 * image fingerprint document (plan/fingerprint.ts), derived from what the
 * bake step and the steps it consumes hash, minus the deploy-time values. No
 * field list is kept by hand: whatever shapes the image is in it.
 *
 * Every stack exports it (`modelPlan`, canonical JSON, and per model under
 * `models.<id>`) with its fingerprint (`modelPlanFingerprint`, `sha256:<hex>`);
 * a promoted stack (build.promoteFrom) computes its own from its config and
 * refuses an image whose building stack exported a different one, naming
 * each differing entry and the config key that sets it. Pure, no Pulumi.
 */
import type { Plan } from "../plan";
import {
  FINGERPRINT_VERSION,
  fingerprintOf,
  serializeFingerprint,
  type FingerprintedStep,
  type ImageFingerprint,
} from "../plan/fingerprint";

export type ModelPlan = ImageFingerprint;

/** The model plan of a model's plan. */
export function modelPlanOf(plan: Plan): ModelPlan {
  return plan.image.document;
}

/** The `modelPlan` output: canonical JSON of the model plan. */
export function serializeModelPlan(p: ModelPlan): string {
  return serializeFingerprint(p);
}

/** The `modelPlanFingerprint` output: `sha256:<64 hex>` of the canonical JSON. */
export function modelPlanFingerprint(p: ModelPlan): string {
  return fingerprintOf(p);
}

/**
 * The config key a person changes to move a step's config entry (named in a refusal's fix); entries
 * not listed follow from the model and serving keys together.
 */
export const STEP_ENTRY_KEYS: Readonly<Record<string, string>> = {
  SOURCE_KIND: "model.source",
  HF_REPO_ID: "model.source.huggingface.repo",
  HF_REVISION: "model.source.huggingface.revision",
  ARCHIVE_URL: "model.source.archive.url",
  ARCHIVE_SHA256: "model.source.archive.sha256",
  TOKENIZER_REPO_ID: "model.preset (its tokenizer repository)",
  TOKENIZER_REVISION: "model.source.archive.tokenizerRevision",
  TRITON_VERSION: "build.tritonVersion",
  FT_BACKEND_COMMIT: "build.backendCommit",
  FT_COMMIT: "build.ftCommit",
  SM_LIST: "serving.instanceType (its GPU's SM)",
  TP: "serving.tensorParallel",
  GEMM_ARGV: "gemm.batchSize / gemm.beamWidth / gemm.maxInputLen / serving.tensorParallel",
  CHECK_FAMILY: "model.preset / model.family",
};

/** Where a differing file of the plan comes from. */
function fileKey(path: string): string {
  if (path.endsWith("config.pbtxt"))
    return "serving.maxBatchSize / maxInputLen / maxOutputLen / streaming / int8Mode / tensorParallel (the model repository)";
  if (path.includes("expected-")) return "model.preset / model.arch / serving.tensorParallel (the expected weights)";
  return "the model and serving keys";
}

const PROGRAM = "(the program version of both stacks: pulumi up the building stack with this version first)";

export interface ModelPlanDifference {
  /** `<step>.<entry>`: a config entry, `files.<path>`, `inputs.<path>`, or `script`. */
  field: string;
  built: unknown;
  planned: unknown;
  key: string;
}

function same(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/**
 * Entries that differ between the plan an image was built for (another
 * stack's `modelPlan` output, parsed) and this stack's. A built plan of
 * another version differs as a whole.
 */
export function modelPlanDifferences(built: Record<string, unknown>, planned: ModelPlan): ModelPlanDifference[] {
  if (built.version !== FINGERPRINT_VERSION)
    return [{ field: "version", built: built.version, planned: FINGERPRINT_VERSION, key: PROGRAM }];
  const out: ModelPlanDifference[] = [];
  const builtSteps = (built.steps ?? {}) as Record<string, Partial<FingerprintedStep> | undefined>;
  const plannedSteps = planned.steps as Record<string, FingerprintedStep | undefined>;
  for (const step of [...new Set([...Object.keys(plannedSteps), ...Object.keys(builtSteps)])].sort()) {
    const b = builtSteps[step] ?? {};
    const p = plannedSteps[step] ?? ({} as Partial<FingerprintedStep>);
    const entries = (section: "config" | "files" | "inputs", keyOf: (name: string) => string) => {
      const bs = (b[section] ?? {}) as Record<string, unknown>;
      const ps = (p[section] ?? {}) as Record<string, unknown>;
      for (const name of [...new Set([...Object.keys(ps), ...Object.keys(bs)])].sort())
        if (!same(bs[name], ps[name]))
          out.push({
            field: section === "config" ? `${step}.${name}` : `${step}.${section}.${name}`,
            built: bs[name],
            planned: ps[name],
            key: keyOf(name),
          });
    };
    entries("config", (name) => STEP_ENTRY_KEYS[name] ?? "the model and serving keys");
    entries("files", fileKey);
    entries("inputs", () => PROGRAM);
    for (const part of ["script", "lib"] as const)
      if (!same(b[part], p[part]))
        out.push({ field: `${step}.${part}`, built: b[part], planned: p[part], key: PROGRAM });
  }
  return out;
}
