/** The OpenAI API: completions, chat completions and the model list. */
import type { GatewayConfig } from "../config";
import { notFound } from "../errors";
import { serveGeneration } from "../openai";
import definePlugin from "fastify-plugin";
import { LIMITS_PLUGIN, reserveTokens } from "../plugins/limits";
import { parseChat, parseCompletion } from "../validate";

export interface OpenaiRoutesOptions {
  config: GatewayConfig;
}

export const openaiRoutes = definePlugin<OpenaiRoutesOptions>(
  async (app, { config }) => {
    app.post("/v1/completions", async (request, reply) => {
      const parsed = parseCompletion(request.body, config);
      const tokens = reserveTokens(
        parsed.prompts,
        parsed.sampling.maxTokens,
        parsed.choices.bestOf,
        config.model.maxInputLen,
      );
      const ctx = await app.admit(request, reply, "/v1/completions", parsed.prompts.length, tokens);
      await serveGeneration(ctx, reply, parsed);
      return reply;
    });

    app.post("/v1/chat/completions", async (request, reply) => {
      const parsed = parseChat(request.body, config);
      const tokens = reserveTokens(
        [parsed.prompt],
        parsed.sampling.maxTokens,
        parsed.choices.bestOf,
        config.model.maxInputLen,
      );
      const ctx = await app.admit(request, reply, "/v1/chat/completions", 1, tokens);
      await serveGeneration(ctx, reply, parsed);
      return reply;
    });

    const modelCard = (): Record<string, unknown> => ({
      id: config.model.id,
      object: "model",
      created: config.model.created,
      owned_by: "triton-ft",
    });
    app.get("/v1/models", async () => ({ object: "list", data: [modelCard()] }));
    app.get<{ Params: { model: string } }>("/v1/models/:model", async (request) => {
      if (request.params.model !== config.model.id) {
        throw notFound(
          `the model '${request.params.model}' does not exist; this endpoint serves '${config.model.id}'`,
          "model_not_found",
          "model",
        );
      }
      return modelCard();
    });
  },
  // Its own context (routes stay private); the metadata makes a missing limits plugin fail at boot.
  { name: "gateway-openai-routes", fastify: "5.x", encapsulate: true, dependencies: [LIMITS_PLUGIN] },
);
