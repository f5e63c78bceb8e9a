/**
 * The resolved stack: the validated config plus everything validation looked
 * up or defaulted (the model's architecture, the catalog instances, the GPU
 * memory estimate, disk sizes). Types only, so every layer can name them
 * without importing the validator. `resolve/` produces it; `plan/` computes
 * the plan from it.
 */
import type { GpuInstance } from "../catalog/gpus";
import type { CanaryConfig, SecretPresence, StackConfig } from "./schema";
import type { GpuMemoryEstimate } from "../model/sizing";
import type { Engine, Family, ModelArch, ModelSource } from "../model/types";
import type { VLLM_DTYPES } from "./schema";

export interface ResolvedModel {
  name: string;
  preset?: string;
  family: Family;
  source: ModelSource;
  /** Where the tokenizer files come from when the weights source has none (JAX archive). */
  tokenizerSource?: { repo: string; revision: string };
  arch: ModelArch;
}

export interface GemmShape {
  batchSize: number;
  beamWidth: number;
  maxInputLen: number;
}

/**
 * A vLLM model's engine settings, resolved (resolve/vllm.ts): the config's
 * `vllm` keys with their defaults derived from the model config and the GPU
 * catalog. The numbers the vLLM model repository's config.pbtxt carries.
 */
export interface ResolvedVllm {
  /** GPUs per model (vLLM's tensor_parallel_size): serving.tensorParallel. */
  tensorParallel: number;
  /** Fraction of each GPU's memory vLLM may take. */
  gpuMemoryUtilization: number;
  /** Context length: at least maxInputLen + maxOutputLen, at most the model's positions. */
  maxModelLen: number;
  /** KV-cache memory per GPU, GiB (vLLM's kv_cache_memory_bytes). */
  kvCacheGiB: number;
  /** Sequences in flight (vLLM's max_num_seqs): serving.maxBatchSize. */
  maxNumSeqs: number;
  /** Most top alternatives per generated token a request may ask for. */
  maxLogprobs: number;
  dtype: (typeof VLLM_DTYPES)[number];
}

export interface ResolvedStack {
  config: StackConfig;
  /** The Triton backend that serves the model: `model.engine`, ft when unset. */
  engine: Engine;
  /** The vLLM settings: present iff `engine === "vllm"`. */
  vllm?: ResolvedVllm;
  model: ResolvedModel;
  servingInstance: GpuInstance;
  /** build.builderInstanceType's GPU instance; never launched when `cpuBuilder` is set. */
  builderInstance: GpuInstance;
  /**
   * Set when every model of the stack is served by vLLM (config/models.ts buildsOnCpu):
   * the stack builds on a CPU builder the plan picks (catalog/cpuBuilders.ts, plan/stack.ts).
   * Absent: the model builds on its GPU model's builder, as before issue 37.
   */
  cpuBuilder?: true;
  gemm: GemmShape;
  memory: GpuMemoryEstimate;
  builderDiskGiB: number;
  nodeDiskGiB: number;
  secrets: SecretPresence;
  /** `models.<id>.canary`, resolved (resolve/canary.ts); absent: the model has one build. */
  canary?: ResolvedCanary;
}

/** A model's canary: its own resolved view (named `<id>-canary`) and its traffic settings. */
export interface ResolvedCanary {
  /** The canary build as a model of its own: the stable view with the canary's keys merged in. */
  stack: ResolvedStack;
  weight: number;
  rollback: CanaryConfig["rollback"];
  /** The canary becomes the stable build (plan/canary.ts): nothing is rebuilt. */
  promote: boolean;
}
