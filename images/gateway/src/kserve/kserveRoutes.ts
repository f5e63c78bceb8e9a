/**
 * KServe v2 per served model (inferProtocol.ts has the protocol): server metadata
 * and health, and for `/v2/models/<model id>/…` that model's ensemble's
 * metadata, readiness and `infer`. A model the key may not use is the same 404
 * as one that is not served.
 */
import { gunzipSync, inflateSync } from "node:zlib";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { Consumer, GatewayConfig } from "../config";
import { ApiError, invalid, overloaded, tooLarge } from "../server/apiError";
import { type InferReply, infer, parseInferRequest, splitInferBody } from "./inferProtocol";
import type { ServedModel } from "../models/modelRouter";
import definePlugin from "fastify-plugin";
import { LIMITS_PLUGIN } from "../admission/admissionPlugin";
import { MODELS_PLUGIN } from "../models/modelsPlugin";

export interface KserveRoutesOptions {
  config: GatewayConfig;
}

type ModelParams = { Params: { model: string } };

/** A probe of one Triton; an error (unreachable, timed out) is a no. */
async function probeOk(probe: () => Promise<boolean>): Promise<boolean> {
  try {
    return await probe();
  } catch {
    return false;
  }
}

/**
 * Triton's health, as KServe answers it: 200 with no body, or 503 in KServe's
 * error shape. Over several models: yes when any of them says yes, as /readyz
 * (one model down leaves the others served); each model's own readiness is
 * `/v2/models/<model>/ready`.
 */
async function upstreamProbe(
  models: readonly ServedModel[],
  probe: (model: ServedModel) => Promise<boolean>,
  reply: FastifyReply,
): Promise<FastifyReply> {
  const answers = await Promise.all(models.map((m) => probeOk(() => probe(m))));
  const ok = answers.includes(true);
  return reply.code(ok ? 200 : 503).send(ok ? "" : { error: "the inference server is not ready" });
}

/** The infer body as bytes: JSON, or a JSON header plus binary tensors; gzip/deflate as tritonclient can send. */
function inferBody(request: FastifyRequest, bodyBytes: number): Buffer {
  const type = (request.headers["content-type"] ?? "").split(";")[0].trim().toLowerCase();
  if (type !== "" && type !== "application/json" && type !== "application/octet-stream") {
    throw new ApiError(
      415,
      "invalid_request_error",
      `send the infer body as application/json or application/octet-stream (binary tensors), not ${type}`,
      "unsupported_media_type",
    );
  }
  const body = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
  const encoding = (request.headers["content-encoding"] ?? "identity").trim().toLowerCase();
  if (encoding === "identity") return body;
  if (encoding !== "gzip" && encoding !== "deflate") {
    throw new ApiError(
      415,
      "invalid_request_error",
      `Content-Encoding ${encoding} is not supported`,
      "unsupported_media_type",
    );
  }
  try {
    const limit = { maxOutputLength: bodyBytes };
    return encoding === "gzip" ? gunzipSync(body, limit) : inflateSync(body, limit);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ERR_BUFFER_TOO_LARGE") {
      throw tooLarge(`the decompressed body is larger than the limit of ${bodyBytes} bytes`, null, "body_too_large");
    }
    throw invalid(`the ${encoding} body does not decompress: ${(error as Error).message}`, null, "invalid_body");
  }
}

export const kserveRoutes = definePlugin<KserveRoutesOptions>(
  async (app, { config }) => {
    const visible = (request: FastifyRequest): ServedModel[] => app.models.visibleTo(request.consumer as Consumer);
    app.get("/v2", async () => ({ name: "triton-ft-gateway", version: "1", extensions: ["binary_tensor_data"] }));
    app.get("/v2/health/live", async (request, reply) =>
      upstreamProbe(visible(request), (m) => m.triton.live(), reply),
    );
    app.get("/v2/health/ready", async (request, reply) =>
      upstreamProbe(visible(request), (m) => m.triton.ready(), reply),
    );

    const metadataRoute = async (request: FastifyRequest<ModelParams>): Promise<unknown> => {
      const model = app.routeModel(request, request.params.model);
      try {
        // Named as the client addresses it; the ensemble's own name stays inside.
        return { ...(await model.triton.metadata()), name: model.config.id };
      } catch (error) {
        // The gRPC message names Triton's address: logged with the request id, not sent.
        throw overloaded("the inference server did not answer", 2, "upstream_unavailable", (error as Error).message);
      }
    };
    app.get<ModelParams>("/v2/models/:model", metadataRoute);
    app.get<ModelParams>("/v2/models/:model/versions/:version", metadataRoute);

    const readyRoute = async (request: FastifyRequest<ModelParams>, reply: FastifyReply): Promise<FastifyReply> => {
      const model = app.routeModel(request, request.params.model);
      return upstreamProbe([model], (m) => m.triton.ready(), reply);
    };
    app.get<ModelParams>("/v2/models/:model/ready", readyRoute);
    app.get<ModelParams>("/v2/models/:model/versions/:version/ready", readyRoute);

    const inferRoute = async (request: FastifyRequest<ModelParams>, reply: FastifyReply): Promise<unknown> => {
      const model = app.routeModel(request, request.params.model);
      const { header, binary } = splitInferBody(
        inferBody(request, config.limits.bodyBytes),
        request.headers["inference-header-content-length"],
      );
      const parsed = parseInferRequest(header, { model: model.config, limits: config.limits }, binary);
      // Tensors are not read for the reservation: each prompt reserves the model's longest input and output.
      const batch = parsed.inputs[0].shape[0];
      const tokens = batch * (model.config.maxInputLen + model.config.maxOutputLen);
      let answer: InferReply | undefined;
      await app.admit(request, reply, "/v2/models/:model/infer", model, batch, tokens, async (ctx) => {
        // The build the request was sent to (its canary's Triton for the canary's share).
        const result = await infer({ config: model.config, triton: ctx.triton }, parsed, {
          signal: ctx.signal,
          deadline: ctx.deadline,
          timeoutSeconds: config.limits.requestTimeoutSeconds,
        });
        ctx.reachedModel();
        await ctx.finished({ promptTokens: result.promptTokens, completionTokens: result.completionTokens });
        answer = result;
      });
      const result = answer as InferReply;
      if (result.binary.length === 0) return result.json;
      const json = Buffer.from(JSON.stringify(result.json), "utf8");
      reply.header("inference-header-content-length", String(json.length));
      reply.header("content-type", "application/octet-stream");
      return reply.send(Buffer.concat([json, ...result.binary]));
    };
    // Infer bodies are bytes (JSON or the binary tensor extension): their own parser, in their own context.
    await app.register(async (inferContext) => {
      inferContext.removeAllContentTypeParsers();
      inferContext.addContentTypeParser("*", { parseAs: "buffer" }, (_request, body, done) => done(null, body));
      inferContext.post<ModelParams>("/v2/models/:model/infer", inferRoute);
      inferContext.post<ModelParams>("/v2/models/:model/versions/:version/infer", inferRoute);
    });
  },
  { name: "gateway-kserve-routes", fastify: "5.x", encapsulate: true, dependencies: [LIMITS_PLUGIN, MODELS_PLUGIN] },
);
