/**
 * POST /v1/completions and /v1/chat/completions: JSON responses, or
 * Server-Sent Events as the tokens are generated. The HTTP status is decided
 * by the first event from Triton (so a prompt refused by the tokenizer is
 * still a plain 400), then every delta is flushed as it arrives and the
 * stream ends with `data: [DONE]`; the last chunk carries the token usage.
 */
import { randomUUID } from "node:crypto";
import type { FastifyReply } from "fastify";
import { ApiError } from "./errors";
import { type FinishReason, type GenerationEvent, generate } from "./generate";
import type { RequestContext } from "./context";
import type { ChatRequest, CompletionRequest } from "./validate";

interface ChoiceResult {
  text: string;
  finishReason: FinishReason;
  promptTokens: number;
  completionTokens: number;
}

interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

function outcomeOf(results: ChoiceResult[]): { promptTokens: number; completionTokens: number } {
  return {
    promptTokens: results.reduce((n, r) => n + r.promptTokens, 0),
    completionTokens: results.reduce((n, r) => n + r.completionTokens, 0),
  };
}

function usageOf(results: ChoiceResult[]): Usage {
  const prompt = results.reduce((n, r) => n + r.promptTokens, 0);
  const completion = results.reduce((n, r) => n + r.completionTokens, 0);
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}

/** One request's generations (one per prompt) and what they have produced so far. */
interface Generation {
  chat: boolean;
  id: string;
  created: number;
  model: string;
  generators: AsyncGenerator<GenerationEvent>[];
  results: ChoiceResult[];
  /** The first event of each generator, already taken (it decided the status). */
  firsts: IteratorResult<GenerationEvent>[];
  /** Fold one event of choice `index` into its result. */
  record(index: number, event: GenerationEvent): void;
}

export async function serveGeneration(
  ctx: RequestContext,
  reply: FastifyReply,
  request: CompletionRequest | ChatRequest,
): Promise<void> {
  const generation = await start(ctx, request);
  if (!request.stream) return sendJson(ctx, reply, generation);
  return streamEvents(ctx, reply, generation, request.includeUsage);
}

/** Start every prompt's generation and wait for each one's first event: errors before it are plain HTTP errors. */
async function start(ctx: RequestContext, request: CompletionRequest | ChatRequest): Promise<Generation> {
  const chat = request.kind === "chat";
  const prompts = chat ? [request.prompt] : request.prompts;
  const id = `${chat ? "chatcmpl" : "cmpl"}-${randomUUID().replace(/-/g, "")}`;
  const created = Math.floor(Date.now() / 1000);
  const generators = prompts.map((prompt) =>
    generate(ctx.triton, prompt, request.sampling, {
      signal: ctx.signal,
      deadline: ctx.deadline,
      timeoutSeconds: ctx.config.limits.requestTimeoutSeconds,
      trimStart: chat,
      onStopCancel: () => ctx.metrics.upstreamCancelled.inc({ reason: "stop_sequence" }),
    }),
  );
  const results: ChoiceResult[] = prompts.map(() => ({
    text: "",
    finishReason: "stop",
    promptTokens: 0,
    completionTokens: 0,
  }));
  let firstTokenSeen = false;
  const record = (index: number, event: GenerationEvent): void => {
    if (event.type === "delta") {
      if (!firstTokenSeen) {
        firstTokenSeen = true;
        ctx.firstToken();
      }
      results[index].text += event.text;
    } else {
      results[index].finishReason = event.finishReason;
      results[index].promptTokens = event.promptTokens;
      results[index].completionTokens = event.completionTokens;
    }
  };
  const settled = await Promise.allSettled(generators.map((g) => g.next()));
  const failed = settled.find((f) => f.status === "rejected");
  if (failed) {
    await Promise.allSettled(generators.map((g) => g.return(undefined)));
    throw (failed as PromiseRejectedResult).reason;
  }
  return {
    chat,
    id,
    created,
    model: ctx.config.model.id,
    generators,
    results,
    firsts: settled.map((f) => (f as PromiseFulfilledResult<IteratorResult<GenerationEvent>>).value),
    record,
  };
}

/** Feed every event of choice `index`, the one already taken first, to `handle`. */
async function drain(g: Generation, index: number, handle: (event: GenerationEvent) => void): Promise<void> {
  const first = g.firsts[index];
  if (!first.done) handle(first.value);
  for await (const event of g.generators[index]) handle(event);
}

async function sendJson(ctx: RequestContext, reply: FastifyReply, g: Generation): Promise<void> {
  await Promise.all(g.generators.map((_, index) => drain(g, index, (event) => g.record(index, event))));
  ctx.finished(outcomeOf(g.results));
  const usage = usageOf(g.results);
  const { id, created, model } = g;
  if (g.chat) {
    return reply.send({
      id,
      object: "chat.completion",
      created,
      model,
      choices: g.results.map((r, index) => ({
        index,
        message: { role: "assistant", content: r.text },
        logprobs: null,
        finish_reason: r.finishReason,
      })),
      usage,
    });
  }
  return reply.send({
    id,
    object: "text_completion",
    created,
    model,
    choices: g.results.map((r, index) => ({ index, text: r.text, logprobs: null, finish_reason: r.finishReason })),
    usage,
  });
}

/** Server-Sent Events: every delta flushed as it arrives, then `data: [DONE]` (or an error event). */
async function streamEvents(
  ctx: RequestContext,
  reply: FastifyReply,
  g: Generation,
  includeUsage: boolean,
): Promise<void> {
  const { chat, id, created, model, results } = g;
  reply.hijack();
  const raw = reply.raw;
  raw.writeHead(200, {
    "content-type": "text/event-stream; charset=utf-8",
    "cache-control": "no-cache",
    connection: "keep-alive",
    "x-accel-buffering": "no",
    "x-request-id": ctx.requestId,
  });
  const send = (data: unknown): void => {
    if (!raw.writableEnded && !raw.destroyed) raw.write(`data: ${JSON.stringify(data)}\n\n`);
  };
  const object = chat ? "chat.completion.chunk" : "text_completion";
  const chunk = (index: number, text: string | null, finishReason: FinishReason | null, usage?: Usage): unknown => ({
    id,
    object,
    created,
    model,
    choices: [
      chat
        ? {
            index,
            delta: finishReason ? {} : text === null ? { role: "assistant", content: "" } : { content: text },
            logprobs: null,
            finish_reason: finishReason,
          }
        : { index, text: text ?? "", logprobs: null, finish_reason: finishReason },
    ],
    ...(usage ? { usage } : {}),
  });
  if (chat) send(chunk(0, null, null));
  let remaining = g.generators.length;
  try {
    await Promise.all(
      g.generators.map((_, index) =>
        drain(g, index, (event) => {
          g.record(index, event);
          if (event.type === "delta") send(chunk(index, event.text, null));
          else {
            remaining -= 1;
            // The last choice to finish carries the usage of all of them.
            send(chunk(index, null, event.finishReason, remaining === 0 ? usageOf(results) : undefined));
          }
        }),
      ),
    );
    if (includeUsage) send({ id, object, created, model, choices: [], usage: usageOf(results) });
    if (!ctx.signal.aborted) raw.write("data: [DONE]\n\n");
    ctx.finished(outcomeOf(results));
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
