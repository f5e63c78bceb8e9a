/**
 * Validation of OpenAI request bodies at the edge: every field typed and
 * range-checked, unknown fields refused, and the prompt's size checked in
 * bytes before anything tokenizes it. Each refusal names the field (`param`)
 * and the rule. The same sampling ranges are enforced again inside Triton by
 * the preprocessing model (images/server/python/tritonft/validation.py).
 */
import type { ChatTemplate, Limits, ModelConfig } from "../config";
import { ApiError, invalid, notFound } from "../server/apiError";
import { engineName } from "../models/engine";

/** Documented ranges (docs/consuming.md "API"): identical to preprocessing's. */
export const TEMPERATURE_MAX = 2;
export const REPETITION_PENALTY_MAX = 10;
export const SEED_MAX = 2n ** 64n - 1n;
export const DEFAULT_MAX_TOKENS = 16;
export const USER_MAX_CHARS = 256;
export const MAX_MESSAGES = 256;
/** OpenAI's range of presence_penalty; FT applies it as its additive penalty (docs/consuming.md). */
export const PRESENCE_PENALTY_MAX = 2;

export interface Sampling {
  maxTokens: number;
  /** OpenAI temperature, 0 = greedy. */
  temperature: number;
  topP: number;
  topK: number;
  repetitionPenalty?: number;
  /** FT's additive penalty (OpenAI presence_penalty); never together with repetitionPenalty. */
  presencePenalty?: number;
  seed?: bigint;
  stop: string[];
}

/** How many samples of each prompt, and what comes back with each. */
export interface Choices {
  /** Choices returned per prompt (OpenAI `n`). */
  n: number;
  /** Samples generated per prompt, the best `n` returned (OpenAI `best_of`; `n` when not sent). */
  bestOf: number;
  /** Each token's text and log probability (completions `logprobs`, chat `logprobs: true`). */
  logprobs: boolean;
  /**
   * Top alternatives per token (completions `logprobs`, chat `top_logprobs`), 0..the model's
   * maxLogprobs: always 0 on FasterTransformer, which computes none.
   */
  topLogprobs: number;
}

export interface CompletionRequest {
  kind: "completion";
  prompts: string[];
  sampling: Sampling;
  choices: Choices;
  /** Return the prompt before the completion. */
  echo: boolean;
  stream: boolean;
  includeUsage: boolean;
}

export interface ChatMessage {
  role: "system" | "user" | "assistant";
  content: string;
}

export interface ChatRequest {
  kind: "chat";
  messages: ChatMessage[];
  prompt: string;
  sampling: Sampling;
  choices: Choices;
  stream: boolean;
  includeUsage: boolean;
}

type Body = Record<string, unknown>;

