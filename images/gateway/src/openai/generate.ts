/**
 * One prompt through the ensemble, in `copies` samples batched into one
 * Triton request (FT batches them; OpenAI `n` and `best_of`). OpenAI sampling
 * fields become the ensemble's tensors, Triton's cumulative texts become safe
 * deltas per copy, and a copy ends at a stop sequence, at the model's end
 * token or at max_tokens. Once every copy has met a stop sequence the Triton
 * call is cancelled when the model can cancel; otherwise it is read to its
 * end (nothing more is forwarded), so the request holds its slots until the
 * GPU is done and its usage counts every token generated.
 */
import { randomBytes } from "node:crypto";
import { ApiError } from "../server/apiError";
import type { Tensor } from "../triton/tensors";
import { IncrementalText } from "./textStream";
import type { TritonClient } from "../triton/tritonClient";
import type { Sampling } from "./validate";

export type FinishReason = "stop" | "length";

/** The ensemble's outputs a generation reads (docs/architecture.md "Ensemble contract"). */
const OUTPUTS = ["text_output", "input_token_count", "output_token_count", "cum_log_probs"];
/** Read only with OpenAI `logprobs`. */
const LOGPROB_OUTPUTS = ["output_log_probs", "output_tokens"];
/** Read only with top alternatives asked (vLLM models: docs/vllm.md, "The model"). */
const TOP_OUTPUTS = ["output_top_tokens", "output_top_log_probs"];

/** One of a token's top alternatives: its text and log probability. */
export interface Alternative {
  text: string;
  logprob: number;
}

/** One generated token: its text (what it adds to the output) and the engine's log probability of it. */
export interface TokenLogprob {
  text: string;
  logprob: number;
  /** Its top alternatives by rank (with top logprobs asked of a vLLM model). */
  top?: Alternative[];
}

export interface DeltaEvent {
  type: "delta";
  row: number;
  text: string;
  /** The tokens inside this text (with `logprobs`). */
  tokens?: TokenLogprob[];
}

export type GenerationEvent =
  | DeltaEvent
  | {
      type: "done";
      row: number;
      finishReason: FinishReason;
      promptTokens: number;
      /** Tokens of the copy's returned text (to its stop sequence). */
      completionTokens: number;
      /** Tokens Triton generated for the copy: more than completionTokens when it ran on past a stop sequence. */
      generatedTokens: number;
      /** Sum of FT's log probabilities of the copy's returned tokens (best_of ranks by it). */
      cumLogprob: number;
    };

const SEED_MOD = 2n ** 64n;

/**
 * Seed of copy `i`: the request's seed plus i (mod 2^64), so a seeded request
 * is reproducible, copy 0 of `n: 2` equals the `n: 1` answer, and the copies
 * differ from each other.
 */
export function copySeed(seed: bigint, i: number): bigint {
  return (seed + BigInt(i)) % SEED_MOD;
}

/**
 * The ensemble's inputs. FT's own defaults are greedy (runtime_top_k 1), so
 * top_k, top_p and temperature are always sent: OpenAI's defaults mean
 * sampling from the whole distribution. Temperature 0 means greedy (top_k 1).
 * Without a seed a sampled request gets a random one, as OpenAI's do.
 */
export function ensembleInputs(
  prompt: string,
  s: Sampling,
  copies = 1,
  returnTokens = false,
  /** Top alternatives per token: sent only when above 0, since FT's ensemble has no such input. */
  topLogprobs = 0,
): Tensor[] {
  const greedy = s.temperature === 0;
  const scalar = (name: string, datatype: Tensor["datatype"], value: number | bigint): Tensor => ({
    name,
    datatype,
    shape: [copies, 1],
    data: Array.from({ length: copies }, () => value),
  });
  const seed = s.seed ?? (greedy ? 0n : randomBytes(8).readBigUInt64LE());
  const inputs: Tensor[] = [
    { name: "text_input", datatype: "BYTES", shape: [copies, 1], data: Array.from({ length: copies }, () => prompt) },
    scalar("max_tokens", "UINT32", s.maxTokens),
    scalar("top_k", "UINT32", greedy ? 1 : s.topK),
    scalar("top_p", "FP32", greedy ? 1 : s.topP),
    scalar("temperature", "FP32", greedy ? 1 : s.temperature),
    {
      name: "random_seed",
      datatype: "UINT64",
      shape: [copies, 1],
      data: Array.from({ length: copies }, (_, i) => copySeed(seed, i)),
    },
  ];
  if (s.repetitionPenalty !== undefined) inputs.push(scalar("repetition_penalty", "FP32", s.repetitionPenalty));
  if (s.presencePenalty !== undefined) inputs.push(scalar("presence_penalty", "FP32", s.presencePenalty));
  if (returnTokens) inputs.push(scalar("return_tokens", "UINT32", 1));
  if (topLogprobs > 0) inputs.push(scalar("top_logprobs", "UINT32", topLogprobs));
  // FT stops early at stop words matched as tokens; the gateway matches the text exactly as OpenAI does.
  if (s.stop.length > 0) {
    inputs.push({
      name: "stop_words",
      datatype: "BYTES",
      shape: [copies, s.stop.length],
      data: Array.from({ length: copies }, () => s.stop).flat(),
    });
  }
  return inputs;
}

