/**
 * Memory, RAM and disk estimates derived from the architecture. The formulas are
 * documented in docs/config-reference.md "Sizing formulas"; keep both in step.
 */
import { parameterCount } from "./catalog";
import { CPU_BUILD_BASE_RAM_GIB } from "../catalog/cpuBuilders";
import { MEASURED, TRITON_WITH_FT_RECIPE, VLLM_ASSUMED } from "../catalog/timings";
import type { Family, ModelArch } from "./types";

export const GiB = 1024 ** 3;

export interface ServingShape {
  tensorParallel: number;
  maxBatchSize: number;
  beamWidth: number;
  maxInputLen: number;
  maxOutputLen: number;
}

export interface GpuMemoryEstimate {
  /** fp16 weights held by one GPU: transformer layers split by TP, embeddings replicated. */
  weightsBytes: number;
  /** fp16 K and V for every layer and every token of the longest request, this GPU's share of heads. */
  kvCacheBytes: number;
  /** Context-phase activations, fp32 logits and a fixed allowance for CUDA context, cuBLAS and NCCL. */
  headroomBytes: number;
  totalBytes: number;
}

/** Fixed per-GPU allowance for the CUDA context, cuBLAS/cuBLASLt workspaces and NCCL buffers. */
export const RUNTIME_OVERHEAD_BYTES = 1.5 * GiB;
/** Share of the nominal GPU memory the driver leaves usable. */
export const USABLE_GPU_FRACTION = 0.92;

export function estimateGpuMemory(family: Family, arch: ModelArch, s: ServingShape): GpuMemoryEstimate {
  const fp16 = 2;
  const params = parameterCount(family, arch);
  const replicated = arch.vocab * arch.hidden + (family === "gpt" ? arch.maxPositions * arch.hidden : 0);
  const weightsBytes = ((params - replicated) / s.tensorParallel + replicated) * fp16;
  const sequences = s.maxBatchSize * s.beamWidth;
  const tokens = s.maxInputLen + s.maxOutputLen;
  const kvCacheBytes = (2 * arch.layers * sequences * tokens * arch.hidden * fp16) / s.tensorParallel;
  const contextActivations = (sequences * s.maxInputLen * (3 * arch.hidden + arch.ffn) * fp16) / s.tensorParallel;
  const logits = sequences * arch.vocab * 4;
  const headroomBytes = RUNTIME_OVERHEAD_BYTES + contextActivations + logits;
  return { weightsBytes, kvCacheBytes, headroomBytes, totalBytes: weightsBytes + kvCacheBytes + headroomBytes };
}

/** Host RAM the FT converters need: they load the checkpoint in fp32 on the CPU. */
export function conversionRamBytes(family: Family, arch: ModelArch): number {
  return parameterCount(family, arch) * 4 * 1.25 + 4 * GiB;
}

/** Disk footprint of one image layer of fp16 weights. */
export function fp16WeightBytes(family: Family, arch: ModelArch): number {
  return parameterCount(family, arch) * 2;
}

/** Compressed-size allowance for the triton_with_ft image (Triton base + torch + FT build tree). */
export const TRITON_WITH_FT_IMAGE_BYTES = 30 * GiB;

/**
 * The part of that allowance before the compile (catalog/timings.ts
 * TRITON_WITH_FT_RECIPE): the NGC base compressed, plus the pip layer. The
 * twf-layers steps move it while the compile runs; the rest
 * (TRITON_WITH_FT_IMAGE_BYTES less this) is the compile's own layers.
 */
export const TRITON_WITH_FT_RECIPE_LAYERS_BYTES =
  TRITON_WITH_FT_RECIPE.ngcBaseUnpackedBytes * TRITON_WITH_FT_RECIPE.ngcBaseCompressionRatio +
  TRITON_WITH_FT_RECIPE.pipWheelsBytes * TRITON_WITH_FT_RECIPE.pipLayerToWheelsRatio;

/**
 * Builder root volume: the downloaded checkpoint (up to fp32), its staged copy
 * (consolidated or re-laid out), the fp32 conversion output, its fp16 rewrite, the triton_with_ft image, and the server image (base +
 * fp16 weights), doubled for Docker's build context copy of the weights, plus 50 %
 * headroom and 40 GiB for the OS and the Deep Learning AMI.
 */
export function builderDiskGiB(family: Family, arch: ModelArch): number {
  return sharedBuilderDiskGiB([{ family, arch }]);
}

/**
 * Root volume of a builder that converts several models (models on one GPU
 * model share its builder). What each model keeps stays on disk side by side
 * (checkpoint, fp32 conversion output, fp16 rewrite, its server image's
 * weights layer); the staged copy and the build context are transient, and
 * conversions and bakes take the host's locks one model at a time
 * (scripts/remote/convert.sh), so only the largest model's count. With one
 * model this is exactly the one-model volume.
 */
export function sharedBuilderDiskGiB(models: ReadonlyArray<{ family: Family; arch: ModelArch }>): number {
  const params = models.map((m) => parameterCount(m.family, m.arch));
  const kept = params.reduce(
    (sum, p) =>
      sum +
      p * 4 /* checkpoint */ +
      p * 4 /* fp32 conversion output */ +
      p * 2 /* fp16 rewrite */ +
      p * 2 /* server image weights */,
    0,
  );
  const transient = Math.max(
    0,
    ...params.map(
      (p) => p * 4 /* staged copy: consolidated checkpoint or CodeGen re-layout */ + p * 2 /* build context */,
    ),
  );
  const bytes = TRITON_WITH_FT_IMAGE_BYTES + TRITON_WITH_FT_IMAGE_BYTES /* server image base */ + kept + transient;
  return Math.ceil((bytes * 1.5) / GiB + 40);
}

