/**
 * gpt_gemm plan: FT's GEMM auto-tuner, run with the triton_with_ft image's own
 * binary on the builder GPU (same GPU model as serving, enforced by validation).
 * It writes gemm_config.in into its working directory; the bake step copies it
 * into the server image's WORKDIR, where FT opens it relative to tritonserver's
 * working directory.
 */
import type { ModelArch } from "../model/types";
import type { GemmShape } from "../config";
import { GEMM_CONFIG_FILE, GPT_GEMM_BIN, SERVER_WORKDIR } from "./paths";

/** gpt_gemm's data_type argument: 0 fp32, 1 fp16, 2 bf16. */
export const GEMM_DTYPE = { fp32: 0, fp16: 1, bf16: 2 } as const;

export interface GemmArgs {
  batchSize: number;
  beamWidth: number;
  maxInputLen: number;
  headNum: number;
  sizePerHead: number;
  interSize: number;
  vocabSize: number;
  dataType: number;
  tensorParallel: number;
}

export interface GemmPlan {
  args: GemmArgs;
  /** Full argv inside triton_with_ft, in gpt_gemm's positional order. */
  argv: string[];
  /** Working directory of the gpt_gemm process on the builder (mounted at the same path). */
  workDir: string;
  /** gpt_gemm tunes on one device whatever the TP size; it is given the per-rank shapes via `tp`. */
  cudaVisibleDevices: string;
  /** Where gemm_config.in lands on the builder. */
  output: string;
  /** Where the bake step puts it in the server image. */
  imagePath: string;
}

export function gemmArgs(arch: ModelArch, shape: GemmShape, tensorParallel: number): GemmArgs {
  if (arch.hidden % arch.heads !== 0) throw new Error(`hidden ${arch.hidden} is not a multiple of ${arch.heads} heads`);
  if (arch.heads % tensorParallel !== 0) {
    throw new Error(
      `gpt_gemm needs head_num % tp == 0, but ${arch.heads} heads do not split over ${tensorParallel} GPUs`,
    );
  }
  return {
    batchSize: shape.batchSize,
    beamWidth: shape.beamWidth,
    maxInputLen: shape.maxInputLen,
    headNum: arch.heads,
    sizePerHead: arch.hidden / arch.heads,
    interSize: arch.ffn,
    vocabSize: arch.vocab,
    dataType: GEMM_DTYPE.fp16,
    tensorParallel,
  };
}

export function gemmArgv(a: GemmArgs): string[] {
  const positional = [
    a.batchSize,
    a.beamWidth,
    a.maxInputLen,
    a.headNum,
    a.sizePerHead,
    a.interSize,
    a.vocabSize,
    a.dataType,
    a.tensorParallel,
  ];
  return [GPT_GEMM_BIN, ...positional.map(String)];
}

export function gemmPlan(arch: ModelArch, shape: GemmShape, tensorParallel: number, workDir: string): GemmPlan {
  const args = gemmArgs(arch, shape, tensorParallel);
  return {
    args,
    argv: gemmArgv(args),
    workDir,
    cudaVisibleDevices: "0",
    output: `${workDir}/${GEMM_CONFIG_FILE}`,
    imagePath: `${SERVER_WORKDIR}/${GEMM_CONFIG_FILE}`,
  };
}