function text(v: unknown): string {
  return v instanceof Uint8Array ? Buffer.from(v).toString("utf8") : String(v);
}

/** Row `row` of a [copies, width] output (missing output: an error, the contract has it). */
function row(outputs: Map<string, Tensor>, name: string, r: number): (string | number)[] {
  const t = outputs.get(name);
  if (!t) throw new Error(`the ensemble's response has no ${name}`);
  const width = t.shape.length > 1 ? t.shape.slice(1).reduce((a, b) => a * b, 1) : 1;
  const values = t.data.slice(r * width, (r + 1) * width) as unknown[];
  if (values.length === 0) throw new Error(`the ensemble's ${name} has no row ${r}`);
  return values.map((v) => (t.datatype === "BYTES" ? text(v) : Number(v)));
}

/**
 * Row `r` of a [copies, tokens, k] output as one list of k per token (the
 * top alternatives' texts or log probabilities, by rank).
 */
function rowMatrix(outputs: Map<string, Tensor>, name: string, r: number): (string | number)[][] {
  const t = outputs.get(name);
  if (!t || t.shape.length !== 3) throw new Error(`the ensemble's response has no [copies, tokens, k] ${name}`);
  const [, tokens, k] = t.shape;
  const flat = row(outputs, name, r);
  return Array.from({ length: tokens }, (_, i) => flat.slice(i * k, (i + 1) * k));
}

/** Each token's alternatives, padding (an empty text of log probability -inf: no token) left out. */
function alternatives(outputs: Map<string, Tensor>, r: number, count: number): Alternative[][] {
  const texts = rowMatrix(outputs, "output_top_tokens", r);
  const probs = rowMatrix(outputs, "output_top_log_probs", r);
  return texts
    .slice(0, count)
    .map((ranked, i) =>
      ranked
        .map((text, rank) => ({ text: String(text), logprob: Number(probs[i][rank]) }))
        .filter((a) => a.logprob !== Number.NEGATIVE_INFINITY),
    );
}

export interface GenerateOptions {
  signal: AbortSignal;
  deadline: number;
  timeoutSeconds: number;
  trimStart?: boolean;
  /** Samples of the prompt, batched in one request (OpenAI `n`, or `best_of`). */
  copies?: number;
  /** Return each token's text and log probability with the deltas (OpenAI `logprobs`). */
  logprobs?: boolean;
  /** With `logprobs`: the top alternatives per token to return as well (a vLLM model's); default 0. */
  topLogprobs?: number;
  /** Called when the gateway itself ends the Triton call early (a stop sequence). */
  onStopCancel?: () => void;
  /** The model's Triton stops a generation whose call is cancelled (ModelConfig.cancellable); default true. */
  cancellable?: boolean;
  /**
   * Called once, at the response in which every copy has generated max_tokens: the model can
   * generate nothing more, though Triton's stream has yet to end (its final response and status
   * follow). `generatedTokens`: every copy's, as the done events will report them. The copies' done
   * events follow at once; the rest of Triton's stream is then read to its end without events.
   */
  onComplete?: (counts: { promptTokens: number; generatedTokens: number }) => void;
  /** The request's Triton inputs built ahead (generationRequest, with these options): sent as they are. */
  request?: GenerationRequest;
}

/** The Triton request of one prompt's generation: its inputs and the outputs it reads. */
export interface GenerationRequest {
  inputs: Tensor[];
  outputs: string[];
}

/** The inputs and outputs generate() sends for `prompt` with these options (built ahead by the routes: prepare). */
export function generationRequest(
  prompt: string,
  sampling: Sampling,
  options: Pick<GenerateOptions, "copies" | "logprobs" | "topLogprobs">,
): GenerationRequest {
  const copies = options.copies ?? 1;
  const logprobs = options.logprobs ?? false;
  const topLogprobs = logprobs ? (options.topLogprobs ?? 0) : 0;
  return {
    inputs: ensembleInputs(prompt, sampling, copies, logprobs, topLogprobs),
    // The per-token arrays (every token so far, at every step) only when the client asked for logprobs.
    outputs: [...OUTPUTS, ...(logprobs ? LOGPROB_OUTPUTS : []), ...(topLogprobs > 0 ? TOP_OUTPUTS : [])],
  };
}

/** One copy's progress. */
class Copy {
  readonly text: IncrementalText;
  last = "";
  promptTokens = 0;
  completionTokens = 0;
  generatedTokens = 0;
  cumLogprob = 0;
  /** Tokens already sent with a delta. */
  tokensSent = 0;
  pieces: string[] = [];
  logprobs: number[] = [];
  alternatives: Alternative[][] = [];

  constructor(stop: readonly string[], trimStart: boolean) {
    this.text = new IncrementalText(stop, trimStart);
  }