/**
 * Compile host root volume (catalog/compileHosts.ts): the triton_with_ft image
 * and, as much again, the build's intermediate layers and cache (the Triton
 * base it builds from is part of the image), plus 50 % headroom and 40 GiB for
 * the OS and the AMI. Model-independent: the compile host holds no weights.
 */
export function compileHostDiskGiB(): number {
  return Math.ceil(compileHostFreeDiskGiB() * 1.5 + 40);
}

/** Free disk the compile host's readiness check requires: the image and its build layers, no headroom. */
export function compileHostFreeDiskGiB(): number {
  return Math.ceil((2 * TRITON_WITH_FT_IMAGE_BYTES) / GiB);
}

/** GPU node root volume: two server images side by side during a rollout, plus 50 % headroom. */
export function nodeDiskGiB(family: Family, arch: ModelArch): number {
  const image = TRITON_WITH_FT_IMAGE_BYTES + fp16WeightBytes(family, arch);
  return Math.ceil((2 * image * 1.5) / GiB + 20);
}

export function toGiB(bytes: number): number {
  return Math.round((bytes / GiB) * 10) / 10;
}

/**
 * Free disk the fetch step insists on: the model-derived builder footprint
 * before its 50 % headroom and the 40 GiB OS allowance (builderDiskGiB).
 */
export function fetchFreeDiskGiB(family: Family, arch: ModelArch): number {
  return Math.ceil((builderDiskGiB(family, arch) - 40) / 1.5);
}

/**
 * Free disk host-ready insists on: the triton_with_ft image plus as much again
 * for its build layers. Model-independent on purpose: host-ready precedes the
 * triton_with_ft build, so a model-derived number would rebuild the image on
 * every model change.
 */
export const HOST_READY_FREE_DISK_GIB = Math.ceil((2 * TRITON_WITH_FT_IMAGE_BYTES) / GiB);

/** Free disk the bake step insists on: the base image and the fp16 weights, twice (build context + image layer). */
export function bakeFreeDiskGiB(family: Family, arch: ModelArch): number {
  return Math.ceil((TRITON_WITH_FT_IMAGE_BYTES + 2 * fp16WeightBytes(family, arch)) / GiB);
}

/**
 * Free disk a vLLM-only stack's CPU builder needs (issue 37; catalog/cpuBuilders.ts),
 * before headroom: each model's checkpoint as downloaded (up to fp32) and the
 * server image's copy of it (vLLM serves the checkpoint as it is), side by side;
 * the largest model's transient CodeGen re-layout and build context (the bakes
 * take the host's lock one at a time); the Triton-with-vLLM base image twice
 * (its compressed layers as pulled, and extracted). No triton_with_ft, no
 * conversion output.
 */
export function vllmBuilderFreeDiskGiB(models: ReadonlyArray<{ family: Family; arch: ModelArch }>): number {
  const kept = models.reduce((sum, m) => {
    const p = parameterCount(m.family, m.arch);
    return sum + p * 4 /* checkpoint */ + p * 4; /* the server image's copy */
  }, 0);
  const transient = Math.max(
    0,
    ...models.map((m) => {
      const p = parameterCount(m.family, m.arch);
      return (m.family === "codegen" ? p * 4 /* re-laid out as GPT-J */ : 0) + p * 4; /* build context */
    }),
  );
  return Math.ceil((2 * VLLM_ASSUMED.baseImageBytes + kept + transient) / GiB);
}

/** The CPU builder's root volume: its free-disk need plus 50 % headroom and 40 GiB for the OS and the AMI (as builderDiskGiB). */
export function vllmBuilderDiskGiB(models: ReadonlyArray<{ family: Family; arch: ModelArch }>): number {
  return Math.ceil(vllmBuilderFreeDiskGiB(models) * 1.5 + 40);
}

/**
 * Host memory a vLLM model's build needs on a CPU builder: the CodeGen
 * re-layout holds the checkpoint and its GPT-J copy in memory (measured:
 * catalog/timings.ts MEASURED.codegen6b.relayoutPeakRamGiB, scaled by
 * parameters, plus 25 %); every other family's build (download, Docker build
 * and push) takes the catalog's base allowance.
 */
export function vllmBuildRamBytes(family: Family, arch: ModelArch): number {
  const base = CPU_BUILD_BASE_RAM_GIB * GiB;
  if (family !== "codegen") return base;
  const m = MEASURED.codegen6b;
  const relayout = ((parameterCount(family, arch) * m.relayoutPeakRamGiB * GiB) / m.parameters) * 1.25;
  return Math.max(base, relayout);
}

/**
 * Free disk the CPU builder's host check insists on: the Triton-with-vLLM base
 * image, pulled and extracted. Model-independent on purpose, as
 * HOST_READY_FREE_DISK_GIB: fetch checks each model's own need.
 */
export const CPU_HOST_READY_FREE_DISK_GIB = Math.ceil((2 * VLLM_ASSUMED.baseImageBytes) / GiB);
