/**
 * One prompt through the ensemble: OpenAI sampling fields become the
 * ensemble's tensors, Triton's cumulative texts become safe deltas, and the
 * generation ends at a stop sequence (cancelling the Triton call), at the
 * model's end token or at max_tokens.
 */
import { randomBytes } from "node:crypto";
import { ApiError } from "./errors";
import type { Tensor } from "./tensors";
import { IncrementalText } from "./textStream";
import type { TritonClient } from "./triton";
import type { Sampling } from "./validate";

export type FinishReason = "stop" | "length";

export type GenerationEvent =
  | { type: "delta"; text: string }
  | { type: "done"; finishReason: FinishReason; promptTokens: number; completionTokens: number };

/**
 * The ensemble's inputs. FT's own defaults are greedy (runtime_top_k 1), so
 * top_k, top_p and temperature are always sent: OpenAI's defaults mean
 * sampling from the whole distribution. Temperature 0 means greedy (top_k 1).
 * Without a seed a sampled request gets a random one, as OpenAI's do.
 */
export function ensembleInputs(prompt: string, s: Sampling): Tensor[] {
  const greedy = s.temperature === 0;
  const scalar = (name: string, datatype: Tensor["datatype"], value: number | bigint): Tensor => ({
    name,
    datatype,
    shape: [1, 1],
    data: [value],
  });
  const seed = s.seed ?? (greedy ? 0n : randomBytes(8).readBigUInt64LE());
  const inputs: Tensor[] = [
    { name: "text_input", datatype: "BYTES", shape: [1, 1], data: [prompt] },
    scalar("max_tokens", "UINT32", s.maxTokens),
    scalar("top_k", "UINT32", greedy ? 1 : s.topK),
    scalar("top_p", "FP32", greedy ? 1 : s.topP),
    scalar("temperature", "FP32", greedy ? 1 : s.temperature),
    scalar("random_seed", "UINT64", seed),
  ];
  if (s.repetitionPenalty !== undefined) inputs.push(scalar("repetition_penalty", "FP32", s.repetitionPenalty));
  // FT stops early at stop words matched as tokens; the gateway matches the text exactly as OpenAI does.
  if (s.stop.length > 0)
    inputs.push({ name: "stop_words", datatype: "BYTES", shape: [1, s.stop.length], data: [...s.stop] });
  return inputs;
}

function first(outputs: Map<string, Tensor>, name: string): string | number {
  const t = outputs.get(name);
  const v = t?.data[0];
  if (v === undefined) throw new Error(`the ensemble's response has no ${name}`);
  if (v instanceof Uint8Array) return Buffer.from(v).toString("utf8");
  return Number(v);
}

export interface GenerateOptions {
  signal: AbortSignal;
  deadline: number;
  timeoutSeconds: number;
  trimStart?: boolean;
  /** Called when the gateway itself ends the Triton call early (a stop sequence). */
  onStopCancel?: () => void;
}

export async function* generate(
  triton: TritonClient,
  prompt: string,
  sampling: Sampling,
  options: GenerateOptions,
): AsyncGenerator<GenerationEvent> {
  const text = new IncrementalText(sampling.stop, options.trimStart ?? false);
  let last = "";
  let promptTokens = 0;
  let completionTokens = 0;
  const local = new AbortController();
  const forward = (): void => local.abort();
  options.signal.addEventListener("abort", forward, { once: true });
  try {
    for await (const outputs of triton.stream(ensembleInputs(prompt, sampling), {
      signal: local.signal,
      deadline: options.deadline,
      timeoutSeconds: options.timeoutSeconds,
    })) {
      last = String(first(outputs, "text_output"));
      promptTokens = Number(first(outputs, "input_token_count"));
      completionTokens = Number(first(outputs, "output_token_count"));
      const update = text.update(last);
      if (update.delta) yield { type: "delta", text: update.delta };
      if (update.stopped) {
        options.onStopCancel?.();
        local.abort();
        break;
      }
    }
    if (options.signal.aborted) {
      // A timeout is the client's answer; a disconnect has no one left to answer.
      if (options.signal.reason instanceof ApiError) throw options.signal.reason;
      return;
    }
    const end = text.finish(last);
    if (end.delta) yield { type: "delta", text: end.delta };
    const finishReason: FinishReason = text.stopped || completionTokens < sampling.maxTokens ? "stop" : "length";
    yield { type: "done", finishReason, promptTokens, completionTokens };
  } finally {
    options.signal.removeEventListener("abort", forward);
  }
}
