/**
 * The gateway's HTTP server (Fastify), composed of plugins in the order
 * Fastify's guides recommend (Getting Started, "Loading order of your
 * plugins"): plugins, then decorators, then hooks, then services. The source
 * is laid out by concern, one folder each, holding its plugin or routes and
 * their logic; the plugins declare their decorators before their hooks and
 * share both with the root, the routes come last, each in its own context.
 *
 *   server/     error and not-found handlers (OpenAI or KServe bodies), drain
 *               (once closing, 503 server_shutting_down), the probes
 *   telemetry/  request id, metrics per consumer, one JSON log line per request
 *               (never the prompt or the completion)
 *   auth/       API keys on every path but the probes
 *   store/      the shared store's link and heartbeats
 *   usage/      the usage ledger and GET /v1/usage
 *   models/     `app.routeModel()`: the model a request names, among those its key may use
 *   canary/     a model's canary build: the weighted split, the rollback rule, the shared decision
 *   admission/  body size by Content-Length; `app.admit()` for generations
 *   openai/     the OpenAI routes and generation
 *   kserve/     the KServe v2 routes
 *   triton/     the gRPC client to Triton
 */
import { randomUUID } from "node:crypto";
import Fastify, { LogController, type FastifyInstance } from "fastify";
import type { KeyRing } from "./auth/keyRing";
import type { GatewayConfig } from "./config";
import { GatewayMetrics } from "./telemetry/metrics";
import { auth } from "./auth/authPlugin";
import { drain } from "./server/drain";
import { errors } from "./server/errorHandler";
import { limits } from "./admission/admissionPlugin";
import { models } from "./models/modelsPlugin";
import { canary } from "./canary/canaryPlugin";
import { store } from "./store/storePlugin";
import { telemetry } from "./telemetry/telemetryPlugin";
import { strictJsonBodies } from "./server/jsonBody";
import { ModelRouter } from "./models/modelRouter";
import { kserveRoutes } from "./kserve/kserveRoutes";
import { openaiRoutes } from "./openai/openaiRoutes";
import { probeRoutes } from "./server/probeRoutes";
import { usageRoutes } from "./usage/usageRoutes";
import type { StoreClient } from "./store/connection";
import type { TritonClient } from "./triton/tritonClient";

export interface GatewayDeps {
  config: GatewayConfig;
  keys: KeyRing;
  /** One Triton client per served model, by model id (each model has its own Triton). */
  tritons: ReadonlyMap<string, TritonClient>;
  /** One more per model with a canary, by model id: its canary build's Triton. */
  canaryTritons?: ReadonlyMap<string, TritonClient>;
  metrics?: GatewayMetrics;
  /** The shared store's client (main.ts connects it when the config has a `store`); absent: per-pod limits and usage. */
  storeClient?: StoreClient;
  /** Fastify logger options; false silences it (unit tests), a stream captures it. */
  logger?: boolean | { level: string; stream?: { write(line: string): void } };
}

export function buildGateway(deps: GatewayDeps): FastifyInstance {
  const { config, keys } = deps;
  const router = new ModelRouter(config.models, deps.tritons, {
    ...(deps.canaryTritons ? { canaryTritons: deps.canaryTritons } : {}),
    sharedDecisions: config.store !== undefined && deps.storeClient !== undefined,
  });
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
  // Only JSON bodies, and only UTF-8 ones: anything else is a 415 or a 400, not a string to misread.
  app.removeContentTypeParser(["text/plain"]);
  strictJsonBodies(app);

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
  void app.register(canary, { metrics });
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
