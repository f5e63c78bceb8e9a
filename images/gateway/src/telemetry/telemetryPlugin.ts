/**
 * Per-request bookkeeping: a request id on every answer, then, once the
 * answer is out, the request counter, the latency histogram, the errors
 * counter (labelled with the code the errors plugin recorded) and one log
 * line with the consumer and the model, and never a body. Probes are counted but neither
 * timed nor logged: they would drown the rest.
 */
import type { GatewayMetrics } from "./metrics";
import { ANONYMOUS } from "./metrics";
import { PUBLIC_PATHS } from "../server/paths";
import definePlugin from "fastify-plugin";
import { ERRORS_PLUGIN } from "../server/errorHandler";

declare module "fastify" {
  interface FastifyRequest {
    /** performance.now() when the request arrived. */
    startedAt: number;
  }
}

export const TELEMETRY_PLUGIN = "gateway-telemetry";

export interface TelemetryOptions {
  metrics: GatewayMetrics;
}

/**
 * Shared with the parent (skip-override): its hooks must run for every route
 * and for unmatched paths, and its onRequest hook first, so even a refused
 * request carries its id.
 */
export const telemetry = definePlugin<TelemetryOptions>(
  async (app, { metrics }) => {
    app.decorateRequest("startedAt", 0);
    // Every onRequest hook of the gateway is synchronous (done-style): an async hook costs a promise and a
    // microtask turn on every request's path, before its first byte reaches Triton (issue 33, item 7).
    app.addHook("onRequest", (request, reply, done) => {
      request.startedAt = performance.now();
      reply.header("x-request-id", request.id);
      done();
    });
    app.addHook("onResponse", async (request, reply) => {
      const route = request.routeOptions.url ?? "unmatched";
      // Set by the auth and models plugins, registered after this one: their hooks and routes run after ours.
      const consumer = request.consumer?.name ?? ANONYMOUS;
      const model = request.servedModel?.config.id;
      // A routed request carries its build: `stable` until (or unless) admission sent it to a canary.
      const labels = { consumer, ...(model === undefined ? {} : { model, build: request.servedBuild ?? "stable" }) };
      const status = reply.statusCode;
      const seconds = (performance.now() - request.startedAt) / 1000;
      metrics.requests.inc({ route, status: String(status), ...labels });
      if (!PUBLIC_PATHS.has(route)) metrics.requestDuration.observe({ route, ...labels }, seconds);
      if (status >= 400) metrics.errors.inc({ status: String(status), code: reply.errorCode ?? "error", ...labels });
      if (!PUBLIC_PATHS.has(route)) {
        request.log.info(
          { route, method: request.method, status, ...labels, ms: Math.round(seconds * 1000) },
          "request",
        );
      }
    });
  },
  { name: TELEMETRY_PLUGIN, fastify: "5.x", dependencies: [ERRORS_PLUGIN], decorators: { reply: ["errorCode"] } },
);
