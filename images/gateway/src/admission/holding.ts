/**
 * Requests held for models that may sleep: one hold queue per such model on
 * this pod (holdQueue.ts), released first in first out when its readiness
 * watch (models/readinessWatch.ts) sees its Triton ready, and the HTTP side
 * of a held request: a stream gets its 200 and an SSE comment at once, then
 * one every keepaliveSeconds, so neither the client nor the load balancer
 * drops an idle connection (half a second early: never a longer gap); a
 * client that leaves frees its place at once.
 * A request to a model without `wake`, or to an awake one, is never held.
 */
import type { FastifyReply, FastifyRequest } from "fastify";
import type { Gauge } from "prom-client";
import type { Wake } from "../config";
import type { ServedModel } from "../models/modelRouter";
import { type ModelStatus, statusOf } from "../models/readinessWatch";
import { type ApiError, holdQueueFull, modelUnavailable, shuttingDown } from "../server/apiError";
import { openEventStream, sendComment, writable } from "../server/sse";
import { type Hold, type HoldEnd, HoldQueue } from "./holdQueue";

/**
 * Retry-After of the 503 model_unavailable. Soon: the wake goes on after the
 * 503 (the model's scaler stays active for its idle window), and a retry is
 * held again rather than refused.
 */
export const UNAVAILABLE_RETRY_AFTER_SECONDS = 5;

/** The SSE comment a held stream receives. */
export const KEEPALIVE_COMMENT = "keepalive";

/**
 * Keepalives go this much before keepaliveSeconds is up: a timer fires late on a
 * busy event loop (the wake test measured 10.01 s between comments at exactly 10 s),
 * and the client must never see a gap longer than keepaliveSeconds.
 */
export const KEEPALIVE_EARLY_MS = 500;

/** Milliseconds between two keepalive comments: never a gap longer than `keepaliveSeconds` on the client. */
export function keepaliveIntervalMs(keepaliveSeconds: number): number {
  return keepaliveSeconds * 1000 - KEEPALIVE_EARLY_MS;
}

export class Holding {
  private readonly queues = new Map<string, HoldQueue>();

  constructor(models: readonly ServedModel[], gauge: Gauge<"model">) {
    for (const model of models) {
      const { readiness, config } = model;
      const id = config.id;
      // A series per model from start-up (0 for one that never sleeps): a query on it is never empty
      // while the scrape works, so an empty result means a broken scrape, not a sleeping model.
      gauge.set({ model: id }, 0);
      if (!readiness || !config.wake) continue;
      const queue = new HoldQueue({
        depth: config.wake.queueDepth,
        timeoutMs: config.wake.activationTimeoutSeconds * 1000,
        onSize: (size) => gauge.set({ model: id }, size),
      });
      readiness.onChange((seen) => {
        if (seen === "ready") queue.releaseAll();
      });
      this.queues.set(id, queue);
    }
  }

  /**
   * A place in `model`'s hold queue when its Triton is not ready; undefined
   * when the request goes on at once (no `wake`, or awake: one property read).
   * Throws the 429 when the queue is full.
   */
  enter(model: ServedModel): Hold | undefined {
    if (model.readiness === undefined || model.readiness.ready) return undefined;
    const queue = this.queues.get(model.config.id);
    if (!queue) return undefined;
    const hold = queue.enter();
    if (!hold) throw holdQueueFull(model.config.id, queue.size, queue.retryAfterSeconds());
    return hold;
  }

  /** What /v1/models says of `model`: always `ready` for a model that never sleeps. */
  status(model: ServedModel): ModelStatus {
    if (!model.readiness) return "ready";
    return statusOf(model.readiness.seen, this.queues.get(model.config.id)?.size ?? 0);
  }

  /** The pod is shutting down: every held request ends now, to be retried on another pod. */
  closeAll(): void {
    for (const queue of this.queues.values()) queue.closeAll();
  }
}

/** How a held request's wait ended, and the stop of its keepalives (a no-op for a request that is no stream). */
export interface HeldOutcome {
  end: HoldEnd;
  /**
   * A released stream keeps its keepalives until its first event (Triton may take a while to answer
   * a queue drained at once): whoever writes that event, or ends the stream, calls this first.
   */
  stopKeepalive: () => void;
}

/**
 * Wait out `hold` for one request: a stream is opened at once (status 200,
 * an SSE comment) and gets a comment every `wake.keepaliveSeconds`; a client
 * that leaves ends the wait ("gone") and frees its place. The stream, if
 * opened, stays open for the generation or the error.
 */
export async function waitHeld(
  hold: Hold,
  request: FastifyRequest,
  reply: FastifyReply,
  wake: Wake,
  stream: boolean,
): Promise<HeldOutcome> {
  const raw = reply.raw;
  const onClose = (): void => {
    if (!raw.writableFinished) hold.leave();
  };
  raw.once("close", onClose);
  // Gone while admission was taking its permits: the close event has passed already.
  if (raw.destroyed || request.raw.socket?.destroyed) hold.leave();
  let keepalive: NodeJS.Timeout | undefined;
  const stopKeepalive = (): void => clearInterval(keepalive);
  if (stream) {
    reply.hijack();
    openEventStream(raw, request.id);
    sendComment(raw, KEEPALIVE_COMMENT);
    keepalive = setInterval(() => sendComment(raw, KEEPALIVE_COMMENT), keepaliveIntervalMs(wake.keepaliveSeconds));
  }
  try {
    const end = await hold.end;
    if (end !== "released") stopKeepalive();
    return { end, stopKeepalive };
  } finally {
    raw.off("close", onClose);
  }
}

/**
 * Answer a held request whose wait ended without its model: nothing for a
 * client gone; else the 503, model_unavailable after the activation timeout
 * or server_shutting_down while the pod drains. A plain request's is thrown
 * (the error handler sends it, with Retry-After); a held stream has sent its
 * 200, so the 503 is its last event, counted by `countError` (the telemetry
 * sees a 200).
 */
export function answerUnreleased(
  end: Exclude<HoldEnd, "released">,
  reply: FastifyReply,
  modelId: string,
  wake: Wake,
  streamOpen: boolean,
  countError: (error: ApiError) => void,
): void {
  if (end === "gone") {
    if (streamOpen) reply.raw.end();
    else reply.hijack();
    return;
  }
  const error =
    end === "closing"
      ? shuttingDown()
      : modelUnavailable(modelId, wake.activationTimeoutSeconds, UNAVAILABLE_RETRY_AFTER_SECONDS);
  if (!streamOpen) throw error;
  countError(error);
  endStreamWithError(reply, error);
}

/**
 * The last event of a stream opened while held: the error in OpenAI's shape,
 * with SSE's own `retry:` field carrying the Retry-After (headers are gone).
 */
export function endStreamWithError(reply: FastifyReply, error: ApiError): void {
  const raw = reply.raw;
  if (writable(raw)) {
    const retry = error.retryAfter === undefined ? "" : `retry: ${error.retryAfter * 1000}\n`;
    raw.write(`${retry}data: ${JSON.stringify(error.body())}\n\n`);
  }
  raw.end();
}
