/**
 * Renderers for the four models of the Triton model repository. The tensor
 * contract (docs/architecture.md "Ensemble contract") is data here, so the ensemble wiring and
 * every model's inputs and outputs come from one definition.
 */
import type { Family } from "../model/types";
import { ftServing } from "../model/family";
import { ENSEMBLE_MODEL } from "../conventions/workload";
import { bool, enumValue, int, msg, str, toPbtxt, type PbField, type PbMessage } from "./pbtxt";

export type TritonType = "TYPE_STRING" | "TYPE_UINT32" | "TYPE_INT32" | "TYPE_UINT64" | "TYPE_FP32" | "TYPE_BOOL";

export interface TensorSpec {
  name: string;
  dataType: TritonType;
  dims: number[];
  optional?: boolean;
  /** Per-item reshape (FT takes its scalars without the trailing [1]). */
  reshape?: number[];
}

const t = (name: string, dataType: TritonType, dims: number[], extra: Partial<TensorSpec> = {}): TensorSpec => ({
  name,
  dataType,
  dims,
  ...extra,
});

export const ENSEMBLE_INPUTS: readonly TensorSpec[] = [
  t("text_input", "TYPE_STRING", [1]),
  t("max_tokens", "TYPE_UINT32", [1]),
  t("bad_words", "TYPE_STRING", [-1], { optional: true }),
  t("stop_words", "TYPE_STRING", [-1], { optional: true }),
  t("top_k", "TYPE_UINT32", [1], { optional: true }),
  t("top_p", "TYPE_FP32", [1], { optional: true }),
  t("temperature", "TYPE_FP32", [1], { optional: true }),
  t("repetition_penalty", "TYPE_FP32", [1], { optional: true }),
  t("random_seed", "TYPE_UINT64", [1], { optional: true }),
  // FT's additive penalty; FT refuses it together with repetition_penalty.
  t("presence_penalty", "TYPE_FP32", [1], { optional: true }),
  // Non-zero: postprocessing also returns each generated token's text (OpenAI `logprobs`).
  t("return_tokens", "TYPE_UINT32", [1], { optional: true }),
];

export const ENSEMBLE_OUTPUTS: readonly TensorSpec[] = [
  t("text_output", "TYPE_STRING", [1]),
  t("input_token_count", "TYPE_UINT32", [1]),
  t("output_token_count", "TYPE_UINT32", [1]),
  // FT's output_log_probs of the returned tokens, one per token, and their sum.
  t("output_log_probs", "TYPE_FP32", [-1]),
  t("cum_log_probs", "TYPE_FP32", [1]),
  // Each returned token's text (empty strings unless return_tokens asked for them).
  t("output_tokens", "TYPE_STRING", [-1]),
];

/** Sampling inputs: FT reads them, and preprocessing range-checks them first (defence in depth behind the gateway). */
export const SAMPLING_INPUTS = [
  "top_k",
  "top_p",
  "temperature",
  "repetition_penalty",
  "random_seed",
  "presence_penalty",
] as const;

export const PREPROCESSING_INPUTS: readonly TensorSpec[] = [
  t("text_input", "TYPE_STRING", [1]),
  t("max_tokens", "TYPE_UINT32", [1]),
  t("bad_words", "TYPE_STRING", [-1], { optional: true }),
  t("stop_words", "TYPE_STRING", [-1], { optional: true }),
  ...ENSEMBLE_INPUTS.filter((i) => (SAMPLING_INPUTS as readonly string[]).includes(i.name)),
];

export const PREPROCESSING_OUTPUTS: readonly TensorSpec[] = [
  t("input_ids", "TYPE_UINT32", [-1]),
  t("input_lengths", "TYPE_UINT32", [1]),
  t("request_output_len", "TYPE_UINT32", [-1]),
  t("bad_words_list", "TYPE_INT32", [2, -1]),
  t("stop_words_list", "TYPE_INT32", [2, -1]),
  t("start_id", "TYPE_UINT32", [1]),
  t("end_id", "TYPE_UINT32", [1]),
  // Always true: FT reads this flag from the first request of a batch only, so
  // setting it per request would give a mixed batch log probs or not at random.
  t("is_return_log_probs", "TYPE_BOOL", [1]),
];

const scalarIn = (name: string, dataType: TritonType): TensorSpec =>
  t(name, dataType, [1], { optional: true, reshape: [] });

