/**
 * The project's text-in/text-out ensemble contract, on top of the KServe v2
 * client: one request carries a batch of prompts; the answer is the generated
 * text of each with token counts, plus the round-trip latency.
 */
import { type InferResponse, type TritonClient, outputNumbers, outputStrings } from "./api";
import type { Tensor } from "./tensors";
import { MODEL_NAMES } from "../plan/modelRepository";

import { ENSEMBLE_MODEL } from "../conventions/workload";
export { ENSEMBLE_MODEL };

/** Models the rendered repository serves (plan/modelRepository.ts); readiness of all four is a healthy deployment. */
export const REPOSITORY_MODELS = MODEL_NAMES;

export interface GenerateOptions {
  /** Tokens to generate: one value for every prompt, or one per prompt. */
  maxTokens: number | number[];
  /** Words that end generation: one list for every prompt, or one list per prompt. */
  stopWords?: string[] | string[][];
  /** Words never generated: one list for every prompt, or one list per prompt. */
  badWords?: string[] | string[][];
  topK?: number;
  topP?: number;
  temperature?: number;
  repetitionPenalty?: number;
  randomSeed?: number | bigint;
  /** Ensemble model name (default ENSEMBLE_MODEL). */
  model?: string;
}

export interface Completion {
  text: string;
  inputTokens: number;
  outputTokens: number;
}

export interface GenerateResult {
  completions: Completion[];
  /** Wall-clock time of the infer call in milliseconds. */
  latencyMs: number;
}

/** A prompt is text, or raw bytes when the caller must send exactly those (e.g. to test UTF-8 checks). */
export type Prompt = string | Uint8Array;

function perItem<T>(value: T | T[], batch: number, name: string): T[] {
  if (!Array.isArray(value)) return Array.from({ length: batch }, () => value);
  if (value.length !== batch) throw new TypeError(`${name}: ${value.length} values for ${batch} prompts`);
  return value;
}

function wordLists(value: string[] | string[][], batch: number, name: string): string[][] {
  const lists: string[][] =
    value.length > 0 && Array.isArray(value[0])
      ? (value as string[][])
      : Array.from({ length: batch }, () => value as string[]);
  if (lists.length !== batch) throw new TypeError(`${name}: ${lists.length} word lists for ${batch} prompts`);
  return lists;
}

/** A [batch, width] STRING tensor; ragged lists are padded with "", which preprocessing skips. */
function wordTensor(name: string, lists: string[][]): Tensor | undefined {
  const width = Math.max(0, ...lists.map((l) => l.length));
  if (width === 0) return undefined;
  const data = lists.flatMap((l) => [...l, ...Array<string>(width - l.length).fill("")]);
  return { name, datatype: "BYTES", shape: [lists.length, width], data };
}

function scalar(
  name: string,
  datatype: Tensor["datatype"],
  value: number | bigint | undefined,
  batch: number,
): Tensor | undefined {
  if (value === undefined) return undefined;
  return { name, datatype, shape: [batch, 1], data: Array.from({ length: batch }, () => value) };
}

/** The ensemble's input tensors for a batch of prompts. Optional inputs are sent only when set. */
export function ensembleInputs(prompts: Prompt[], options: GenerateOptions): Tensor[] {
  const batch = prompts.length;
  if (batch === 0) throw new TypeError("at least one prompt is required");
  const maxTokens = perItem(options.maxTokens, batch, "maxTokens");
  for (const n of maxTokens) {
    if (!Number.isInteger(n) || n < 0 || n > 0xffffffff) throw new TypeError(`maxTokens ${n} is not a UINT32`);
  }
  const tensors: (Tensor | undefined)[] = [
    { name: "text_input", datatype: "BYTES", shape: [batch, 1], data: prompts },
    { name: "max_tokens", datatype: "UINT32", shape: [batch, 1], data: maxTokens },
    options.badWords === undefined
      ? undefined
      : wordTensor("bad_words", wordLists(options.badWords, batch, "badWords")),
    options.stopWords === undefined
      ? undefined
      : wordTensor("stop_words", wordLists(options.stopWords, batch, "stopWords")),
    scalar("top_k", "UINT32", options.topK, batch),
    scalar("top_p", "FP32", options.topP, batch),
    scalar("temperature", "FP32", options.temperature, batch),
    scalar("repetition_penalty", "FP32", options.repetitionPenalty, batch),
    scalar("random_seed", "UINT64", options.randomSeed, batch),
  ];
  return tensors.filter((t): t is Tensor => t !== undefined);
}

export function completions(response: InferResponse, batch: number): Completion[] {
  const texts = outputStrings(response, "text_output");
  const inputs = outputNumbers(response, "input_token_count");
  const outputs = outputNumbers(response, "output_token_count");
  if (texts.length !== batch || inputs.length !== batch || outputs.length !== batch) {
    throw new TypeError(
      `ensemble answered ${texts.length}/${inputs.length}/${outputs.length} text/input/output counts for ${batch} prompts`,
    );
  }
  return texts.map((text, i) => ({ text, inputTokens: inputs[i], outputTokens: outputs[i] }));
}

/** Send prompts through the ensemble in one request. Errors carry Triton's message and HTTP status. */
export async function generate(
  client: TritonClient,
  prompts: Prompt[],
  options: GenerateOptions,
): Promise<GenerateResult> {
  const inputs = ensembleInputs(prompts, options);
  const started = performance.now();
  const response = await client.infer(options.model ?? ENSEMBLE_MODEL, {
    inputs,
    outputs: ["text_output", "input_token_count", "output_token_count"],
    // Binary outputs (HTTP) are exact for any bytes the tokenizer decodes to; gRPC is always raw.
    binaryOutputs: true,
  });
  const latencyMs = performance.now() - started;
  return { completions: completions(response, prompts.length), latencyMs };
}

export interface ReadinessReport {
  live: boolean;
  ready: boolean;
  models: Record<string, boolean>;
}

/** Server liveness/readiness and readiness of each model of the repository. */
export async function readiness(
  client: TritonClient,
  models: readonly string[] = REPOSITORY_MODELS,
): Promise<ReadinessReport> {
  const [live, ready] = await Promise.all([client.isLive(), client.isReady()]);
  const states = await Promise.all(models.map((m) => client.isModelReady(m)));
  return { live, ready, models: Object.fromEntries(models.map((m, i) => [m, states[i]])) };
}
