/**
 * POST /v1/completions and /v1/chat/completions: JSON responses, or
 * Server-Sent Events as the tokens are generated. The HTTP status is decided
 * by the first event from Triton (so a prompt refused by the tokenizer is
 * still a plain 400), then every delta is flushed as it arrives and the
 * stream ends with `data: [DONE]`; the last chunk carries the token usage.
 * A generation at max_tokens is answered in full at its last token, before
 * Triton's streams end (generate.ts); those are read to their end after.
 *
 * Each prompt is one Triton request holding its `best_of` (else `n`) copies
 * as a batch; choice `index` is prompt × n + copy, as OpenAI numbers them.
 */
import { randomUUID } from "node:crypto";
import type { FastifyReply } from "fastify";
import { ApiError } from "../server/apiError";
import { openEventStream, sendEvent, sendJsonEvent } from "../server/sse";
import { chunkHead, chunkJson } from "./chunkJson";
import {
  type FinishReason,
  type GenerationEvent,
  type GenerationRequest,
  type TokenLogprob,
  generate,
  generationRequest,
} from "./generate";
import type { TritonClient } from "../triton/tritonClient";
import { chatLogprobs, completionLogprobs } from "./logprobs";
import type { RequestContext } from "../admission/requestContext";
import type { ChatRequest, CompletionRequest } from "./validate";

interface ChoiceResult {
  text: string;
  finishReason: FinishReason;
  promptTokens: number;
  completionTokens: number;
  /** What Triton generated for the choice, past its stop sequence included: what usage counts. */
  generatedTokens: number;
  cumLogprob: number;
  tokens: TokenLogprob[];
}

interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

/** Prompt tokens once per prompt (its copies share it), the tokens Triton generated for every copy. */
function outcomeOf(results: ChoiceResult[][]): { promptTokens: number; completionTokens: number } {
  return {
    promptTokens: results.reduce((n, copies) => n + (copies[0]?.promptTokens ?? 0), 0),
    completionTokens: results.reduce((n, copies) => n + copies.reduce((m, r) => m + r.generatedTokens, 0), 0),
  };
}

function usageOf(results: ChoiceResult[][]): Usage {
  const { promptTokens, completionTokens } = outcomeOf(results);
  return {
    prompt_tokens: promptTokens,
    completion_tokens: completionTokens,
    total_tokens: promptTokens + completionTokens,
  };
}

/** One request's generations (one batched Triton request per prompt) and what they have produced so far. */
interface Generation {
  chat: boolean;
  id: string;
  created: number;
  model: string;
  prompts: string[];
  generators: AsyncGenerator<GenerationEvent>[];
  /** results[prompt][copy] */
  results: ChoiceResult[][];
  /** The first event of each generator, already taken (it decided the status). */
  firsts: IteratorResult<GenerationEvent>[];
  /** Fold one event of prompt `index` into its results. */
  record(index: number, event: GenerationEvent): void;
}

/** A request's Triton requests, built (and serialized by its Triton client) before it is admitted. */
export interface PreparedGeneration {
  triton: TritonClient;
  /** One per prompt. */
  requests: GenerationRequest[];
}

/**
 * Build every prompt's Triton request for `triton` and let the client serialize it: the routes call
 * this while the shared store decides admission (admissionPlugin `prepare`), so that CPU work is off
 * the request's path. Nothing reaches Triton before serveGeneration.
 */
export function prepareGeneration(triton: TritonClient, request: CompletionRequest | ChatRequest): PreparedGeneration {
  const prompts = request.kind === "chat" ? [request.prompt] : request.prompts;
  const { bestOf, logprobs, topLogprobs } = request.choices;
  const requests = prompts.map((prompt) =>
    generationRequest(prompt, request.sampling, { copies: bestOf, logprobs, topLogprobs }),
  );
  for (const r of requests) triton.prepare?.(r.inputs, r.outputs);
  return { triton, requests };
}

export async function serveGeneration(
  ctx: RequestContext,
  reply: FastifyReply,
  request: CompletionRequest | ChatRequest,
  prepared?: PreparedGeneration,
): Promise<void> {
  // Built for another Triton (a retry sent elsewhere), it is built again.
  const generation = await start(ctx, request, prepared?.triton === ctx.triton ? prepared.requests : undefined);
  if (!request.stream) return sendJson(ctx, reply, generation, request);
  return streamEvents(ctx, reply, generation, request);
}

/**
 * A prompt over the context is 400 `context_length_exceeded` (what OpenAI
 * clients and LangChain branch on) whichever check finds it: the gateway's
 * byte cap, preprocessing's byte cap, or the tokenizer's count.
 */
function asContextError(error: unknown): unknown {
  if (error instanceof ApiError && error.code === "prompt_too_large") {
    return new ApiError(400, "invalid_request_error", error.message, "context_length_exceeded", error.param);
  }
  return error;
}