export const FASTERTRANSFORMER_INPUTS: readonly TensorSpec[] = [
  t("input_ids", "TYPE_UINT32", [-1]),
  t("input_lengths", "TYPE_UINT32", [1], { reshape: [] }),
  t("request_output_len", "TYPE_UINT32", [-1]),
  scalarIn("runtime_top_k", "TYPE_UINT32"),
  scalarIn("runtime_top_p", "TYPE_FP32"),
  scalarIn("temperature", "TYPE_FP32"),
  scalarIn("repetition_penalty", "TYPE_FP32"),
  scalarIn("random_seed", "TYPE_UINT64"),
  scalarIn("presence_penalty", "TYPE_FP32"),
  scalarIn("is_return_log_probs", "TYPE_BOOL"),
  scalarIn("start_id", "TYPE_UINT32"),
  scalarIn("end_id", "TYPE_UINT32"),
  t("bad_words_list", "TYPE_INT32", [2, -1], { optional: true }),
  t("stop_words_list", "TYPE_INT32", [2, -1], { optional: true }),
];

export const FASTERTRANSFORMER_OUTPUTS: readonly TensorSpec[] = [
  t("output_ids", "TYPE_UINT32", [-1, -1]),
  t("sequence_length", "TYPE_UINT32", [-1]),
  // Present when is_return_log_probs is true (FT backend docs/gptj_guide.md): [beam] and [beam, tokens].
  t("cum_log_probs", "TYPE_FP32", [-1]),
  t("output_log_probs", "TYPE_FP32", [-1, -1]),
];

export const POSTPROCESSING_INPUTS: readonly TensorSpec[] = [
  t("output_ids", "TYPE_UINT32", [-1, -1]),
  t("sequence_length", "TYPE_UINT32", [-1]),
  t("input_lengths", "TYPE_UINT32", [1]),
  // Caps the returned tokens at what the request asked for: a dynamically
  // batched FT run may generate up to the batch's largest request_output_len.
  t("request_output_len", "TYPE_UINT32", [-1]),
  t("output_log_probs", "TYPE_FP32", [-1, -1], { optional: true }),
  t("return_tokens", "TYPE_UINT32", [1], { optional: true }),
];

export const POSTPROCESSING_OUTPUTS: readonly TensorSpec[] = ENSEMBLE_OUTPUTS;

/** One ensemble step: model input/output name → ensemble tensor name. */
export interface EnsembleStep {
  model: "preprocessing" | "fastertransformer" | "postprocessing";
  inputMap: Record<string, string>;
  outputMap: Record<string, string>;
}

/** The ensemble's wiring. Internal tensors carry a leading underscore. */
export const ENSEMBLE_STEPS: readonly EnsembleStep[] = [
  {
    model: "preprocessing",
    inputMap: {
      text_input: "text_input",
      max_tokens: "max_tokens",
      bad_words: "bad_words",
      stop_words: "stop_words",
      ...Object.fromEntries(SAMPLING_INPUTS.map((name) => [name, name])),
    },
    outputMap: {
      input_ids: "_input_ids",
      input_lengths: "_input_lengths",
      request_output_len: "_request_output_len",
      bad_words_list: "_bad_words_list",
      stop_words_list: "_stop_words_list",
      start_id: "_start_id",
      end_id: "_end_id",
      is_return_log_probs: "_is_return_log_probs",
    },
  },
  {
    model: "fastertransformer",
    inputMap: {
      input_ids: "_input_ids",
      input_lengths: "_input_lengths",
      request_output_len: "_request_output_len",
      bad_words_list: "_bad_words_list",
      stop_words_list: "_stop_words_list",
      start_id: "_start_id",
      end_id: "_end_id",
      runtime_top_k: "top_k",
      runtime_top_p: "top_p",
      temperature: "temperature",
      repetition_penalty: "repetition_penalty",
      random_seed: "random_seed",
      presence_penalty: "presence_penalty",
      is_return_log_probs: "_is_return_log_probs",
    },
    outputMap: {
      output_ids: "_output_ids",
      sequence_length: "_sequence_length",
      output_log_probs: "_output_log_probs",
    },
  },
  {
    model: "postprocessing",
    inputMap: {
      output_ids: "_output_ids",
      sequence_length: "_sequence_length",
      input_lengths: "_input_lengths",
      request_output_len: "_request_output_len",
      output_log_probs: "_output_log_probs",
      return_tokens: "return_tokens",
    },
    outputMap: {
      text_output: "text_output",
      input_token_count: "input_token_count",
      output_token_count: "output_token_count",
      output_log_probs: "output_log_probs",
      cum_log_probs: "cum_log_probs",
      output_tokens: "output_tokens",
    },
  },
];

export const MODEL_NAMES = [ENSEMBLE_MODEL, "preprocessing", "fastertransformer", "postprocessing"] as const;
export type ModelName = (typeof MODEL_NAMES)[number];

