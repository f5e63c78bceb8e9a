/**
 * Admission: the declared body size, checked right after authentication and
 * before a byte is parsed, and `app.admit()` for the routes that generate:
 * the team's rate, tokens and concurrency (in the shared store when there is
 * one, else on this pod), the pod's and the model's in-flight caps and fair
 * shares, the request's context, and release of all of it when the
 * generation has ended upstream (not when the client leaves: a model that
 * cannot cancel keeps generating), with the request's usage recorded for its
 * team and model when it reached the model.
 */
import type { FastifyReply, FastifyRequest } from "fastify";
import type { Consumer, GatewayConfig } from "../config";
import { RequestContext } from "./requestContext";
import { ApiError, tooLarge, upstream } from "../server/apiError";
import { Holding, answerUnreleased, endStreamWithError, waitHeld } from "./holding";
import { Admission, type KeyLimits } from "./podAdmission";
import type { GatewayMetrics } from "../telemetry/metrics";
import type { ServedModel } from "../models/modelRouter";
import type { TritonClient } from "../triton/tritonClient";
import { PUBLIC_PATHS, pathOf } from "../server/paths";
import type { KeyRing } from "../auth/keyRing";
import { LocalLimits, SharedLimits, type TeamLimiter } from "./sharedLimits";
import { RedisAdmissionStore } from "./storeScripts";
import { AUTH_PLUGIN } from "../auth/authPlugin";
import { STORE_PLUGIN } from "../store/storePlugin";
import { MODELS_PLUGIN } from "../models/modelsPlugin";
import { CANARY_PLUGIN } from "../canary/canaryPlugin";
import type { Build } from "../canary/weightedSplit";
import { BUILD_HEADER } from "../canary/canaryRoute";
import definePlugin from "fastify-plugin";

declare module "fastify" {
  interface FastifyInstance {
    /**
     * Admit one generation of the authenticated consumer for `model` taking
     * `slots` concurrency slots (one per prompt) and reserving `tokens` of its
     * tokens/minute (reserveTokens), or throw the 429/503 to send; then run
     * `serve` with the request's context. Everything is released when `serve`
     * is done, that is when the generation has ended upstream, the tokens
     * settled with the real usage, which is recorded for the team and `model`
     * (the model `app.routeModel()` routed the request to).
     *
     * A model that may sleep and has no ready Triton holds the request first
     * (holding.ts): it takes a place in the model's queue (else 429), then
     * its permits, as an admitted request; a `stream` gets its event stream
     * and keepalives at once. It goes on when the model is ready, or gets the
     * 503 model_unavailable after the activation timeout; a client that
     * leaves gives everything back at once (nothing reached Triton).
     *
     * A model with a canary sends the request to the build its split picks
     * (canary/weightedSplit.ts), against that build's own in-flight cap, and
     * the request stays there to its end; its outcome feeds the canary's rule.
     *
     * `prepare` runs while the team's limits are decided (with a shared store, during its round trip),
     * given the Triton the request will be sent to: CPU work for `serve` (building and serializing its
     * Triton request) that nothing may send before the request is admitted.
     */
    admit(
      request: FastifyRequest,
      reply: FastifyReply,
      route: string,
      model: ServedModel,
      slots: number,
      tokens: number,
      serve: (ctx: RequestContext) => Promise<void>,
      stream?: boolean,
      prepare?: (triton: TritonClient) => void,
    ): Promise<void>;
    /** The hold queues of the models that may sleep (holding.ts): /v1/models reads their status. */
    holding: Holding;
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
    const store = app.store;
    const limiter: TeamLimiter = store
      ? new SharedLimits(store, new RedisAdmissionStore(store.client, store.keys), admission, store.podId)
      : new LocalLimits(admission);
    const usage = app.usage;
    const holding = new Holding(app.models.all, metrics.heldRequests);
    app.decorate("holding", holding);
    // Held requests are answered (503 server_shutting_down) so their clients retry on another pod.
    app.addHook("preClose", async () => holding.closeAll());
    app.addHook("onReady", async () => limiter.start());
    app.addHook("onClose", async () => limiter.stop());