function isObject(v: unknown): v is Body {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function describe(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "an array";
  if (typeof v === "number" && !Number.isFinite(v)) return String(v);
  if (typeof v === "string") return `the string ${JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v)}`;
  return `${typeof v} ${JSON.stringify(v)}`;
}

function utf8Bytes(s: string): number {
  return Buffer.byteLength(s, "utf8");
}

const COMMON_FIELDS = [
  "model",
  "max_tokens",
  "temperature",
  "top_p",
  "top_k",
  "repetition_penalty",
  "seed",
  "stop",
  "stream",
  "stream_options",
  "n",
  "presence_penalty",
  "frequency_penalty",
  "logit_bias",
  "user",
  "logprobs",
];
const COMPLETION_FIELDS = new Set([...COMMON_FIELDS, "prompt", "best_of", "echo", "suffix"]);
const CHAT_FIELDS = new Set([
  ...COMMON_FIELDS,
  "messages",
  "max_completion_tokens",
  "top_logprobs",
  "response_format",
  "tools",
  "tool_choice",
  "functions",
  "function_call",
  "parallel_tool_calls",
]);

function checkKnown(body: Body, known: Set<string>): void {
  for (const key of Object.keys(body)) {
    if (!known.has(key)) throw invalid(`unrecognized request argument: ${key}`, key, "unknown_parameter");
  }
}

function optionalNumber(body: Body, key: string): number | undefined {
  const v = body[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "number") throw invalid(`${key} must be a number, got ${describe(v)}`, key, "invalid_type");
  if (!Number.isFinite(v)) throw invalid(`${key} must be a finite number, got ${describe(v)}`, key);
  return v;
}

function optionalInteger(body: Body, key: string): number | undefined {
  const v = optionalNumber(body, key);
  if (v !== undefined && !Number.isInteger(v))
    throw invalid(`${key} must be an integer, got ${v}`, key, "invalid_type");
  return v;
}

function unsupported(body: Body, key: string, allowed: (v: unknown) => boolean, hint: string): void {
  const v = body[key];
  if (v === undefined || v === null) return;
  if (!allowed(v)) throw invalid(`${key}=${JSON.stringify(v)} is not supported: ${hint}`, key, "unsupported_parameter");
}

/**
 * What a request is checked against: the limits of the model it names and the
 * gateway's own (stop sequences).
 */
export interface ModelRules {
  model: ModelConfig;
  limits: Limits;
}

/**
 * The model a request body names: the route picks the model's rules with it
 * before the rest is checked. A body that is not an object, has an unknown
 * field or no usable `model` is a 400 before any model is looked up, as
 * before there were several models.
 */
export function requestedModel(body: unknown, kind: "completion" | "chat"): string {
  const b = checkedBody(body, kind === "chat" ? CHAT_FIELDS : COMPLETION_FIELDS);
  const model = b.model;
  if (model === undefined) throw invalid("model is required", "model", "missing_required_parameter");
  if (typeof model !== "string")
    throw invalid(`model must be a string, got ${describe(model)}`, "model", "invalid_type");
  return model;
}

function checkedBody(body: unknown, known: Set<string>): Body {
  if (!isObject(body)) throw invalid("the request body must be a JSON object", null, "invalid_body");
  checkKnown(body, known);
  return body;
}

function sampling(body: Body, rules: ModelRules, maxTokensKey: string, extraStop: readonly string[] = []): Sampling {
  const { maxOutputLen, vocab } = rules.model;
  const maxTokens = optionalInteger(body, maxTokensKey) ?? Math.min(DEFAULT_MAX_TOKENS, maxOutputLen);
  if (maxTokens < 1 || maxTokens > maxOutputLen) {
    throw invalid(`${maxTokensKey} is ${maxTokens}: must be between 1 and ${maxOutputLen}`, maxTokensKey);
  }
  const temperature = optionalNumber(body, "temperature") ?? 1;
  if (temperature < 0 || temperature > TEMPERATURE_MAX) {
    throw invalid(`temperature is ${temperature}: must be between 0 and ${TEMPERATURE_MAX}`, "temperature");
  }
  const topP = optionalNumber(body, "top_p") ?? 1;
  if (topP <= 0 || topP > 1) throw invalid(`top_p is ${topP}: must be > 0 and <= 1`, "top_p");
  const topK = optionalInteger(body, "top_k") ?? 0;
  if (topK < 0 || topK > vocab) throw invalid(`top_k is ${topK}: must be between 0 (off) and ${vocab}`, "top_k");
  const repetitionPenalty = optionalNumber(body, "repetition_penalty");
  if (repetitionPenalty !== undefined && (repetitionPenalty <= 0 || repetitionPenalty > REPETITION_PENALTY_MAX)) {
    throw invalid(
      `repetition_penalty is ${repetitionPenalty}: must be > 0 and <= ${REPETITION_PENALTY_MAX}`,
      "repetition_penalty",
    );
  }
  const rawSeed = optionalInteger(body, "seed");
  let seed: bigint | undefined;
  if (rawSeed !== undefined) {
    if (rawSeed < 0 || !Number.isSafeInteger(rawSeed) || BigInt(rawSeed) > SEED_MAX) {
      throw invalid(`seed is ${rawSeed}: must be an integer between 0 and 2^53-1`, "seed");
    }
    seed = BigInt(rawSeed);
  }
  const presence = optionalNumber(body, "presence_penalty");
  if (presence !== undefined && (presence < -PRESENCE_PENALTY_MAX || presence > PRESENCE_PENALTY_MAX)) {
    throw invalid(
      `presence_penalty is ${presence}: must be between -${PRESENCE_PENALTY_MAX} and ${PRESENCE_PENALTY_MAX}`,
      "presence_penalty",
    );
  }
  // 0 is OpenAI's "off": sending nothing keeps it compatible with repetition_penalty.
  const presencePenalty = presence === 0 ? undefined : presence;
  // vLLM applies both penalties to one request; FT one of them.
  if (presencePenalty !== undefined && repetitionPenalty !== undefined && rules.model.engine === "ft") {
    throw invalid(
      "presence_penalty and repetition_penalty exclude each other: FasterTransformer applies one penalty per request",
      "presence_penalty",
      "unsupported_parameter",
    );
  }
  const frequency = optionalNumber(body, "frequency_penalty");
  if (frequency !== undefined && frequency !== 0) {
    const why =
      rules.model.engine === "ft"
        ? "FasterTransformer has no count-based penalty"
        : "the ensemble the model serves (on vLLM too) takes no count-based penalty";
    throw invalid(
      `frequency_penalty=${frequency} is not supported: ${why}; ` +
        "use presence_penalty (once per token present) or repetition_penalty",
      "frequency_penalty",
      "unsupported_parameter",
    );
  }
  unsupported(body, "logit_bias", (v) => isObject(v) && Object.keys(v).length === 0, "logit biases are not served");
  const user = body.user;
  if (user !== undefined && (typeof user !== "string" || user.length > USER_MAX_CHARS)) {
    throw invalid(`user must be a string of at most ${USER_MAX_CHARS} characters`, "user");
  }
  return {
    maxTokens,
    temperature,
    topP,
    topK,
    repetitionPenalty,
    presencePenalty,
    seed,
    stop: [...stopList(body, rules), ...extraStop],
  };
}

/**
 * n and best_of: the copies of a prompt go to FT as one batch, so they are
 * capped by the model's batch size, and their total tokens by the model's
 * maxChoiceTokens (n × max_tokens, or best_of × max_tokens).
 */
function choices(
  body: Body,
  rules: ModelRules,
  maxTokens: number,
  maxTokensKey: string,
  logprobs: boolean,
  topLogprobs: number,
): Choices {
  const batch = rules.model.maxBatchSize;
  const n = optionalInteger(body, "n") ?? 1;
  if (n < 1 || n > batch) {
    throw invalid(`n is ${n}: must be between 1 and ${batch} (the model's batch size: the copies are one batch)`, "n");
  }
  const bestOf = optionalInteger(body, "best_of") ?? n;
  if (bestOf < n || bestOf > batch) {
    throw invalid(`best_of is ${bestOf}: must be between n (${n}) and ${batch} (the model's batch size)`, "best_of");
  }
  const cap = rules.model.maxChoiceTokens ?? rules.model.maxOutputLen * batch;
  if (bestOf * maxTokens > cap) {
    const what = bestOf > n ? `best_of (${bestOf})` : `n (${n})`;
    throw invalid(
      `${what} × ${maxTokensKey} (${maxTokens}) is ${bestOf * maxTokens} tokens: this model serves at most ${cap} per prompt`,
      bestOf > n ? "best_of" : "n",
    );
  }
  if (bestOf > n && body.stream === true) {
    throw invalid("best_of cannot be streamed: the best choices are known only at the end", "best_of");
  }
  return { n, bestOf, logprobs, topLogprobs };
}

function stopList(body: Body, rules: ModelRules): string[] {
  const { maxStop, maxStopBytes } = rules.limits;
  const v = body.stop;
  if (v === undefined || v === null) return [];
  const list = typeof v === "string" ? [v] : v;
  if (!Array.isArray(list))
    throw invalid(`stop must be a string or an array of strings, got ${describe(v)}`, "stop", "invalid_type");
  if (list.length > maxStop) throw invalid(`stop has ${list.length} sequences: at most ${maxStop} are allowed`, "stop");
  return list.map((s, i) => {
    if (typeof s !== "string") throw invalid(`stop[${i}] must be a string, got ${describe(s)}`, "stop", "invalid_type");
    if (s === "") throw invalid(`stop[${i}] is empty`, "stop");
    if (utf8Bytes(s) > maxStopBytes)
      throw invalid(`stop[${i}] is ${utf8Bytes(s)} bytes: at most ${maxStopBytes}`, "stop");
    return s;
  });
}

function streamFlags(body: Body): { stream: boolean; includeUsage: boolean } {
  const stream = body.stream ?? false;
  if (typeof stream !== "boolean")
    throw invalid(`stream must be a boolean, got ${describe(stream)}`, "stream", "invalid_type");
  const options = body.stream_options;
  if (options === undefined || options === null) return { stream, includeUsage: false };
  if (!stream) throw invalid("stream_options is only allowed with stream: true", "stream_options");
  if (!isObject(options)) throw invalid("stream_options must be an object", "stream_options", "invalid_type");
  for (const key of Object.keys(options)) {
    if (key !== "include_usage")
      throw invalid(`unrecognized stream_options argument: ${key}`, "stream_options", "unknown_parameter");
  }
  const includeUsage = options.include_usage ?? false;
  if (typeof includeUsage !== "boolean")
    throw invalid("stream_options.include_usage must be a boolean", "stream_options", "invalid_type");
  return { stream, includeUsage };
}

function checkPromptBytes(prompt: string, rules: ModelRules, param: string): void {
  const cap = rules.model.maxPromptBytes;
  // A UTF-16 unit is at most 3 UTF-8 bytes: short prompts need no byte count.
  if (prompt.length * 3 > cap && utf8Bytes(prompt) > cap) {
    // Past the byte cap the prompt cannot fit the context: the code OpenAI clients branch on.
    throw invalid(
      `the prompt is ${utf8Bytes(prompt)} bytes, more than fit this model's context of ${rules.model.maxInputLen} ` +
        `tokens (at most ${cap} bytes are accepted)`,
      param,
      "context_length_exceeded",
    );
  }
}

/** A completion request for the model of `rules` (the route has read `model` with requestedModel). */
export function parseCompletion(input: unknown, rules: ModelRules): CompletionRequest {
  const body = checkedBody(input, COMPLETION_FIELDS);
  const raw = body.prompt;
  if (raw === undefined || raw === null) throw invalid("prompt is required", "prompt", "missing_required_parameter");
  const list = typeof raw === "string" ? [raw] : raw;
  if (!Array.isArray(list))
    throw invalid(`prompt must be a string or an array of strings, got ${describe(raw)}`, "prompt", "invalid_type");
  const maxPrompts = rules.model.maxBatchSize;
  if (list.length === 0) throw invalid("prompt is an empty array", "prompt");
  if (list.length > maxPrompts) throw invalid(`prompt has ${list.length} entries: at most ${maxPrompts}`, "prompt");
  const prompts = list.map((p, i) => {
    if (typeof p === "number" || Array.isArray(p)) {
      throw invalid("token-id prompts are not supported: send text", "prompt", "unsupported_parameter");
    }
    if (typeof p !== "string")
      throw invalid(`prompt[${i}] must be a string, got ${describe(p)}`, "prompt", "invalid_type");
    if (p === "") throw invalid(`prompt${typeof raw === "string" ? "" : `[${i}]`} is empty`, "prompt");
    checkPromptBytes(p, rules, "prompt");
    return p;
  });
  unsupported(body, "suffix", (v) => v === "", "insertion is not served");
  const echo = body.echo ?? false;
  if (typeof echo !== "boolean") throw invalid(`echo must be a boolean, got ${describe(echo)}`, "echo", "invalid_type");
  const logprobs = completionLogprobs(body, rules);
  if (echo && logprobs !== undefined) {
    throw invalid(
      `echo with logprobs is not served: ${
        rules.model.engine === "ft"
          ? "FasterTransformer computes no log probabilities for prompt tokens"
          : "the vLLM model returns no log probabilities for prompt tokens"
      }, and OpenAI returns them for every prompt token but the first`,
      "echo",
      "unsupported_parameter",
    );
  }
  const s = sampling(body, rules, "max_tokens");
  return {
    kind: "completion",
    prompts,
    sampling: s,
    // On FT, logprobs 1 is the sampled token alone (no alternatives); on vLLM, that many alternatives.
    choices: choices(
      body,
      rules,
      s.maxTokens,
      "max_tokens",
      logprobs !== undefined,
      rules.model.engine === "ft" ? 0 : (logprobs ?? 0),
    ),
    echo,
    ...streamFlags(body),
  };
}

/**
 * Completions `logprobs`: on FasterTransformer 0 or 1 (the sampled token's log probability, no
 * alternatives: top_logprobs comes back null); on vLLM 0..maxLogprobs top alternatives per token.
 */
function completionLogprobs(body: Body, rules: ModelRules): number | undefined {
  const logprobs = optionalInteger(body, "logprobs");
  if (logprobs === undefined) return undefined;
  const { engine, maxLogprobs } = rules.model;
  if (engine === "ft" && (logprobs < 0 || logprobs > 1)) {
    throw invalid(
      `logprobs is ${logprobs}: at most 1 is served. FasterTransformer computes the log probability of the ` +
        "sampled token only, no alternatives (top_logprobs comes back null)",
      "logprobs",
      logprobs > 1 ? "unsupported_parameter" : "invalid_value",
    );
  }
  if (engine !== "ft" && (logprobs < 0 || logprobs > maxLogprobs)) {
    throw invalid(
      `logprobs is ${logprobs}: must be between 0 and ${maxLogprobs} ` +
        `(the most top alternatives per token this model's ${engineName(engine)} engine returns)`,
      "logprobs",
      logprobs > maxLogprobs ? "unsupported_parameter" : "invalid_value",
    );
  }
  return logprobs;
}

/** Chat `top_logprobs`: 0 on FasterTransformer (no alternatives), 0..maxLogprobs on vLLM; needs `logprobs: true`. */
function chatTopLogprobs(body: Body, rules: ModelRules, logprobs: boolean): number {
  const top = optionalInteger(body, "top_logprobs");
  if (top === undefined) return 0;
  const { engine, maxLogprobs } = rules.model;
  if (engine === "ft" && top !== 0) {
    throw invalid(
      `top_logprobs is ${top}: at most 0 is served. FasterTransformer computes the log probability of the ` +
        "sampled token only, no alternatives",
      "top_logprobs",
      "unsupported_parameter",
    );
  }
  if (top < 0 || top > maxLogprobs) {
    throw invalid(
      `top_logprobs is ${top}: must be between 0 and ${maxLogprobs} ` +
        `(the most top alternatives per token this model's ${engineName(engine)} engine returns)`,
      "top_logprobs",
      top > maxLogprobs ? "unsupported_parameter" : "invalid_value",
    );
  }
  if (!logprobs) throw invalid("top_logprobs needs logprobs: true", "top_logprobs");
  return top;
}

function messageContent(content: unknown, i: number): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content
      .map((part, j) => {
        if (!isObject(part) || part.type !== "text" || typeof part.text !== "string") {
          throw invalid(
            `messages[${i}].content[${j}] must be a text part {type: "text", text}`,
            "messages",
            "unsupported_parameter",
          );
        }
        return part.text;
      })
      .join("");
  }
  throw invalid(
    `messages[${i}].content must be a string or text parts, got ${describe(content)}`,
    "messages",
    "invalid_type",
  );
}

