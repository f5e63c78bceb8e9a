/**
 * Time budgets of the remote build steps (the Pulumi custom timeouts of their
 * commands), from an estimate of each step's work: a hung step then fails in
 * minutes, not hours. Budget = BUDGET_FACTOR × estimate, so every budget is
 * within 3× of its estimate.
 *
 * The conversion estimate comes from measurements: the real FT converters on
 * 16 vCPUs, random weights with the exact architectures (MEASURED in
 * catalog/timings.ts: KoGPT, h2oGPT, GPT-J from the JAX archive, CodeGen-6B).
 * Each phase runs at the measured rate of the script that performs it (the
 * slowest run where one script was measured twice); GPT-2 (unmeasured) takes
 * the GPT-J converter's rate. Builders with fewer than 16 vCPUs are assumed
 * proportionally slower, larger ones no faster.
 *
 * The other steps move bytes at ASSUMED rates (not measured here): in-region
 * ECR pulls and pushes with layer extraction, Hugging Face downloads. The
 * cost estimate's minutes-to-serve (infra/cost) sums these same estimates.
 *
 * Pure: plain numbers in, minutes out.
 */
import { compileSeconds } from "../catalog/compileHosts";
import { ASSUMED, MEASURED, RATES, VLLM_ASSUMED } from "../catalog/timings";
import { TRITON_WITH_FT_IMAGE_BYTES, TRITON_WITH_FT_RECIPE_LAYERS_BYTES } from "../model/sizing";
import type { Family } from "../model/types";

/** Budget = this × estimate (rounded up to a minute): headroom for a slower host, never more than 3×. */
export const BUDGET_FACTOR = 2.5;

/** The rates live in catalog/timings.ts, the one source the budgets, the scaling plan and the cost estimate share. */
export { ASSUMED, MEASURED, RATES } from "../catalog/timings";

/** The triton_with_ft image (model/sizing.ts): pulled by convert and gemm, pushed by its build, the base of the bake. */
const TRITON_WITH_FT_BYTES = TRITON_WITH_FT_IMAGE_BYTES;
/** Its recipe layers (the NGC base, apt, pip): the part the twf-layers steps move ahead of the compile. */
const RECIPE_BYTES = TRITON_WITH_FT_RECIPE_LAYERS_BYTES;
/** The rest: the compile's own layers, which only the full image's push and pull move. */
const COMPILE_LAYERS_BYTES = TRITON_WITH_FT_BYTES - RECIPE_BYTES;

export interface BudgetInputs {
  family: Family;
  parameters: number;
  /** vCPUs of the builder. */
  vcpus: number;
  /**
   * The triton_with_ft compile: how many CUDA archs it builds for and the
   * vCPUs of the compile host it runs on (catalog/compileHosts.ts).
   */
  compile: { smCount: number; vcpus: number };
  /** Checkpoint as downloaded (archive or HF repo), bytes; defaults to fp32 (4 bytes per parameter). */
  checkpointBytes?: number;
  /** The mesh-transformer-jax slim archive goes through FT's JAX converter, with no consolidation; default: a Hugging Face repo. */
  source?: "huggingface" | "archive";
  gemm: { batchSize: number; beamWidth: number; maxInputLen: number };
}

export type StepId =
  | "host-ready"
  | "triton-with-ft"
  | "twf-layers"
  | "twf-layers-pull"
  | "fetch"
  | "convert"
  | "gemm"
  | "bake"
  | "gateway-image";

export interface StepEstimate {
  seconds: number;
  /** Seconds per part, for docs/build.md and plan.json. */
  parts: Record<string, number>;
  /**
   * Where the figure comes from: every part from a rate measured here
   * (catalog/timings.ts MEASURED), some of them, or none (ASSUMED rates).
   */
  basis: TimeBasis;
}

/** How a time figure is known: catalog/timings.ts marks each rate measured or assumed. */
export type TimeBasis = "measured" | "partly measured" | "assumed";

/** The conversion phases that run at the measured rates (RATES); every other part is an assumed rate. */
const MEASURED_PARTS: ReadonlySet<string> = new Set(["consolidate", "re-layout", "converter", "fp16", "verify"]);