export interface RepositoryOptions {
  family: Family;
  tensorParallel: number;
  maxBatchSize: number;
  maxInputLen: number;
  maxOutputLen: number;
  /** Absolute `<N>-gpu` folder in the server image. */
  checkpointPath: string;
  /** Absolute folder of the tokenizer files in the server image. */
  tokenizerPath: string;
  startId: number;
  endId: number;
  padId: number;
  /** FT's custom all-reduce: only pays off at TP 8 on an NVSwitch fabric. */
  customAllReduce: boolean;
  /** Vocabulary size: the upper bound of top_k that preprocessing enforces. */
  vocab?: number;
  /**
   * FT's decoupled (streaming) mode: a response per generated token. The
   * ensemble then becomes decoupled too, so Triton serves it only over gRPC
   * ModelStreamInfer (the gateway); HTTP and unary gRPC refuse it.
   */
  decoupled?: boolean;
  /** FT's int8_mode (read only for model_type GPT); 0 or absent renders no parameter. */
  int8Mode?: number;
}

/**
 * Longest prompt in UTF-8 bytes that can still fit in maxInputLen tokens in
 * practice: BPE vocabularies of these models average about 4 bytes per token
 * on English and code, and long whitespace runs reach a few dozen. Both the
 * gateway and preprocessing refuse anything longer before tokenizing it, so a
 * multi-megabyte prompt costs nothing.
 */
export const PROMPT_BYTES_PER_TOKEN = 32;
export function maxPromptBytes(maxInputLen: number): number {
  return maxInputLen * PROMPT_BYTES_PER_TOKEN;
}

/**
 * Every config.pbtxt's first line. Its text is inside the bake step's input hash of every live stack, so it
 * keeps naming this file's path before the move to plan/ (docs/architecture.md "Layers"): rewording it would
 * re-bake and roll every model. The architecture test knows the old path as a frozen name.
 */
const HEADER = ["Rendered by triton-ft (infra/render/modelRepository.ts) from the stack config; do not edit by hand."];

function tensor(spec: TensorSpec): PbMessage {
  return msg(
    ["name", str(spec.name)],
    ["data_type", enumValue(spec.dataType)],
    ["dims", spec.dims.map(int)],
    ["reshape", spec.reshape ? msg(["shape", spec.reshape.map(int)]) : undefined],
    ["optional", spec.optional ? bool(true) : undefined],
  );
}

function parameters(values: Record<string, string>): PbField {
  return {
    name: "parameters",
    value: Object.entries(values).map(([key, value]) =>
      msg(["key", str(key)], ["value", msg(["string_value", str(value)])]),
    ),
  };
}

function cpuInstance(): PbMessage[] {
  return [msg(["count", int(1)], ["kind", enumValue("KIND_CPU")])];
}

function checkCommon(o: RepositoryOptions): void {
  for (const [k, v] of Object.entries({
    tensorParallel: o.tensorParallel,
    maxBatchSize: o.maxBatchSize,
    maxInputLen: o.maxInputLen,
    maxOutputLen: o.maxOutputLen,
  })) {
    if (!Number.isInteger(v) || v < 1) throw new Error(`${k} must be a positive integer, got ${v}`);
  }
  for (const [k, v] of Object.entries({ checkpointPath: o.checkpointPath, tokenizerPath: o.tokenizerPath })) {
    if (!v.startsWith("/"))
      throw new Error(`${k} must be absolute (Triton resolves relative paths against its working directory), got ${v}`);
  }
}

export interface FastertransformerRenderOptions {
  /** `python` swaps in a stand-in model for CPU tests; every other field stays identical. */
  backend?: "fastertransformer" | "python";
}

export function renderFastertransformer(o: RepositoryOptions, r: FastertransformerRenderOptions = {}): string {
  checkCommon(o);
  const serving = ftServing(o.family);
  const root: PbMessage = msg(
    ["name", str("fastertransformer")],
    ["backend", str(r.backend ?? "fastertransformer")],
    ["max_batch_size", int(o.maxBatchSize)],
    ["input", FASTERTRANSFORMER_INPUTS.map(tensor)],
    ["output", FASTERTRANSFORMER_OUTPUTS.map(tensor)],
    // The backend drives all GPUs of the model from one CPU-kind instance.
    ["instance_group", cpuInstance()],
    ["dynamic_batching", serving.dynamicBatching ? msg() : undefined],
    ["model_transaction_policy", o.decoupled ? msg(["decoupled", bool(true)]) : undefined],
  );
  root.fields.push(
    parameters({
      model_type: serving.modelType,
      data_type: "fp16",
      tensor_para_size: String(o.tensorParallel),
      pipeline_para_size: "1",
      model_checkpoint_path: o.checkpointPath,
      enable_custom_all_reduce: o.customAllReduce ? "1" : "0",
      ...(o.int8Mode ? { int8_mode: String(o.int8Mode) } : {}),
    }),
  );
  return toPbtxt(root, HEADER);
}