/** Start every prompt's generation and wait for each one's first event: errors before it are plain HTTP errors. */
async function start(
  ctx: RequestContext,
  request: CompletionRequest | ChatRequest,
  prepared?: GenerationRequest[],
): Promise<Generation> {
  const chat = request.kind === "chat";
  const prompts = chat ? [request.prompt] : request.prompts;
  const id = `${chat ? "chatcmpl" : "cmpl"}-${randomUUID().replace(/-/g, "")}`;
  const created = Math.floor(Date.now() / 1000);
  const { bestOf, logprobs, topLogprobs } = request.choices;
  // Every prompt's copies at max_tokens: the request's usage is final, so what it holds is given back
  // now, while Triton's streams end (ctx.generationComplete).
  const complete = { prompts: 0, promptTokens: 0, completionTokens: 0 };
  const onComplete = (counts: { promptTokens: number; generatedTokens: number }): void => {
    complete.prompts += 1;
    complete.promptTokens += counts.promptTokens;
    complete.completionTokens += counts.generatedTokens;
    if (complete.prompts === prompts.length) ctx.generationComplete(complete);
  };
  const generators = prompts.map((prompt, p) =>
    generate(ctx.triton, prompt, request.sampling, {
      ...(prepared?.[p] ? { request: prepared[p] } : {}),
      signal: ctx.signal,
      deadline: ctx.deadline,
      timeoutSeconds: ctx.config.limits.requestTimeoutSeconds,
      trimStart: chat,
      copies: bestOf,
      logprobs,
      topLogprobs,
      onStopCancel: () =>
        ctx.metrics.upstreamCancelled.inc({ reason: "stop_sequence", model: ctx.model.config.id, build: ctx.build }),
      cancellable: ctx.model.config.cancellable,
      onComplete,
    }),
  );
  const results: ChoiceResult[][] = prompts.map(() =>
    Array.from({ length: bestOf }, () => ({
      text: "",
      finishReason: "stop" as FinishReason,
      promptTokens: 0,
      completionTokens: 0,
      generatedTokens: 0,
      cumLogprob: 0,
      tokens: [],
    })),
  );
  let firstTokenSeen = false;
  const record = (index: number, event: GenerationEvent): void => {
    const r = results[index][event.row];
    if (event.type === "delta") {
      if (!firstTokenSeen) {
        firstTokenSeen = true;
        ctx.firstToken();
      }
      r.text += event.text;
      if (event.tokens) r.tokens.push(...event.tokens);
    } else {
      r.finishReason = event.finishReason;
      r.promptTokens = event.promptTokens;
      r.completionTokens = event.completionTokens;
      r.generatedTokens = event.generatedTokens;
      r.cumLogprob = event.cumLogprob;
    }
  };
  const settled = await Promise.allSettled(generators.map((g) => g.next()));
  const failed = settled.find((f) => f.status === "rejected");
  if (failed) {
    await Promise.allSettled(generators.map((g) => g.return(undefined)));
    throw asContextError((failed as PromiseRejectedResult).reason);
  }
  ctx.reachedModel();
  return {
    chat,
    id,
    created,
    model: ctx.model.config.id,
    prompts,
    generators,
    results,
    firsts: settled.map((f) => (f as PromiseFulfilledResult<IteratorResult<GenerationEvent>>).value),
    record,
  };
}

/** Feed every event of prompt `index`, the one already taken first, to `handle`. */
async function drain(g: Generation, index: number, handle: (event: GenerationEvent) => void): Promise<void> {
  const first = g.firsts[index];
  if (!first.done) handle(first.value);
  for await (const event of g.generators[index]) handle(event);
}

/**
 * Feed every prompt's events to `handle(prompt, event)` until every choice has its done event. At
 * max_tokens that comes before Triton's streams end (generate.ts), and the rest of them is read
 * after this returns: a failure there is logged (the answer is whole), one before it is thrown.
 */
async function untilChoicesEnd(
  ctx: RequestContext,
  g: Generation,
  handle: (prompt: number, event: GenerationEvent) => void,
): Promise<void> {
  let open = g.results.reduce((n, copies) => n + copies.length, 0);
  let allEnded = (): void => undefined;
  const ended = new Promise<void>((resolve) => (allEnded = resolve));
  const drained = Promise.all(
    g.generators.map((_, p) =>
      drain(g, p, (event) => {
        handle(p, event);
        if (event.type === "done" && --open === 0) allEnded();
      }),
    ),
  );
  await Promise.race([drained, ended]);
  drained.catch((error: unknown) => ctx.failedAfterEnd(error));
}

/**
 * The `n` copies returned of a prompt's `best_of`: the highest log probability
 * per token first (OpenAI's rule), from FT's log probabilities; ties keep
 * generation order.
 */
export function best(copies: ChoiceResult[], n: number): ChoiceResult[] {
  if (copies.length <= n) return copies;
  const score = (r: ChoiceResult): number => r.cumLogprob / Math.max(1, r.completionTokens);
  return copies
    .map((r, i) => ({ r, i }))
    .sort((a, b) => score(b.r) - score(a.r) || a.i - b.i)
    .slice(0, n)
    .map(({ r }) => r);
}

