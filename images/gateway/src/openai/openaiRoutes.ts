/** The OpenAI API: completions, chat completions and the model list, routed by the `model` field. */
import type { Consumer, GatewayConfig } from "../config";
import type { ServedModel } from "../models/modelRouter";
import type { ModelStatus } from "../models/readinessWatch";
import { type PreparedGeneration, prepareGeneration, serveGeneration } from "./serveGeneration";
import definePlugin from "fastify-plugin";
import { LIMITS_PLUGIN, reserveTokens } from "../admission/admissionPlugin";
import { MODELS_PLUGIN } from "../models/modelsPlugin";
import { parseChat, parseCompletion, requestedModel } from "./validate";

export interface OpenaiRoutesOptions {
  config: GatewayConfig;
}

/**
 * A model's card: OpenAI's four fields, then the limits a client needs to size
 * its requests (OpenAI's list carries none; extra fields are ignored by its clients),
 * and its `status`: `ready`, or for a model that may sleep `sleeping` / `waking`;
 * a model with a canary also has `canary` (its id, weight, state on this pod and
 * the rollback's reason).
 */
export function modelCard({ config: m, canary }: ServedModel, status: ModelStatus): Record<string, unknown> {
  return {
    id: m.id,
    object: "model",
    created: m.created,
    owned_by: "triton-ft",
    status,
    max_input_tokens: m.maxInputLen,
    max_output_tokens: m.maxOutputLen,
    max_prompt_bytes: m.maxPromptBytes,
    max_batch_size: m.maxBatchSize,
    max_choice_tokens: m.maxChoiceTokens ?? m.maxOutputLen * m.maxBatchSize,
    vocab_size: m.vocab,
    chat: m.chatTemplate !== undefined,
    ...(canary ? { canary: canary.card() } : {}),
  };
}

export const openaiRoutes = definePlugin<OpenaiRoutesOptions>(
  async (app, { config }) => {
    app.post("/v1/completions", async (request, reply) => {
      const model = app.routeModel(request, requestedModel(request.body, "completion"));
      const parsed = parseCompletion(request.body, { model: model.config, limits: config.limits });
      const tokens = reserveTokens(
        parsed.prompts,
        parsed.sampling.maxTokens,
        parsed.choices.bestOf,
        model.config.maxInputLen,
      );
      let prepared: PreparedGeneration | undefined;
      await app.admit(
        request,
        reply,
        "/v1/completions",
        model,
        parsed.prompts.length,
        tokens,
        (ctx) => serveGeneration(ctx, reply, parsed, prepared),
        parsed.stream,
        (triton) => (prepared = prepareGeneration(triton, parsed)),
      );
      return reply;
    });

    app.post("/v1/chat/completions", async (request, reply) => {
      const model = app.routeModel(request, requestedModel(request.body, "chat"));
      const parsed = parseChat(request.body, { model: model.config, limits: config.limits });
      const tokens = reserveTokens(
        [parsed.prompt],
        parsed.sampling.maxTokens,
        parsed.choices.bestOf,
        model.config.maxInputLen,
      );
      let prepared: PreparedGeneration | undefined;
      await app.admit(
        request,
        reply,
        "/v1/chat/completions",
        model,
        1,
        tokens,
        (ctx) => serveGeneration(ctx, reply, parsed, prepared),
        parsed.stream,
        (triton) => (prepared = prepareGeneration(triton, parsed)),
      );
      return reply;
    });

    // Only the models this key may use: a scoped key learns nothing of the others.
    app.get("/v1/models", async (request) => ({
      object: "list",
      data: app.models.visibleTo(request.consumer as Consumer).map((m) => modelCard(m, app.holding.status(m))),
    }));
    app.get<{ Params: { model: string } }>("/v1/models/:model", async (request) => {
      const model = app.routeModel(request, request.params.model);
      return modelCard(model, app.holding.status(model));
    });
  },
  // Its own context (routes stay private); the metadata makes a missing plugin fail at boot.
  { name: "gateway-openai-routes", fastify: "5.x", encapsulate: true, dependencies: [LIMITS_PLUGIN, MODELS_PLUGIN] },
);
