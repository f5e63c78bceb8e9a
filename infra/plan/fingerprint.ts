/**
 * A model's image fingerprint, derived from what its bake step hashes rather
 * than from a hand-kept list of fields: the bake step and every step whose
 * output it consumes (triton_with_ft, fetch, convert, gemm), each with its
 * script, the repository files it reads, its rendered files (config.pbtxt,
 * the expected weights) and its config entries. A new config entry, file or
 * step input shapes the fingerprint the moment it shapes the image.
 *
 * Left out, and named here only: the deploy-time values (stepGraph.ts
 * DEPLOY_VALUES: registry URLs, region, the base image's digest, known only
 * once AWS resources exist) and what tunes the builder host without changing
 * a byte of the image (NOT_FINGERPRINTED). A promoted stack
 * (build.promoteFrom) computes the fingerprint of its own config and serves
 * another stack's image only when that stack exported the same one.
 *
 * Computed from a model's unscoped step definitions (plan/scope.ts moves a
 * further model's builder paths under its id), so the same model has the same
 * fingerprint whether it is the first of its stack or not.
 *
 * Pure: repository files are hashed by the injected PathHasher.
 */
import { canonicalJson, sha256 } from "./hash";
import {
  LIB_DIR,
  LIB_SCRIPT,
  topologicalOrder,
  type ConfigValue,
  type PathHasher,
  type StepDefinition,
  type StepId,
} from "./stepGraph";

/** Bumped when the document's shape changes: fingerprints of two versions never compare equal. */
export const FINGERPRINT_VERSION = 2;

/** The step whose image is fingerprinted. */
export const FINGERPRINTED_STEP: StepId = "bake";

/** Steps the bake waits for that shape nothing in the image: checks of the builder host. */
export const NOT_FINGERPRINTED_STEPS: Readonly<Partial<Record<StepId, string>>> = {
  "host-ready": "checks the builder host (GPU, free disk, registry login); the image holds none of it",
};

/** Config entries of fingerprinted steps that shape nothing in the image, with why. */
export const NOT_FINGERPRINTED: Readonly<Record<string, string>> = {
  REQUIRED_FREE_GIB: "the free disk a step checks for on the builder before it starts",
};

/**
 * Argument values of an argv entry that tune the builder host only, with why: the entry is
 * fingerprinted with the value after each flag replaced by `*`.
 */
export const NOT_FINGERPRINTED_ARGS: Readonly<Record<string, { flags: readonly string[]; why: string }>> = {
  CONVERT_ARGV: {
    flags: ["-p"],
    why: "the converter's worker processes, one per 4 vCPUs of the builder (plan/conversion.ts converterProcesses); the weights are the same",
  },
};

/** One step's share of the fingerprint. */
export interface FingerprintedStep {
  script: string;
  lib: string;
  inputs: Record<string, string>;
  config: Record<string, string | number | readonly string[]>;
  files: Record<string, string>;
}

/** What a model's image is built from: every fingerprinted step's inputs, by step id. */
export interface ImageFingerprint {
  version: number;
  steps: Partial<Record<StepId, FingerprintedStep>>;
}

function isDeployValue(v: ConfigValue): boolean {
  return typeof v === "object" && !Array.isArray(v);
}

function masked(key: string, value: readonly string[]): readonly string[] {
  const rule = NOT_FINGERPRINTED_ARGS[key];
  if (!rule) return value;
  return value.map((v, i) => (i > 0 && rule.flags.includes(value[i - 1] ?? "") ? "*" : v));
}

/** The steps the fingerprinted step consumes, itself included, in graph order. */
export function fingerprintedSteps(steps: readonly StepDefinition[]): StepDefinition[] {
  const byId = new Map(steps.map((s) => [s.id, s]));
  const keep = new Set<StepId>();
  const visit = (id: StepId) => {
    if (keep.has(id) || id in NOT_FINGERPRINTED_STEPS) return;
    const step = byId.get(id);
    if (!step) throw new Error(`the fingerprint needs step ${id}, which the plan lacks`);
    keep.add(id);
    step.dependsOn.forEach(visit);
  };
  visit(FINGERPRINTED_STEP);
  return topologicalOrder([...steps]).filter((s) => keep.has(s.id));
}

/** The fingerprint document of a model's (unscoped) build steps. */
export function imageFingerprint(steps: readonly StepDefinition[], hashPath: PathHasher): ImageFingerprint {
  const out: ImageFingerprint = { version: FINGERPRINT_VERSION, steps: {} };
  for (const step of fingerprintedSteps(steps)) {
    const config: FingerprintedStep["config"] = {};
    for (const [key, value] of step.config) {
      if (isDeployValue(value) || key in NOT_FINGERPRINTED) continue;
      config[key] = Array.isArray(value) ? masked(key, value as readonly string[]) : (value as string | number);
    }
    out.steps[step.id] = {
      script: `${step.script}@${hashPath(step.script)}`,
      lib: sha256(`${hashPath(LIB_SCRIPT)}:${hashPath(LIB_DIR)}`),
      inputs: Object.fromEntries(step.inputs.map((p) => [p, hashPath(p)])),
      config,
      files: Object.fromEntries(step.files.map((f) => [f.remotePath, sha256(f.content)])),
    };
  }
  return out;
}

/** The canonical JSON of a fingerprint document (the `modelPlan` output). */
export function serializeFingerprint(doc: ImageFingerprint): string {
  return canonicalJson(doc);
}

/** `sha256:<64 hex>` of the canonical JSON (the `modelPlanFingerprint` output). */
export function fingerprintOf(doc: ImageFingerprint): string {
  return `sha256:${sha256(serializeFingerprint(doc))}`;
}