/** The FT converter script a model goes through, and its measured rate (catalog/timings.ts RATES). */
function converterRate(i: BudgetInputs): number {
  if (i.source === "archive") return RATES.converterJax;
  return i.family === "gptneox" ? RATES.converterGptneox : RATES.converterGptj;
}

/** Conversion phases that run for a family (GPT-2 and the JAX archive skip consolidation; GPT-NeoX and GPT-2 convert straight to fp16). */
function convertParts(i: BudgetInputs): Record<string, number> {
  const slow = Math.max(1, MEASURED.vcpus / i.vcpus);
  const p = i.parameters;
  const parts: Record<string, number> = {
    "pull compile layers": COMPILE_LAYERS_BYTES / ASSUMED.ecrPullBytesPerSecond,
    [RECIPE_LAYERS.pull]: RECIPE_BYTES / ASSUMED.ecrPullBytesPerSecond,
    containers: 4 * ASSUMED.containerStartSeconds,
  };
  if (i.family !== "gpt" && i.source !== "archive") parts.consolidate = p * RATES.consolidate * slow;
  if (i.family === "codegen") parts["re-layout"] = p * RATES.relayout * slow;
  parts.converter = p * converterRate(i) * slow;
  if (i.family === "gptj" || i.family === "codegen") parts.fp16 = p * RATES.fp16 * slow;
  parts.verify = p * RATES.verify * slow;
  return parts;
}

const sum = (parts: Record<string, number>) => Object.values(parts).reduce((a, b) => a + b, 0);
function est(parts: Record<string, number>): StepEstimate {
  const measured = Object.keys(parts).filter((k) => MEASURED_PARTS.has(k)).length;
  const basis: TimeBasis =
    measured === 0 ? "assumed" : measured === Object.keys(parts).length ? "measured" : "partly measured";
  return { seconds: sum(parts), parts, basis };
}

export function stepEstimates(i: BudgetInputs): Record<StepId, StepEstimate> {
  const p = i.parameters;
  const weights = p * MEASURED.fp16BytesPerParameter;
  const checkpoint = i.checkpointBytes ?? p * 4;
  const g = i.gemm;
  return {
    "host-ready": est({ "cloud-init and checks": ASSUMED.hostReadySeconds }),
    "triton-with-ft": est({
      "base image and pip": ASSUMED.tritonBaseSeconds,
      compile: compileSeconds(i.compile.smCount, i.compile.vcpus),
      "push compile layers": COMPILE_LAYERS_BYTES / ASSUMED.ecrPushBytesPerSecond,
      [RECIPE_LAYERS.push]: RECIPE_BYTES / ASSUMED.ecrPushBytesPerSecond,
    }),
    // The same base and pip work as the main build's (BuildKit runs it once for both), then its push.
    "twf-layers": est({
      "base image and pip": ASSUMED.tritonBaseSeconds,
      "push recipe layers": RECIPE_BYTES / ASSUMED.ecrPushBytesPerSecond,
    }),
    "twf-layers-pull": est({ "pull recipe layers": RECIPE_BYTES / ASSUMED.ecrPullBytesPerSecond }),
    fetch: est({
      "tool setup": ASSUMED.fetchSetupSeconds,
      download: checkpoint / ASSUMED.downloadBytesPerSecond,
      "check and stamp": checkpoint / ASSUMED.diskBytesPerSecond + 60,
    }),
    convert: est(convertParts(i)),
    gemm: est({
      "pull compile layers": COMPILE_LAYERS_BYTES / ASSUMED.ecrPullBytesPerSecond,
      [RECIPE_LAYERS.pull]: RECIPE_BYTES / ASSUMED.ecrPullBytesPerSecond,
      sweep: ASSUMED.gemmFixedSeconds + g.batchSize * g.beamWidth * g.maxInputLen * ASSUMED.gemmSecondsPerUnit,
    }),
    bake: est({
      "verify and build context": weights / ASSUMED.diskBytesPerSecond + 60,
      // The weights layer and the model repository: the image's own layers.
      "push new layers": weights / ASSUMED.ecrPushBytesPerSecond,
      [BAKE_BASE_PUSH]: TRITON_WITH_FT_BYTES / ASSUMED.ecrPushBytesPerSecond,
    }),
    "gateway-image": est({ "build and push": ASSUMED.gatewayImageSeconds }),
  };
}

