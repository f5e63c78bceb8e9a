/**
 * The vLLM model repository (issue 37): one Triton Python-backend model named
 * `ensemble` (images/vllm/model_repository/ensemble/1/model.py) with the FT
 * ensemble's tensors, in their order, plus vLLM's `top_logprobs` input and its
 * two top-alternative outputs, and the engine settings as string parameters
 * (images/vllm/python/tritonvllm/settings.py reads them). The model and the
 * packages it imports are shipped beside it (`shipped`): the Python-backend
 * stub puts the model's folder on sys.path.
 *
 * The stack's bake, test/vllm (repository.py) and `npm run try` all assemble
 * their repository from this renderer (scripts/vllm-repository.ts is its CLI).
 *
 * Pure: numbers in, text out.
 */
import type { RenderedRepository } from "./modelRepository";

/** Where this renderer's output says it came from (the first line of config.pbtxt). */
export const VLLM_REPOSITORY_HEADER =
  "# Rendered by infra/plan/vllmRepository.ts (the project's vLLM model, images/vllm).";

/** The model's name: the gateway calls every engine's `ensemble`. */
export const VLLM_MODEL_NAME = "ensemble";

type Tensor = readonly [name: string, type: string, dims: readonly number[]];

/** The FT ensemble's inputs (docs/architecture.md "Ensemble contract"), in order, then vLLM's own; all but the first two optional. */
const INPUTS: readonly Tensor[] = [
  ["text_input", "TYPE_STRING", [1]],
  ["max_tokens", "TYPE_UINT32", [1]],
  ["bad_words", "TYPE_STRING", [-1]],
  ["stop_words", "TYPE_STRING", [-1]],
  ["top_k", "TYPE_UINT32", [1]],
  ["top_p", "TYPE_FP32", [1]],
  ["temperature", "TYPE_FP32", [1]],
  ["repetition_penalty", "TYPE_FP32", [1]],
  ["random_seed", "TYPE_UINT64", [1]],
  ["presence_penalty", "TYPE_FP32", [1]],
  ["return_tokens", "TYPE_UINT32", [1]],
  // vLLM only: how many top alternatives to return per generated token (OpenAI logprobs / top_logprobs).
  ["top_logprobs", "TYPE_UINT32", [1]],
];
const REQUIRED_INPUTS = 2;

const OUTPUTS: readonly Tensor[] = [
  ["text_output", "TYPE_STRING", [1]],
  ["input_token_count", "TYPE_UINT32", [1]],
  ["output_token_count", "TYPE_UINT32", [1]],
  ["output_log_probs", "TYPE_FP32", [-1]],
  ["cum_log_probs", "TYPE_FP32", [1]],
  ["output_tokens", "TYPE_STRING", [-1]],
  // vLLM only: per generated token, its top alternatives' texts and log probabilities.
  ["output_top_tokens", "TYPE_STRING", [-1, -1]],
  ["output_top_log_probs", "TYPE_FP32", [-1, -1]],
];

/** The engine settings of one vLLM model, as the plan (or a test) states them. */
export interface VllmModelSettings {
  /** Absolute folder of the Hugging Face checkpoint and tokenizer. */
  modelPath: string;
  device: "cuda" | "cpu";
  dtype: "auto" | "float16" | "bfloat16" | "float32";
  tensorParallel: number;
  gpuMemoryUtilization: number;
  maxModelLen: number;
  kvCacheGiB: number;
  maxNumSeqs: number;
  maxInputLen: number;
  maxOutputLen: number;
  maxPromptBytes: number;
  maxLogprobs: number;
  /** No CUDA graphs or compilation: the CPU tests' fast start. @default false (the key is left out) */
  enforceEager?: boolean;
}

/** config.pbtxt's parameters, in the order settings.py documents them. */
export function vllmParameters(s: VllmModelSettings): Array<[string, string]> {
  return [
    ["model_path", s.modelPath],
    ["device", s.device],
    ["dtype", s.dtype],
    ["tensor_parallel_size", String(s.tensorParallel)],
    ["gpu_memory_utilization", String(s.gpuMemoryUtilization)],
    ["max_model_len", String(s.maxModelLen)],
    ["kv_cache_gib", String(s.kvCacheGiB)],
    ["max_num_seqs", String(s.maxNumSeqs)],
    ["max_input_len", String(s.maxInputLen)],
    ["max_output_len", String(s.maxOutputLen)],
    ["max_prompt_bytes", String(s.maxPromptBytes)],
    ["max_logprobs", String(s.maxLogprobs)],
    ...(s.enforceEager ? ([["enforce_eager", "true"]] as Array<[string, string]>) : []),
  ];
}

const dims = (d: readonly number[]) => d.join(", ");
const quoted = (v: string) => JSON.stringify(v);

/** The model's config.pbtxt: max_batch_size is vLLM's max_num_seqs. */
export function renderVllmConfig(s: VllmModelSettings, name: string = VLLM_MODEL_NAME): string {
  const inputs = INPUTS.map(
    ([n, t, d], i) =>
      `  {\n    name: "${n}"\n    data_type: ${t}\n    dims: [ ${dims(d)} ]` +
      (i >= REQUIRED_INPUTS ? "\n    optional: true" : "") +
      "\n  }",
  );
  const outputs = OUTPUTS.map(
    ([n, t, d]) => `  {\n    name: "${n}"\n    data_type: ${t}\n    dims: [ ${dims(d)} ]\n  }`,
  );
  return (
    [
      VLLM_REPOSITORY_HEADER,
      `name: ${quoted(name)}`,
      'backend: "python"',
      `max_batch_size: ${s.maxNumSeqs}`,
      "input [",
      inputs.join(",\n"),
      "]",
      "output [",
      outputs.join(",\n"),
      "]",
      // One instance: vLLM batches every request in flight itself; KIND_MODEL leaves the devices to vLLM.
      "instance_group [ { count: 1 kind: KIND_MODEL } ]",
      "model_transaction_policy { decoupled: true }",
      ...vllmParameters(s).map(([k, v]) => `parameters { key: ${quoted(k)} value { string_value: ${quoted(v)} } }`),
    ].join("\n") + "\n"
  );
}

/** Repository files copied in beside the rendered config (repository paths, relative). */
export interface ShippedTree {
  /** Repository-relative source: a file or a folder. */
  from: string;
  /** Path inside the model repository. */
  to: string;
}

/** The model and the packages it imports, beside it in the version folder (the stub's sys.path). */
export function vllmShippedTrees(name: string = VLLM_MODEL_NAME): ShippedTree[] {
  return [
    { from: "images/vllm/model_repository/ensemble/1/model.py", to: `${name}/1/model.py` },
    { from: "images/server/python/tritonft", to: `${name}/1/tritonft` },
    { from: "images/vllm/python/tritonvllm", to: `${name}/1/tritonvllm` },
  ];
}

/** The rendered repository: config.pbtxt (the version folder holds the shipped trees). */
export function renderVllmRepository(
  s: VllmModelSettings,
  name: string = VLLM_MODEL_NAME,
): RenderedRepository & { shipped: ShippedTree[] } {
  return {
    files: [{ path: `${name}/config.pbtxt`, content: renderVllmConfig(s, name) }],
    directories: [`${name}/1`],
    shipped: vllmShippedTrees(name),
  };
}
