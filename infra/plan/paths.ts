/**
 * Fixed locations shared by the plans, the renderers and the build steps. They
 * live in one module so the server image layout, the builder work tree and the
 * rendered configs cannot drift apart.
 */
import type { Family } from "../model/types";

/** Inside triton_with_ft (images/triton_with_ft/Dockerfile): FT sources, the gpt_gemm binary. */
export const FT_SOURCE_DIR = "/workspace/FasterTransformer";
export const GPT_GEMM_BIN = "/workspace/build/fastertransformer_backend/build/bin/gpt_gemm";

/** On the builder; mounted at the same path inside triton_with_ft so argv paths hold on both sides. */
export const BUILDER_ROOT = "/opt/triton-ft";
export const BUILDER_WORK_ROOT = `${BUILDER_ROOT}/work`;
/** Where the build steps ship scripts/convert/*.py (read-only inside the container). */
export const BUILDER_CONVERT_SCRIPTS_DIR = `${BUILDER_ROOT}/scripts/convert`;

/** Inside the server image. WORKDIR stays /workspace: FT opens gemm_config.in relative to it. */
export const SERVER_WORKDIR = "/workspace";
export const SERVER_ROOT = "/opt/triton-ft";
export const MODEL_REPOSITORY_DIR = `${SERVER_ROOT}/model-repository`;
export const WEIGHTS_DIR = `${SERVER_ROOT}/weights`;
export const TOKENIZER_DIR = `${SERVER_ROOT}/tokenizer`;
export const SERVER_PYTHON_DIR = `${SERVER_ROOT}/python`;
export const GEMM_CONFIG_FILE = "gemm_config.in";
export const TRITONSERVER_BIN = "/opt/tritonserver/bin/tritonserver";

/** FT converters name their output folder after the tensor-parallel size. */
export function checkpointFolderName(tensorParallel: number): string {
  return `${tensorParallel}-gpu`;
}

/** Absolute checkpoint path the fastertransformer model reads in the server image. */
export function serverCheckpointPath(tensorParallel: number): string {
  return `${WEIGHTS_DIR}/${checkpointFolderName(tensorParallel)}`;
}

/** Per-model work tree on the builder; everything the convert and gemm steps write stays under it. */
export interface BuilderWorkTree {
  root: string;
  /** The fetched checkpoint (HF snapshot, or the extracted JAX slim shards). */
  source: string;
  /** Intermediate checkpoint a converter reads (consolidated, or CodeGen re-laid out as GPT-J). */
  stage: string;
  /** Fresh output folder of one conversion attempt; FT converters refuse an existing one. */
  convertTmp: string;
  /** The finished conversion (holds <N>-gpu), replaced only after verification. */
  ft: string;
  /** Previous ft/ during the swap. */
  ftOld: string;
  expectedWeights: string;
  /** The same list without weight_data_type, for the fp16 rewrite, which checks its fp32 input against it. */
  expectedWeightsAnyType: string;
  gemm: string;
  /** pip --target folder for converter-only Python packages (jax for the JAX slim converter). */
  pydeps: string;
}

export function builderWorkTree(modelName: string): BuilderWorkTree {
  if (!/^[a-z0-9][a-z0-9-]*$/.test(modelName))
    throw new Error(`model name ${JSON.stringify(modelName)} is not a safe folder name`);
  const root = `${BUILDER_WORK_ROOT}/${modelName}`;
  return {
    root,
    source: `${root}/source`,
    stage: `${root}/stage`,
    convertTmp: `${root}/convert.tmp`,
    ft: `${root}/ft`,
    ftOld: `${root}/ft.old`,
    expectedWeights: `${root}/expected-weights.json`,
    expectedWeightsAnyType: `${root}/expected-weights.any-type.json`,
    gemm: `${root}/gemm`,
    pydeps: `${root}/pydeps`,
  };
}

/** How FT serves each family: model_type, the config.ini section, and the weight layout. */
export interface FamilyServing {
  modelType: "GPT" | "GPT-J" | "GPT-NeoX";
  section: "gpt" | "gptj" | "gptneox";
  /** Family whose FT weight layout the conversion produces. */
  layout: "gpt" | "gptj" | "gptneox";
  /**
   * Whether the backend accepts `dynamic_batching` for this model type. The
   * backend's scheduler checks do not depend on model_type; the family-specific
   * scheduler is sequence (interactive) batching, GPT only and with
   * max_batch_size 1, which this project never renders.
   */
  dynamicBatching: boolean;
}

export const FAMILY_SERVING: Record<Family, FamilyServing> = {
  gpt: { modelType: "GPT", section: "gpt", layout: "gpt", dynamicBatching: true },
  gptj: { modelType: "GPT-J", section: "gptj", layout: "gptj", dynamicBatching: true },
  gptneox: { modelType: "GPT-NeoX", section: "gptneox", layout: "gptneox", dynamicBatching: true },
  // CodeGen is re-laid out as GPT-J before conversion and served by FT's GPT-J.
  codegen: { modelType: "GPT-J", section: "gptj", layout: "gptj", dynamicBatching: true },
};