/** Renders chat turns with the preset's template, ending with the assistant prefix the model continues from. */
export function renderChat(messages: ChatMessage[], t: ChatTemplate): string {
  let out = "";
  let pendingSystem = "";
  for (const m of messages) {
    if (m.role === "system") {
      if (t.system !== undefined) out += `${t.system}${m.content}${t.turnEnd}`;
      else pendingSystem += `${m.content}\n`;
      continue;
    }
    const prefix = m.role === "user" ? t.user : t.assistant;
    const content = m.role === "user" ? `${pendingSystem}${m.content}` : m.content;
    if (m.role === "user") pendingSystem = "";
    out += `${prefix}${content}${t.turnEnd}`;
  }
  if (pendingSystem !== "") out += `${t.user}${pendingSystem.trimEnd()}${t.turnEnd}`;
  return out + t.assistant.trimEnd();
}

/** A chat request for the model of `rules` (the route has read `model` with requestedModel). */
export function parseChat(input: unknown, rules: ModelRules): ChatRequest {
  const body = checkedBody(input, CHAT_FIELDS);
  const template = rules.model.chatTemplate;
  if (!template) {
    throw notFound(
      `the model '${rules.model.id}' has no chat template (its preset declares none): use /v1/completions`,
      "chat_not_supported",
      "model",
    );
  }
  const raw = body.messages;
  if (raw === undefined) throw invalid("messages is required", "messages", "missing_required_parameter");
  if (!Array.isArray(raw) || raw.length === 0)
    throw invalid("messages must be a non-empty array", "messages", "invalid_type");
  if (raw.length > MAX_MESSAGES)
    throw invalid(`messages has ${raw.length} entries: at most ${MAX_MESSAGES}`, "messages");
  const messages = raw.map((m, i): ChatMessage => {
    if (!isObject(m)) throw invalid(`messages[${i}] must be an object`, "messages", "invalid_type");
    for (const key of Object.keys(m)) {
      if (key !== "role" && key !== "content" && key !== "name") {
        throw invalid(`messages[${i}].${key} is not supported`, "messages", "unsupported_parameter");
      }
    }
    if (m.role !== "system" && m.role !== "user" && m.role !== "assistant") {
      throw invalid(`messages[${i}].role must be system, user or assistant, got ${describe(m.role)}`, "messages");
    }
    return { role: m.role, content: messageContent(m.content, i) };
  });
  if (!messages.some((m) => m.role === "user")) throw invalid("messages needs at least one user message", "messages");
  for (const key of ["tools", "functions", "tool_choice", "function_call", "parallel_tool_calls"]) {
    unsupported(body, key, () => false, "tool calls are not served");
  }
  const logprobs = body.logprobs ?? false;
  if (typeof logprobs !== "boolean")
    throw invalid(`logprobs must be a boolean, got ${describe(logprobs)}`, "logprobs", "invalid_type");
  const top = chatTopLogprobs(body, rules, logprobs);
  unsupported(body, "response_format", (v) => isObject(v) && v.type === "text", "only text responses are served");
  if (body.max_tokens !== undefined && body.max_completion_tokens !== undefined) {
    throw invalid("send max_tokens or max_completion_tokens, not both", "max_completion_tokens");
  }
  const maxKey = body.max_completion_tokens !== undefined ? "max_completion_tokens" : "max_tokens";
  const prompt = renderChat(messages, template);
  checkPromptBytes(prompt, rules, "messages");
  const s = sampling(body, rules, maxKey, template.stop);
  return {
    kind: "chat",
    messages,
    prompt,
    sampling: s,
    choices: choices(body, rules, s.maxTokens, maxKey, logprobs, top),
    ...streamFlags(body),
  };
}

export function asApiError(e: unknown): ApiError | undefined {
  return e instanceof ApiError ? e : undefined;
}