  /**
   * The tokens that lie inside the text sent so far and were not sent yet.
   * Text the gateway dropped (a chat reply's leading whitespace) drops its
   * tokens too; a token cut by a stop sequence is not sent.
   */
  newTokens(trimStart: boolean): TokenLogprob[] {
    const lead = trimStart ? this.last.length - this.last.trimStart().length : 0;
    const visible = this.text.text.length;
    const out: TokenLogprob[] = [];
    let end = 0;
    for (let i = 0; i < this.pieces.length; i++) {
      end += this.pieces[i].length;
      if (end - lead > visible) break;
      if (i < this.tokensSent) continue;
      this.tokensSent = i + 1;
      if (end <= lead) continue;
      const top = this.alternatives[i];
      out.push({ text: this.pieces[i], logprob: this.logprobs[i], ...(top ? { top } : {}) });
    }
    return out;
  }
}

export async function* generate(
  triton: TritonClient,
  prompt: string,
  sampling: Sampling,
  options: GenerateOptions,
): AsyncGenerator<GenerationEvent> {
  const copies = options.copies ?? 1;
  const trimStart = options.trimStart ?? false;
  const logprobs = options.logprobs ?? false;
  const topLogprobs = logprobs ? (options.topLogprobs ?? 0) : 0;
  const request = options.request ?? generationRequest(prompt, sampling, options);
  const state = Array.from({ length: copies }, () => new Copy(sampling.stop, trimStart));
  const local = new AbortController();
  const forward = (): void => local.abort();
  options.signal.addEventListener("abort", forward, { once: true });
  const delta = (r: number, d: string): DeltaEvent => {
    const tokens = logprobs ? state[r].newTokens(trimStart) : undefined;
    return { type: "delta", row: r, text: d, ...(tokens ? { tokens } : {}) };
  };
  /** Every copy's last text (held back for stop sequences) and its done event. */
  function* finish(): Generator<GenerationEvent> {
    for (let r = 0; r < copies; r++) {
      const c = state[r];
      const end = c.text.finish(c.last);
      if (end.delta || (logprobs && c.tokensSent < c.pieces.length)) {
        const event = delta(r, end.delta);
        if (event.text || event.tokens?.length) yield event;
      }
      const finishReason: FinishReason = c.text.stopped || c.completionTokens < sampling.maxTokens ? "stop" : "length";
      yield {
        type: "done",
        row: r,
        finishReason,
        promptTokens: c.promptTokens,
        completionTokens: c.completionTokens,
        generatedTokens: Math.max(c.completionTokens, c.generatedTokens),
        cumLogprob: c.cumLogprob,
      };
    }
  }
  let complete = false;
  /** The choices' done events are out (at max_tokens, before the stream's end). */
  let ended = false;
  try {
    for await (const outputs of triton.stream(request.inputs, {
      outputs: request.outputs,
      signal: local.signal,
      deadline: options.deadline,
      timeoutSeconds: options.timeoutSeconds,
    })) {
      // Ended at max_tokens (below): what is left of Triton's stream (its final response) is read, not used.
      if (complete) continue;
      for (let r = 0; r < copies; r++) {
        const c = state[r];
        c.generatedTokens = Number(row(outputs, "output_token_count", r)[0]);
        if (c.text.stopped) continue;
        c.last = String(row(outputs, "text_output", r)[0]);
        c.promptTokens = Number(row(outputs, "input_token_count", r)[0]);
        c.completionTokens = c.generatedTokens;
        c.cumLogprob = Number(row(outputs, "cum_log_probs", r)[0]);
        if (logprobs) {
          c.pieces = row(outputs, "output_tokens", r).map(String).slice(0, c.completionTokens);
          c.logprobs = row(outputs, "output_log_probs", r).map(Number).slice(0, c.completionTokens);
          if (topLogprobs > 0) c.alternatives = alternatives(outputs, r, c.completionTokens);
        }
        const update = c.text.update(c.last);
        if (update.delta) yield delta(r, update.delta);
      }
      if (state.every((c) => c.generatedTokens >= sampling.maxTokens)) {
        complete = true;
        options.onComplete?.({
          promptTokens: state[0].promptTokens,
          generatedTokens: state.reduce((n, c) => n + c.generatedTokens, 0),
        });
        // Every copy has its max_tokens: nothing can follow, so the choices end here rather than at
        // Triton's final response and status, which come milliseconds later (issue 33, item 7). The
        // stream is still read to its end: a model that cannot cancel holds its slot upstream until then.
        if (!options.signal.aborted) {
          ended = true;
          yield* finish();
        }
        continue;
      }
      if (state.every((c) => c.text.stopped) && (options.cancellable ?? true) && !local.signal.aborted) {
        options.onStopCancel?.();
        local.abort();
        break;
      }
    }
    // Ended at max_tokens: its events are out, and whatever ended the stream since is no one's answer.
    if (ended) return;
    if (options.signal.aborted) {
      // A timeout is the client's answer; a disconnect has no one left to answer.
      if (options.signal.reason instanceof ApiError) throw options.signal.reason;
      return;
    }
    yield* finish();
  } finally {
    options.signal.removeEventListener("abort", forward);
  }
}