    /**
     * One admission; `rehold`: a model that may sleep found unreachable before anything reached it
     * (its Triton scaled to zero between two polls) holds the request again, once, instead of a 503.
     */
    const admit = async (
      request: FastifyRequest,
      reply: FastifyReply,
      route: string,
      model: ServedModel,
      slots: number,
      tokens: number,
      serve: (ctx: RequestContext) => Promise<void>,
      stream: boolean,
      rehold: boolean,
      build: Build,
      prepare: ((triton: TritonClient) => void) | undefined,
    ): Promise<void> => {
      const consumer = request.consumer as Consumer;
      // Before the permits: a full queue refuses without a store round trip.
      const hold = holding.enter(model);
      let admitted;
      try {
        const decision = limiter.admit(
          consumer.name,
          limitsOf(consumer, config),
          slots,
          tokens,
          build === "canary" && model.canary
            ? { id: model.config.id, maxInflight: model.canary.config.maxInflight, build }
            : { id: model.config.id, maxInflight: model.config.maxInflight },
        );
        // The store's script is on its way: build the Triton request meanwhile. A failure here is
        // `serve`'s to report (it builds the request again), after the decision, so nothing is left held.
        try {
          prepare?.(build === "canary" && model.canary ? model.canary.triton : model.triton);
        } catch {
          // built again, and reported, by serve
        }
        admitted = await decision;
      } catch (error) {
        hold?.leave();
        throw error;
      }
      let streamOpen = false;
      let stopKeepalive = (): void => undefined;
      if (hold && model.config.wake) {
        const held = await waitHeld(hold, request, reply, model.config.wake, stream);
        if (held.end !== "released") {
          // Nothing reached Triton: every permit and the whole token reservation back at once.
          void admitted.release(0);
          answerUnreleased(held.end, reply, model.config.id, model.config.wake, stream, (error) =>
            metrics.errors.inc({
              status: String(error.status),
              code: error.code ?? "error",
              consumer: consumer.name,
              model: model.config.id,
              build,
            }),
          );
          return;
        }
        streamOpen = stream;
        stopKeepalive = held.stopKeepalive;
      }
      const modelId = model.config.id;
      const labels = { consumer: consumer.name, model: modelId, build };
      metrics.inflight.inc(labels, slots);
      const ctx = new RequestContext(request.id, route, consumer, config, model, metrics, request.log, build);
      ctx.streamOpen = streamOpen;
      ctx.stopKeepalive = stopKeepalive;
      // Released when the generation completes, before the response's last bytes (the store's release is
      // a round trip: a client that sends its next request at once must find its slot free).
      ctx.onFinished((o) => admitted.release(o.promptTokens + o.completionTokens));
      const onClose = (): void => {
        if (!reply.raw.writableFinished) ctx.clientGone();
      };
      reply.raw.once("close", onClose);
      let failure: unknown;
      let holdAgain = false;
      try {
        await serve(ctx);
      } catch (error) {
        failure = error;
        const unreachable = error instanceof ApiError && error.code === "upstream_unavailable";
        // A sleeping model's Triton gone between two polls: hold its next requests until it is back.
        if (unreachable) model.readiness?.markDown();
        holdAgain = unreachable && rehold && model.readiness !== undefined && !ctx.streamOpen && !reply.sent;
        if (!holdAgain) {
          // A held stream has sent its 200: the error is its last event (the finally still releases).
          if (!ctx.streamOpen) throw error;
          ctx.stopKeepalive();
          ctx.failedMidStream(error);
          endStreamWithError(reply, error instanceof ApiError ? error : upstream(String(error)));
        }
      } finally {
        stopKeepalive();
        // `serve` returns once the generation has ended upstream (a client gone or not), or failed.
        ctx.close();
        const outcome = ctx.outcome;
        // Refused inside Triton before the model (400/413: the prompt too long for it), or not reached at all
        // (held again): nothing was generated. Any other failure keeps the reservation: Triton may have generated it all.
        const refused = (failure instanceof ApiError && failure.status < 500) || holdAgain;
        if (failure !== undefined && !refused) ctx.serverFailure ??= failure instanceof ApiError ? failure.status : 500;
        // Every finished request of a model with a canary, either build's: the rule compares them.
        if (model.canary && !holdAgain) {
          const ttftSeconds = ctx.ttftSeconds;
          model.canary.samples.record({
            build,
            failed: ctx.serverFailure !== undefined,
            ...(ttftSeconds !== undefined ? { ttftSeconds } : {}),
          });
        }
        void admitted.release(outcome ? outcome.promptTokens + outcome.completionTokens : refused ? 0 : undefined);
        // Usage counts requests that reached the model (docs/consuming.md "Usage"), refusals not.
        if (ctx.hasReachedModel) {
          usage.record(consumer.name, modelId, outcome?.promptTokens ?? 0, outcome?.completionTokens ?? 0, build);
        }
        metrics.inflight.dec(labels, slots);
      }
      if (holdAgain) {
        reply.raw.off("close", onClose);
        request.log.info({ model: modelId }, "model's Triton gone since the last poll; request held again");
        await admit(request, reply, route, model, slots, tokens, serve, stream, false, build, prepare);
      }
    };
    app.decorate(
      "admit",
      (
        request: FastifyRequest,
        reply: FastifyReply,
        route: string,
        model: ServedModel,
        slots: number,
        tokens: number,
        serve: (ctx: RequestContext) => Promise<void>,
        stream = false,
        prepare?: (triton: TritonClient) => void,
      ) => {
        // Picked once per request: its stream, and any retry, stay on this build.
        const build = model.canary?.pick() ?? "stable";
        request.servedBuild = build;
        if (model.canary) void reply.header(BUILD_HEADER, build);
        return admit(request, reply, route, model, slots, tokens, serve, stream, true, build, prepare);
      },
    );

    // Refuse an oversized body by its Content-Length before reading it, but read (and drop) it first
    // when it is not absurd. Runs after the auth hook: a stranger gets the 401, not the 413.
    app.addHook("onRequest", (request, reply, done) => {
      const length = Number(request.headers["content-length"] ?? 0);
      if (length <= config.limits.bodyBytes || PUBLIC_PATHS.has(pathOf(request.url))) {
        done();
        return;
      }
      const refuse = (): void => {
        reply.header("connection", "close");
        done(
          tooLarge(
            `the request body is ${length} bytes; the limit is ${config.limits.bodyBytes}`,
            null,
            "body_too_large",
          ),
        );
      };
      if (length <= DRAIN_LIMIT_BYTES) void drain(request).then(refuse);
      else refuse();
    });
  },
  {
    name: LIMITS_PLUGIN,
    fastify: "5.x",
    dependencies: [AUTH_PLUGIN, STORE_PLUGIN, MODELS_PLUGIN, CANARY_PLUGIN],
    decorators: { request: ["consumer"], fastify: ["store", "usage", "models"] },
  },
);
