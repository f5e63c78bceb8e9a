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
import type { Family, ModelArch, ModelSource } from "../model/types";

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

export interface ResolvedStack {
  config: StackConfig;
  model: ResolvedModel;
  servingInstance: GpuInstance;
  builderInstance: GpuInstance;
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