async function sendJson(
  ctx: RequestContext,
  reply: FastifyReply,
  g: Generation,
  request: CompletionRequest | ChatRequest,
): Promise<void> {
  await untilChoicesEnd(ctx, g, (index, event) => g.record(index, event));
  await ctx.finished(outcomeOf(g.results));
  const usage = usageOf(g.results);
  const { id, created, model } = g;
  const { n, logprobs } = request.choices;
  const chosen = g.results.map((copies) => best(copies, n));
  if (request.kind === "chat") {
    return reply.send({
      id,
      object: "chat.completion",
      created,
      model,
      choices: chosen.flat().map((r, index) => ({
        index,
        message: { role: "assistant", content: r.text },
        logprobs: logprobs ? chatLogprobs(r.tokens) : null,
        finish_reason: r.finishReason,
      })),
      usage,
    });
  }
  const echo = request.echo;
  const alternatives = ctx.model.config.engine !== "ft";
  return reply.send({
    id,
    object: "text_completion",
    created,
    model,
    choices: chosen.flatMap((copies, p) =>
      copies.map((r, j) => {
        const prefix = echo ? g.prompts[p] : "";
        return {
          index: p * n + j,
          text: prefix + r.text,
          logprobs: logprobs ? completionLogprobs(r.tokens, prefix.length, alternatives) : null,
          finish_reason: r.finishReason,
        };
      }),
    ),
    usage,
  });
}

/** Server-Sent Events: every delta flushed as it arrives, then `data: [DONE]` (or an error event). */
async function streamEvents(
  ctx: RequestContext,
  reply: FastifyReply,
  g: Generation,
  request: CompletionRequest | ChatRequest,
): Promise<void> {
  const { chat, id, created, model, results } = g;
  const { n, logprobs } = request.choices;
  const echo = request.kind === "completion" && request.echo;
  // Completions' top_logprobs: per token from an engine that computes alternatives, else null.
  const alternatives = ctx.model.config.engine !== "ft";
  const raw = reply.raw;
  // A request held while its model woke has its stream open already (admission/holding.ts).
  if (ctx.streamOpen) ctx.stopKeepalive();
  else {
    reply.hijack();
    openEventStream(raw, ctx.requestId, ctx.buildHeader);
  }
  const send = (data: unknown): void => sendEvent(raw, data);
  const object = chat ? "chat.completion.chunk" : "text_completion";
  // What every chunk starts with, serialized once per response instead of at every token (chunkJson.ts).
  const head = chunkHead({ id, object, created, model });
  // Characters sent per choice: completions' text_offset continues from there.
  const offsets = new Map<number, number>();
  const chunk = (
    index: number,
    text: string | null,
    finishReason: FinishReason | null,
    usage?: Usage,
    tokens?: TokenLogprob[],
  ): string => {
    const at = offsets.get(index) ?? 0;
    offsets.set(index, at + (text ?? "").length);
    const lp = logprobs && tokens ? (chat ? chatLogprobs(tokens) : completionLogprobs(tokens, at, alternatives)) : null;
    const choice = chat
      ? {
          index,
          delta: finishReason ? {} : text === null ? { role: "assistant", content: "" } : { content: text },
          logprobs: lp,
          finish_reason: finishReason,
        }
      : { index, text: text ?? "", logprobs: lp, finish_reason: finishReason };
    return chunkJson(head, choice, usage);
  };
  const sendChunk = (json: string): void => sendJsonEvent(raw, json);
  // Copies are streamed as generated (best_of, which must rank them first, is refused with stream).
  const choiceIndex = (prompt: number, row: number): number => prompt * n + row;
  for (let p = 0; p < g.prompts.length; p++) {
    for (let r = 0; r < n; r++) {
      if (chat) sendChunk(chunk(choiceIndex(p, r), null, null));
      else if (echo) sendChunk(chunk(choiceIndex(p, r), g.prompts[p], null));
    }
  }
  let remaining = g.prompts.length * n;
  try {
    await untilChoicesEnd(ctx, g, (p, event) => {
      g.record(p, event);
      const index = choiceIndex(p, event.row);
      if (event.type === "delta") sendChunk(chunk(index, event.text, null, undefined, event.tokens));
      else {
        remaining -= 1;
        // The last choice to finish carries the usage of all of them.
        sendChunk(chunk(index, null, event.finishReason, remaining === 0 ? usageOf(results) : undefined));
      }
    });
    // Before the final chunks: a client that stops reading at [DONE] may send its next request at once.
    await ctx.finished(outcomeOf(results));
    if (request.includeUsage) send({ id, object, created, model, choices: [], usage: usageOf(results) });
    if (!ctx.signal.aborted && !raw.destroyed) raw.write("data: [DONE]\n\n");
  } catch (error) {
    const apiError = error instanceof ApiError ? error : undefined;
    ctx.failedMidStream(apiError ?? error);
    send(
      apiError
        ? apiError.body()
        : { error: { message: "the stream failed", type: "server_error", param: null, code: "stream_failed" } },
    );
  } finally {
    raw.end();
  }
}
