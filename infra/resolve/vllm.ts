/**
 * A vLLM model's engine settings (issue 37): the config's `vllm` keys, with
 * the defaults derived from the model config and the GPU catalog.
 */
import type { GpuInstance } from "../catalog/gpus";
import { VLLM_DEFAULTS, type StackConfig } from "../config/schema";
import type { ResolvedModel, ResolvedVllm } from "../config/stack";
import { GiB, USABLE_GPU_FRACTION } from "../model/sizing";
import { vllmMemory } from "../model/vllmSizing";

/** KV-cache GiB are rounded down to this step: the rendered parameter stays short and never over-promises. */
const KV_CACHE_STEP_GIB = 0.01;

/** The KV cache per GPU that the memory fraction leaves beside the weights and activations, GiB (may be ≤ 0). */
export function derivedKvCacheGiB(
  model: ResolvedModel,
  instance: GpuInstance,
  s: Omit<ResolvedVllm, "kvCacheGiB" | "maxLogprobs">,
): number {
  const m = vllmMemory(model.family, model.arch, s);
  // vLLM's fraction is of the GPU's total memory; the driver keeps part of it (USABLE_GPU_FRACTION).
  const budget = Math.min(s.gpuMemoryUtilization, USABLE_GPU_FRACTION) * instance.gpuMemoryGiB * GiB;
  const free = (budget - m.weightsBytes - m.activationBytes) / GiB;
  return Math.floor(free / KV_CACHE_STEP_GIB) * KV_CACHE_STEP_GIB;
}

/** The resolved vLLM settings of a vLLM model (the rules about them: resolve/engine.ts). */
export function resolveVllm(config: StackConfig, model: ResolvedModel, instance: GpuInstance): ResolvedVllm {
  const s = config.serving;
  const v = s.vllm ?? {};
  const base = {
    tensorParallel: s.tensorParallel,
    gpuMemoryUtilization: v.gpuMemoryUtilization ?? VLLM_DEFAULTS.gpuMemoryUtilization,
    maxModelLen: v.maxModelLen ?? s.maxInputLen + s.maxOutputLen,
    maxNumSeqs: s.maxBatchSize,
    dtype: v.dtype ?? VLLM_DEFAULTS.dtype,
  };
  return {
    ...base,
    kvCacheGiB: v.kvCacheGiB ?? derivedKvCacheGiB(model, instance, base),
    maxLogprobs: v.maxLogprobs ?? VLLM_DEFAULTS.maxLogprobs,
  };
}
