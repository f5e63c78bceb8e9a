/**
 * What a triton_with_ft image is built from, as one stack exports it and
 * another compares it (build.tritonWithFtFrom): the pins, the SM list and the
 * recipe. Read from the model's image fingerprint (plan/fingerprint.ts), so it
 * is exactly what the triton-with-ft step's hash and image tag cover, less the
 * deploy-time values: two stacks with equal builds would compile the same image.
 *
 * Pure.
 */
import type { ImageFingerprint } from "./fingerprint";
import { canonicalJson, sha256 } from "./hash";

export interface TritonWithFtBuild {
  tritonVersion: string;
  backendCommit: string;
  ftCommit: string;
  /** CUDA archs of `-DSM`, ascending. */
  smList: number[];
  /** `sha256:<hex>` of the step's script, lib.sh and its helpers, images/triton_with_ft and the rest of its config. */
  recipe: string;
}

/** Each field, the config that sets it, for the refusal's fix. */
export const BUILD_FIELD_KEYS: Readonly<Record<keyof TritonWithFtBuild, string>> = {
  tritonVersion: "build.tritonVersion",
  backendCommit: "build.backendCommit",
  ftCommit: "build.ftCommit",
  smList: "serving.instanceType and build.builderInstanceType (their GPUs' SMs)",
  recipe:
    "the program version (scripts/remote/build-triton-with-ft.sh, scripts/remote/lib*, images/triton_with_ft): run both stacks from the same commit",
};

/** Config entries that are fields of their own; the rest of the step's config goes into the recipe. */
const OWN_FIELDS = ["TRITON_VERSION", "FT_BACKEND_COMMIT", "FT_COMMIT", "SM_LIST"];

/** The build of a model's triton_with_ft, from its image fingerprint. */
export function tritonWithFtBuild(doc: ImageFingerprint): TritonWithFtBuild {
  const step = doc.steps["triton-with-ft"];
  if (!step) throw new Error("the image fingerprint has no triton-with-ft step");
  const c = step.config;
  const text = (key: string) => String(c[key] ?? "");
  const rest = Object.fromEntries(Object.entries(c).filter(([k]) => !OWN_FIELDS.includes(k)));
  return {
    tritonVersion: text("TRITON_VERSION"),
    backendCommit: text("FT_BACKEND_COMMIT"),
    ftCommit: text("FT_COMMIT"),
    smList: text("SM_LIST")
      .split(",")
      .filter((x) => x !== "")
      .map(Number),
    recipe: `sha256:${sha256(canonicalJson({ script: step.script, lib: step.lib, inputs: step.inputs, config: rest }))}`,
  };
}