/** A Python-backend model of the repository: CPU instances, string parameters. */
function renderPythonModel(
  name: "preprocessing" | "postprocessing",
  o: RepositoryOptions,
  io: { input: readonly TensorSpec[]; output: readonly TensorSpec[] },
  params: Record<string, string>,
): string {
  checkCommon(o);
  const root = msg(
    ["name", str(name)],
    ["backend", str("python")],
    ["max_batch_size", int(o.maxBatchSize)],
    ["input", io.input.map(tensor)],
    ["output", io.output.map(tensor)],
    ["instance_group", cpuInstance()],
  );
  root.fields.push(parameters(params));
  return toPbtxt(root, HEADER);
}

export function renderPreprocessing(o: RepositoryOptions): string {
  return renderPythonModel(
    "preprocessing",
    o,
    { input: PREPROCESSING_INPUTS, output: PREPROCESSING_OUTPUTS },
    {
      tokenizer_path: o.tokenizerPath,
      start_id: String(o.startId),
      end_id: String(o.endId),
      pad_id: String(o.padId),
      max_input_len: String(o.maxInputLen),
      max_output_len: String(o.maxOutputLen),
      max_prompt_bytes: String(maxPromptBytes(o.maxInputLen)),
      ...(o.vocab !== undefined ? { vocab_size: String(o.vocab) } : {}),
    },
  );
}

export function renderPostprocessing(o: RepositoryOptions): string {
  return renderPythonModel(
    "postprocessing",
    o,
    { input: POSTPROCESSING_INPUTS, output: POSTPROCESSING_OUTPUTS },
    { tokenizer_path: o.tokenizerPath, end_id: String(o.endId), pad_id: String(o.padId) },
  );
}

function mapEntries(map: Record<string, string>): PbMessage[] {
  return Object.entries(map).map(([key, value]) => msg(["key", str(key)], ["value", str(value)]));
}

/**
 * With FT decoupled, `ensemble` is a decoupled Python (BLS) model running the
 * same steps (images/server/model_repository/ensemble/1/model.py): Triton
 * refuses an ensemble whose postprocessing step reads both FT's streamed
 * outputs and preprocessing's (inputs from different decoupled models).
 * One instance per batch slot, so FT still gets requests to batch.
 */
export function renderStreamingEnsemble(o: RepositoryOptions): string {
  checkCommon(o);
  const root = msg(
    ["name", str(ENSEMBLE_MODEL)],
    ["backend", str("python")],
    ["max_batch_size", int(o.maxBatchSize)],
    ["input", ENSEMBLE_INPUTS.map(tensor)],
    ["output", ENSEMBLE_OUTPUTS.map(tensor)],
    ["instance_group", [msg(["count", int(o.maxBatchSize)], ["kind", enumValue("KIND_CPU")])]],
    ["model_transaction_policy", msg(["decoupled", bool(true)])],
  );
  root.fields.push(parameters({ steps: JSON.stringify(ENSEMBLE_STEPS), streamed_step: "fastertransformer" }));
  return toPbtxt(root, HEADER);
}

export function renderEnsemble(o: RepositoryOptions): string {
  if (o.decoupled) return renderStreamingEnsemble(o);
  checkCommon(o);
  const root = msg(
    ["name", str(ENSEMBLE_MODEL)],
    ["platform", str("ensemble")],
    ["max_batch_size", int(o.maxBatchSize)],
    ["input", ENSEMBLE_INPUTS.map(tensor)],
    ["output", ENSEMBLE_OUTPUTS.map(tensor)],
    [
      "ensemble_scheduling",
      msg([
        "step",
        ENSEMBLE_STEPS.map((s) =>
          msg(
            ["model_name", str(s.model)],
            ["model_version", int(-1)],
            ["input_map", mapEntries(s.inputMap)],
            ["output_map", mapEntries(s.outputMap)],
          ),
        ),
      ]),
    ],
  );
  return toPbtxt(root, HEADER);
}

export interface RepositoryFile {
  /** Relative to the model repository root. */
  path: string;
  content: string;
}

export interface RenderedRepository {
  files: RepositoryFile[];
  /** Version folders Triton needs even when empty (FT and the ensemble keep nothing in them). */
  directories: string[];
}

export function renderModelRepository(
  o: RepositoryOptions,
  r: FastertransformerRenderOptions = {},
): RenderedRepository {
  const configs: Record<ModelName, string> = {
    ensemble: renderEnsemble(o),
    preprocessing: renderPreprocessing(o),
    fastertransformer: renderFastertransformer(o, r),
    postprocessing: renderPostprocessing(o),
  };
  return {
    files: MODEL_NAMES.map((m) => ({ path: `${m}/config.pbtxt`, content: configs[m] })),
    directories: MODEL_NAMES.map((m) => `${m}/1`),
  };
}