/**
 * The bake's push of triton_with_ft's layers into the server repository. ECR
 * mounts them from the triton_with_ft repository instead when the registry has
 * blob mounting on (components/registry.ts turns it on) and the base is in the
 * same registry (this stack compiled it): Docker, having pulled the base from
 * that repository, asks ECR to mount each of its layers (a cross-repository
 * blob mount), and only the new layers are uploaded. The budget keeps this
 * part (a registry that refuses the mount uploads every layer and must not time
 * out); the first-deploy estimate leaves it out where the mount applies
 * (`expectedSeconds`).
 */
export const BAKE_BASE_PUSH = "push triton_with_ft layers";

/**
 * triton_with_ft's recipe layers (the NGC base, apt, pip: model/sizing.ts
 * TRITON_WITH_FT_RECIPE_LAYERS_BYTES) in the full image's push and in gemm's
 * pull. The twf-layers step pushes them while the compile runs and
 * twf-layers-pull brings them to the GPU builder before gemm, so the full
 * image's push finds them in the repository and gemm's pull finds them on the
 * host. The budgets keep both parts (a cache miss or an expired layers image
 * moves the whole image and must not time a step out); the first-deploy
 * estimate leaves them out when the layers steps run (`expectedSeconds`).
 */
export const RECIPE_LAYERS = { push: "push recipe layers", pull: "pull recipe layers" } as const;

/** How a step is counted on the critical path: what ECR mounts and what the layers steps moved ahead are left out. */
export interface ExpectedContext {
  /** ECR mounts the bake's base layers from this stack's own triton_with_ft repository (BAKE_BASE_PUSH). */
  baseMounted: boolean;
  /** The twf-layers steps run: triton_with_ft's push and the pulls of convert and gemm skip the recipe layers (RECIPE_LAYERS). */
  recipeLayersAhead: boolean;
}

/** A step's estimate as the critical path counts it: its budget's work less what ECR mounts or the layers steps moved. */
export function expectedSeconds(id: StepId, e: StepEstimate, ctx: ExpectedContext): number {
  if (id === "bake" && ctx.baseMounted) return e.seconds - (e.parts[BAKE_BASE_PUSH] ?? 0);
  if (id === "triton-with-ft" && ctx.recipeLayersAhead) return e.seconds - (e.parts[RECIPE_LAYERS.push] ?? 0);
  if ((id === "gemm" || id === "convert") && ctx.recipeLayersAhead)
    return e.seconds - (e.parts[RECIPE_LAYERS.pull] ?? 0);
  return e.seconds;
}

/** Whole minutes: BUDGET_FACTOR × estimate, rounded up. */
export function budgetMinutes(estimate: StepEstimate): number {
  return Math.ceil((BUDGET_FACTOR * estimate.seconds) / 60);
}

export function stepBudgetMinutes(i: BudgetInputs): Record<StepId, number> {
  const e = stepEstimates(i);
  return Object.fromEntries(Object.entries(e).map(([k, v]) => [k, budgetMinutes(v)])) as Record<StepId, number>;
}

/**
 * A vLLM model's bake (scripts/remote/bake-vllm.sh): pull the Triton-with-vLLM base,
 * re-lay a CodeGen checkpoint out as GPT-J, build the context from the checkpoint, and
 * push the image: its own layers and the base's (the base is NGC's, not in this
 * registry, so ECR cannot mount its layers).
 */
export function vllmBakeEstimate(i: Pick<BudgetInputs, "family" | "parameters" | "checkpointBytes">): StepEstimate {
  const checkpoint = i.checkpointBytes ?? i.parameters * 4;
  return est({
    "pull Triton-with-vLLM": VLLM_ASSUMED.baseImageBytes / ASSUMED.ecrPullBytesPerSecond,
    ...(i.family === "codegen" ? { "re-layout": i.parameters * RATES.relayout + ASSUMED.containerStartSeconds } : {}),
    "build context": checkpoint / ASSUMED.diskBytesPerSecond + 60,
    "push new layers": checkpoint / ASSUMED.ecrPushBytesPerSecond,
    "push Triton-with-vLLM layers": VLLM_ASSUMED.baseImageBytes / ASSUMED.ecrPushBytesPerSecond,
  });
}
