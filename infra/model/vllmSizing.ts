/**
 * GPU memory of a model served by vLLM, derived from the architecture: the
 * weights one GPU holds, the KV cache one token needs (grouped-query aware) and
 * the activations of one prefill step. The formulas are documented in
 * docs/vllm.md "Memory and the KV cache"; keep both in step.
 */
import { parameterCount } from "./catalog";
import { RUNTIME_OVERHEAD_BYTES } from "./sizing";
import type { Family, ModelArch } from "./types";

/** vLLM's dtype names as this stack passes them (config `vllm.dtype`). */
export type VllmDtype = "auto" | "float16" | "bfloat16" | "float32";

/**
 * Bytes per weight and per KV element. `auto` serves the checkpoint's dtype,
 * except that vLLM serves fp32 checkpoints as float16 (its `dtype` doc), so
 * every choice but float32 is 2 bytes.
 */
export function vllmDtypeBytes(dtype: VllmDtype): number {
  return dtype === "float32" ? 4 : 2;
}

/** Key/value heads one GPU holds: vLLM splits them over the GPUs, or replicates one per GPU when there are fewer. */
export function kvHeadsPerGpu(arch: ModelArch, tensorParallel: number): number {
  return Math.max(1, Math.ceil((arch.kvHeads ?? arch.heads) / tensorParallel));
}

/** KV-cache bytes one token takes on one GPU: K and V, every layer, this GPU's key/value heads. */
export function kvBytesPerToken(arch: ModelArch, tensorParallel: number, dtype: VllmDtype): number {
  const headDim = arch.hidden / arch.heads;
  return 2 * arch.layers * kvHeadsPerGpu(arch, tensorParallel) * headDim * vllmDtypeBytes(dtype);
}

export interface VllmMemory {
  /** Weights one GPU holds: the layers split by tensor parallelism, the embeddings and head split too (vLLM shards the vocabulary). */
  weightsBytes: number;
  /**
   * One prefill step of `maxModelLen` tokens (vLLM profiles its peak with a full-length
   * prompt), the sampler's fp32 logits for `maxNumSeqs` rows, and the CUDA context,
   * cuBLAS and NCCL allowance FT's estimate uses.
   */
  activationBytes: number;
}

export function vllmMemory(
  family: Family,
  arch: ModelArch,
  s: { tensorParallel: number; maxModelLen: number; maxNumSeqs: number; dtype: VllmDtype },
): VllmMemory {
  const bytes = vllmDtypeBytes(s.dtype);
  const weightsBytes = (parameterCount(family, arch) * bytes) / s.tensorParallel;
  const prefill = (s.maxModelLen * (3 * arch.hidden + arch.ffn) * bytes) / s.tensorParallel;
  const logits = s.maxNumSeqs * arch.vocab * 4;
  return { weightsBytes, activationBytes: RUNTIME_OVERHEAD_BYTES + prefill + logits };
}
