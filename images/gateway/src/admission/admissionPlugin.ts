/**
 * Admission: the declared body size, checked right after authentication and
 * before a byte is parsed, and `app.admit()` for the routes that generate:
 * the team's rate, tokens and concurrency (in the shared store when there is
 * one, else on this pod), the pod's and the model's in-flight caps and fair
 * shares, the request's context, and release of all of it however the
 * response ends, with the request's usage recorded for its team and model.
 */
import type { FastifyReply, FastifyRequest } from "fastify";
import type { Consumer, GatewayConfig } from "../config";
import { RequestContext } from "./requestContext";
import { tooLarge } from "../server/apiError";
import { Admission, type KeyLimits } from "./podAdmission";
import type { GatewayMetrics } from "../telemetry/metrics";
import type { ServedModel } from "../models/modelRouter";
import { PUBLIC_PATHS, pathOf } from "../server/paths";
import type { KeyRing } from "../auth/keyRing";
import { LocalLimits, SharedLimits, type TeamLimiter } from "./sharedLimits";
import { AUTH_PLUGIN } from "../auth/authPlugin";
import { STORE_PLUGIN } from "../store/storePlugin";
import definePlugin from "fastify-plugin";

declare module "fastify" {
  interface FastifyInstance {
    /**
     * Admit one generation of the authenticated consumer for `model` taking
     * `slots` concurrency slots (one per prompt) and reserving `tokens` of its
     * tokens/minute (reserveTokens), or throw the 429/503 to send. Everything
     * is released when the response closes, the tokens settled with the real
     * usage, which is recorded for the team and `model` (the model
     * `app.routeModel()` routed the request to).
     */
    admit(
      request: FastifyRequest,
      reply: FastifyReply,
      route: string,
      model: ServedModel,
      slots: number,
      tokens: number,
    ): Promise<RequestContext>;
  }
}

export const LIMITS_PLUGIN = "gateway-limits";

/** Oversized bodies up to this size are read and dropped before the 413, so the client sees it. */
const DRAIN_LIMIT_BYTES = 64 * 1024 * 1024;

export interface LimitsOptions {
  config: GatewayConfig;
  metrics: GatewayMetrics;
  /** The teams' keys: the sum of their shares divides the in-flight cap. */
  keys: KeyRing;
}

/**
 * Tokens a generation reserves at admission, an upper bound of what it can use:
 * each prompt's UTF-8 bytes (+1), at most maxInputLen (the gateway does not
 * tokenize; preprocessing in Triton does, and a byte-level BPE token is at least
 * one byte), plus max_tokens for every choice generated (best_of). Settled
 * with the real usage Triton reports when the request ends.
 */
export function reserveTokens(
  prompts: readonly string[],
  maxTokens: number,
  copies: number,
  maxInputLen: number,
): number {
  return prompts.reduce(
    (sum, p) => sum + Math.min(maxInputLen, Buffer.byteLength(p, "utf8") + 1) + copies * maxTokens,
    0,
  );
}

/** The team's limits: its own from the keys file, the config's defaults for the rest. */
export function limitsOf(consumer: Consumer, config: GatewayConfig): KeyLimits {
  return {
    requestsPerMinute: consumer.requestsPerMinute ?? config.limits.requestsPerMinute,
    maxConcurrent: consumer.maxConcurrent ?? config.limits.maxConcurrent,
    ...(consumer.tokensPerMinute !== undefined ? { tokensPerMinute: consumer.tokensPerMinute } : {}),
    ...(consumer.share !== undefined ? { share: consumer.share } : {}),
  };
}

/** Read and drop the request body: a client still writing would otherwise see a reset instead of the answer. */
function drain(request: FastifyRequest): Promise<void> {
  return new Promise<void>((resolve) => {
    request.raw.once("end", resolve);
    request.raw.once("error", () => resolve());
    request.raw.resume();
  });
}

/** Shared with the parent (skip-override): the routes use `admit`, and the size check must run on every path. */
export const limits = definePlugin<LimitsOptions>(
  async (app, { config, metrics, keys }) => {
    const admission = new Admission(config.limits.maxInflight, () => keys.totalShare);
    const limiter: TeamLimiter = app.store ? new SharedLimits(app.store, admission) : new LocalLimits(admission);
    const usage = app.usage;

    app.decorate(
      "admit",
      async (
        request: FastifyRequest,
        reply: FastifyReply,
        route: string,
        model: ServedModel,
        slots: number,
        tokens: number,
      ) => {
        const consumer = request.consumer as Consumer;
        const admitted = await limiter.admit(consumer.name, limitsOf(consumer, config), slots, tokens, {
          id: model.config.id,
          maxInflight: model.config.maxInflight,
        });
        const modelId = model.config.id;
        const labels = { consumer: consumer.name, model: modelId };
        metrics.inflight.inc(labels, slots);
        const ctx = new RequestContext(request.id, route, consumer, config, model, metrics, request.log);
        // Released when the generation completes, before the response's last bytes (the store's release is
        // a round trip: a client that sends its next request at once must find its slot free); the close
        // below releases what ended otherwise (release is idempotent).
        ctx.onFinished((o) => admitted.release(o.promptTokens + o.completionTokens));
        reply.raw.once("close", () => {
          if (!reply.raw.writableFinished) ctx.clientGone();
          ctx.close();
          const outcome = ctx.outcome;
          // Without an outcome (a failure before the end) the reservation stands: Triton may have generated it all.
          admitted.release(outcome ? outcome.promptTokens + outcome.completionTokens : undefined);
          usage.record(consumer.name, modelId, outcome?.promptTokens ?? 0, outcome?.completionTokens ?? 0);
          metrics.inflight.dec(labels, slots);
        });
        return ctx;
      },
    );

    // Refuse an oversized body by its Content-Length before reading it, but read (and drop) it first
    // when it is not absurd. Runs after the auth hook: a stranger gets the 401, not the 413.
    app.addHook("onRequest", async (request, reply) => {
      if (PUBLIC_PATHS.has(pathOf(request.url))) return;
      const length = Number(request.headers["content-length"] ?? 0);
      if (length <= config.limits.bodyBytes) return;
      if (length <= DRAIN_LIMIT_BYTES) await drain(request);
      reply.header("connection", "close");
      throw tooLarge(
        `the request body is ${length} bytes; the limit is ${config.limits.bodyBytes}`,
        null,
        "body_too_large",
      );
    });
  },
  {
    name: LIMITS_PLUGIN,
    fastify: "5.x",
    dependencies: [AUTH_PLUGIN, STORE_PLUGIN],
    decorators: { request: ["consumer"], fastify: ["store", "usage"] },
  },
);
