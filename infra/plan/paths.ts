/**
 * Fixed locations shared by the plans, the renderers and the build steps. They
 * live in one module so the server image layout, the builder work tree and the
 * rendered configs cannot drift apart.
 */
/** Inside triton_with_ft (images/triton_with_ft/Dockerfile): FT sources, the gpt_gemm binary. */
export const FT_SOURCE_DIR = "/workspace/FasterTransformer";
export const GPT_GEMM_BIN = "/workspace/build/fastertransformer_backend/build/bin/gpt_gemm";

/** On the builder; mounted at the same path inside triton_with_ft so argv paths hold on both sides. */
export const BUILDER_ROOT = "/opt/triton-ft";
export const BUILDER_WORK_ROOT = `${BUILDER_ROOT}/work`;
/** Layout on the builder: shipped scripts and images, rendered step configs and plan files. */
export const REMOTE = {
  root: BUILDER_ROOT,
  scripts: `${BUILDER_ROOT}/scripts`,
  images: `${BUILDER_ROOT}/images`,
  steps: `${BUILDER_ROOT}/steps`,
  plan: `${BUILDER_ROOT}/plan`,
} as const;
/** Where the build steps ship scripts/convert/*.py (read-only inside the container). */
export const BUILDER_CONVERT_SCRIPTS_DIR = `${REMOTE.scripts}/convert`;

/** Inside the server image. WORKDIR stays /workspace: FT opens gemm_config.in relative to it. */
export const SERVER_WORKDIR = "/workspace";
export const SERVER_ROOT = "/opt/triton-ft";
export const MODEL_REPOSITORY_DIR = `${SERVER_ROOT}/model-repository`;
export const WEIGHTS_DIR = `${SERVER_ROOT}/weights`;
export const TOKENIZER_DIR = `${SERVER_ROOT}/tokenizer`;
/** A vLLM model's Hugging Face checkpoint (and tokenizer) in its server image: the model's `model_path`. */
export const VLLM_MODEL_DIR = `${SERVER_ROOT}/model`;
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

/** Per-model work tree on the builder; convert.sh keeps its own staging folders (attempts) elsewhere. */
export interface BuilderWorkTree {
  root: string;
  /** The fetched checkpoint (HF snapshot, or the extracted JAX slim shards). */
  source: string;
  /** Tokenizer files fetched apart from the weights (archive checkpoints ship none). */
  tokenizer: string;
  /** The verified conversion (holds <N>-gpu), replaced only after verification. */
  ft: string;
  /** gpt_gemm's working directory: gemm_config.in lands here. */
  gemm: string;
}

export function builderWorkTree(modelName: string): BuilderWorkTree {
  if (!/^[a-z0-9][a-z0-9-]*$/.test(modelName))
    throw new Error(`model name ${JSON.stringify(modelName)} is not a safe folder name`);
  const root = `${BUILDER_WORK_ROOT}/${modelName}`;
  return { root, source: `${root}/source`, tokenizer: `${root}/tokenizer`, ft: `${root}/ft`, gemm: `${root}/gemm` };
}
