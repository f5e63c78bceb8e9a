/**
 * Routing by model: `app.models` (every served model with its Triton client)
 * and `app.routeModel()`, which picks the model a request names among those
 * its key may use, or throws the 404 an unknown model gets. The model picked
 * is kept on the request, for the metrics' and the log line's `model` label.
 */
import type { FastifyRequest } from "fastify";
import type { Consumer } from "../config";
import type { ModelRouter, ServedModel } from "./modelRouter";
import definePlugin from "fastify-plugin";
import { AUTH_PLUGIN } from "../auth/authPlugin";

declare module "fastify" {
  interface FastifyInstance {
    models: ModelRouter;
    /** The model `requested` names, if the request's consumer may use it; else the 404 model_not_found. */
    routeModel(request: FastifyRequest, requested: string): ServedModel;
  }
  interface FastifyRequest {
    /** The model the request was routed to; undefined before routing and on routes that serve no one model. */
    servedModel: ServedModel | undefined;
  }
}

export const MODELS_PLUGIN = "gateway-models";

export interface ModelsOptions {
  router: ModelRouter;
}

/** Shared with the parent (skip-override): every route context uses the router and the telemetry reads the label. */
export const models = definePlugin<ModelsOptions>(
  async (app, { router }) => {
    app.decorate("models", router);
    // The sleepers' watches poll from start-up: the first request to an awake model finds it ready.
    app.addHook("onReady", async () => {
      for (const m of router.sleepers) {
        m.readiness.onChange((seen, before) =>
          app.log.info({ model: m.config.id, seen, before }, "sleeping model's Triton changed"),
        );
        m.readiness.start();
      }
    });
    app.addHook("onClose", async () => {
      for (const m of router.sleepers) m.readiness.stop();
    });
    app.decorateRequest("servedModel", undefined);
    app.decorate("routeModel", (request: FastifyRequest, requested: string) => {
      // Every route that routes is behind the auth hook: a request here has a consumer.
      const model = router.route(requested, request.consumer as Consumer);
      request.servedModel = model;
      return model;
    });
  },
  { name: MODELS_PLUGIN, fastify: "5.x", dependencies: [AUTH_PLUGIN], decorators: { request: ["consumer"] } },
);
