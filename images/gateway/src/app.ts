/**
 * The gateway's HTTP server (Fastify), composed of plugins in the order
 * Fastify's guides recommend (Getting Started, "Loading order of your
 * plugins"): plugins, then decorators, then hooks, then services. Our plugins
 * (plugins/) each declare their decorators before their hooks and share both
 * with the root; the routes (routes/) come last, each in its own context.
 *
 *   errors     error and not-found handlers: OpenAI or KServe bodies
 *   telemetry  request id, metrics per consumer, one JSON log line per request
 *              (never the prompt or the completion)
 *   drain      once closing (SIGTERM), new requests get 503 server_shutting_down
 *   auth       API keys on every path but the probes
 *   store      the shared store's link and heartbeats, and the usage ledger
 *   models     `app.routeModel()`: the model a request names, among those its key may use
 *   limits     body size by Content-Length; `app.admit()` for generations
 */
import { randomUUID } from "node:crypto";
import Fastify, { LogController, type FastifyInstance } from "fastify";
import type { KeyRing } from "./auth";
import type { GatewayConfig } from "./config";
import { GatewayMetrics } from "./metrics";
import { auth } from "./plugins/auth";
import { drain } from "./plugins/drain";
import { errors } from "./plugins/errors";
import { limits } from "./plugins/limits";
import { models } from "./plugins/models";
import { store } from "./plugins/store";
import { telemetry } from "./plugins/telemetry";
import { ModelRouter } from "./models";
import { kserveRoutes } from "./routes/kserve";
import { openaiRoutes } from "./routes/openai";
import { probeRoutes } from "./routes/probes";
import { usageRoutes } from "./routes/usage";
import type { StoreClient } from "./store/connection";
import type { TritonClient } from "./triton";

export interface GatewayDeps {
  config: GatewayConfig;
  keys: KeyRing;
  /** One Triton client per served model, by model id (each model has its own Triton). */
  tritons: ReadonlyMap<string, TritonClient>;
  metrics?: GatewayMetrics;
  /** The shared store's client (main.ts connects it when the config has a `store`); absent: per-pod limits and usage. */
  storeClient?: StoreClient;
  /** Fastify logger options; false silences it (unit tests), a stream captures it. */
  logger?: boolean | { level: string; stream?: { write(line: string): void } };
}

export function buildGateway(deps: GatewayDeps): FastifyInstance {
  const { config, keys } = deps;
  const router = new ModelRouter(config.models, deps.tritons);
  const metrics = deps.metrics ?? new GatewayMetrics();
  const app = Fastify({
    bodyLimit: config.limits.bodyBytes,
    logger: deps.logger ?? { level: "info" },
    // One line per request comes from the telemetry plugin, with the consumer and no bodies.
    logController: new LogController({ disableRequestLogging: true }),
    genReqId: () => randomUUID(),
    // The drain plugin answers requests that arrive while closing, in the OpenAI shape with Retry-After.
    return503OnClosing: false,
  });
  // Only JSON bodies: anything else is a 415, not a string to misread.
  app.removeContentTypeParser(["text/plain"]);

  // Hooks run in registration order: telemetry's onRequest (request id) before drain's and auth's, auth's before limits'.
  void app.register(errors);
  void app.register(telemetry, { metrics });
  void app.register(drain);
  void app.register(auth, { keys });
  void app.register(store, {
    metrics,
    ...(config.store && deps.storeClient ? { connection: { client: deps.storeClient, config: config.store } } : {}),
  });
  void app.register(models, { router });
  void app.register(limits, { config, metrics, keys });

  void app.register(openaiRoutes, { config });
  void app.register(kserveRoutes, { config });
  void app.register(usageRoutes);
  void app.register(probeRoutes);
  return app;
}

/** Prometheus metrics on their own listener, never behind the load balancer. */
export function buildMetricsServer(metrics: GatewayMetrics): FastifyInstance {
  const app = Fastify({ logger: false });
  app.get("/metrics", async (_request, reply) => {
    reply.header("content-type", metrics.registry.contentType);
    return metrics.registry.metrics();
  });
  return app;
}
