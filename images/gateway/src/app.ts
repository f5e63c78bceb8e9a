/**
 * The gateway's HTTP server (Fastify): authentication on every route but the
 * probes, admission control, the OpenAI and KServe v2 routes, OpenAI error
 * bodies for every refusal, metrics per consumer and one JSON log line per
 * request (never the prompt or the completion unless `logText` is on).
 */
import { randomUUID } from "node:crypto";
import { gunzipSync, inflateSync } from "node:zlib";
import Fastify, {
  LogController,
  type FastifyError,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
} from "fastify";
import { KeyRing } from "./auth";
import type { Consumer, GatewayConfig } from "./config";
import { RequestContext } from "./context";
import { ApiError, invalid, notFound, overloaded, tooLarge, unauthorized } from "./errors";
import { checkEnsemble, infer, parseInferRequest, splitInferBody } from "./kserve";
import { Admission } from "./limits";
import { ANONYMOUS, GatewayMetrics } from "./metrics";
import { serveGeneration } from "./openai";
import type { TritonGateway } from "./triton";
import { parseChat, parseCompletion } from "./validate";

export interface GatewayDeps {
  config: GatewayConfig;
  keys: KeyRing;
  triton: TritonGateway;
  metrics?: GatewayMetrics;
  /** Fastify logger options; false silences it (unit tests). */
  logger?: boolean | { level: string };
}

declare module "fastify" {
  interface FastifyRequest {
    consumer: Consumer | undefined;
    startedAt: number;
  }
}

/** Oversized bodies up to this size are read and dropped before the 413, so the client sees it. */
const DRAIN_LIMIT_BYTES = 64 * 1024 * 1024;

/** Probes answer without a key: the load balancer and the kubelet have none. */
export const PUBLIC_PATHS = new Set(["/healthz", "/readyz"]);

function isKserve(url: string): boolean {
  return url === "/v2" || url.startsWith("/v2/") || url.startsWith("/v2?");
}

function toApiError(error: FastifyError | ApiError | Error): ApiError {
  if (error instanceof ApiError) return error;
  const fe = error as FastifyError;
  switch (fe.code) {
    case "FST_ERR_CTP_BODY_TOO_LARGE":
      return new ApiError(413, "invalid_request_error", "the request body is larger than the limit", "body_too_large");
    case "FST_ERR_CTP_INVALID_MEDIA_TYPE":
      return new ApiError(415, "invalid_request_error", "send the body as application/json", "unsupported_media_type");
    case "FST_ERR_CTP_EMPTY_JSON_BODY":
      return invalid("the request body is empty", null, "invalid_body");
    case "FST_ERR_CTP_INVALID_CONTENT_LENGTH":
      return invalid("the Content-Length header does not match the body", null, "invalid_body");
  }
  if (error instanceof SyntaxError || fe.code === "FST_ERR_CTP_INVALID_JSON_BODY") {
    return invalid(`the request body is not valid JSON: ${error.message}`, null, "invalid_json");
  }
  const status = fe.statusCode ?? 500;
  if (status >= 400 && status < 500) return new ApiError(status, "invalid_request_error", error.message, "bad_request");
  return new ApiError(500, "server_error", "internal error in the gateway", "internal_error");
}

export function buildGateway(deps: GatewayDeps): FastifyInstance {
  const { config, keys, triton } = deps;
  const metrics = deps.metrics ?? new GatewayMetrics();
  const admission = new Admission(config.limits.maxInflight);
  const app = Fastify({
    bodyLimit: config.limits.bodyBytes,
    logger: deps.logger ?? { level: "info" },
    // One line per request comes from the onResponse hook below, with the consumer and no bodies.
    logController: new LogController({ disableRequestLogging: true }),
    genReqId: () => randomUUID(),
    return503OnClosing: true,
  });
  // Only JSON bodies: anything else is a 415, not a string to misread.
  app.removeContentTypeParser(["text/plain"]);
  app.decorateRequest("consumer", undefined);
  app.decorateRequest("startedAt", 0);

  const send = (request: FastifyRequest, reply: FastifyReply, error: ApiError): FastifyReply => {
    if (error.retryAfter !== undefined) reply.header("retry-after", String(error.retryAfter));
    if (error.status >= 500) request.log.warn({ code: error.code, message: error.message }, "request failed");
    reply.code(error.status);
    return reply.send(isKserve(request.url) ? { error: error.message } : error.body());
  };

  app.addHook("onRequest", async (request, reply) => {
    request.startedAt = performance.now();
    reply.header("x-request-id", request.id);
    const path = request.url.split("?")[0];
    if (PUBLIC_PATHS.has(path)) return;
    const consumer = keys.authenticate(request.headers.authorization);
    if (!consumer) {
      throw unauthorized(
        request.headers.authorization === undefined
          ? "missing API key: send 'Authorization: Bearer <key>'"
          : "invalid API key",
      );
    }
    request.consumer = consumer;
    // Refuse an oversized body by its Content-Length before reading it, but read
    // (and drop) it first when it is not absurd: a client still writing would
    // otherwise see a reset connection instead of the 413.
    const length = Number(request.headers["content-length"] ?? 0);
    if (length > config.limits.bodyBytes) {
      if (length <= DRAIN_LIMIT_BYTES) {
        await new Promise<void>((resolve) => {
          request.raw.once("end", resolve);
          request.raw.once("error", () => resolve());
          request.raw.resume();
        });
      }
      reply.header("connection", "close");
      throw tooLarge(
        `the request body is ${length} bytes; the limit is ${config.limits.bodyBytes}`,
        null,
        "body_too_large",
      );
    }
  });

  app.setErrorHandler((error: FastifyError | ApiError, request, reply) => {
    const apiError = toApiError(error);
    if (apiError.status === 500) request.log.error({ err: error }, "unhandled error");
    return send(request, reply, apiError);
  });
  app.setNotFoundHandler((request, reply) =>
    send(
      request,
      reply,
      isKserve(request.url)
        ? notFound(
            `${request.method} ${request.url.split("?")[0]} is not served: only the ensemble's KServe v2 API is reachable`,
          )
        : notFound(`${request.method} ${request.url.split("?")[0]} is not an endpoint of this API`),
    ),
  );

  app.addHook("onResponse", async (request, reply) => {
    const route = request.routeOptions.url ?? "unmatched";
    const consumer = request.consumer?.name ?? ANONYMOUS;
    const status = reply.statusCode;
    const seconds = (performance.now() - request.startedAt) / 1000;
    metrics.requests.inc({ route, status: String(status), consumer });
    if (!PUBLIC_PATHS.has(route)) metrics.requestDuration.observe({ route, consumer }, seconds);
    if (status >= 400) {
      const code = (reply.getHeader("x-error-code") as string | undefined) ?? "error";
      metrics.errors.inc({ status: String(status), code, consumer });
    }
    if (!PUBLIC_PATHS.has(route)) {
      request.log.info({ route, method: request.method, status, consumer, ms: Math.round(seconds * 1000) }, "request");
    }
  });
  app.addHook("onSend", async (_request, reply, payload) => {
    // The error code as a header for the metrics label (the body is already serialized).
    if (reply.statusCode >= 400 && typeof payload === "string" && payload.startsWith("{")) {
      const code = /"code":"([a-z_]+)"/.exec(payload)?.[1];
      if (code) reply.header("x-error-code", code);
    }
    return payload;
  });

  /** Admission, the request's context, and release of both however the response ends. */
  const begin = (request: FastifyRequest, reply: FastifyReply, route: string, slots: number): RequestContext => {
    const consumer = request.consumer as Consumer;
    const release = admission.admit(
      consumer.name,
      {
        requestsPerMinute: consumer.requestsPerMinute ?? config.limits.requestsPerMinute,
        maxConcurrent: consumer.maxConcurrent ?? config.limits.maxConcurrent,
      },
      slots,
    );
    metrics.inflight.inc({ consumer: consumer.name }, slots);
    const ctx = new RequestContext(request.id, route, consumer, config, triton, metrics, request.log);
    reply.raw.once("close", () => {
      if (!reply.raw.writableFinished) ctx.clientGone();
      ctx.close();
      release();
      metrics.inflight.dec({ consumer: consumer.name }, slots);
    });
    return ctx;
  };

  app.post("/v1/completions", async (request, reply) => {
    const parsed = parseCompletion(request.body, config);
    const ctx = begin(request, reply, "/v1/completions", parsed.prompts.length);
    await serveGeneration(ctx, reply, parsed);
    return reply;
  });

  app.post("/v1/chat/completions", async (request, reply) => {
    const parsed = parseChat(request.body, config);
    const ctx = begin(request, reply, "/v1/chat/completions", 1);
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

  // --- KServe v2, the ensemble only ---------------------------------------------------
  const upstreamProbe = async (probe: () => Promise<boolean>, reply: FastifyReply): Promise<FastifyReply> => {
    let ok: boolean;
    try {
      ok = await probe();
    } catch {
      ok = false;
    }
    return reply.code(ok ? 200 : 503).send(ok ? "" : { error: "the inference server is not ready" });
  };
  app.get("/v2", async () => ({ name: "triton-ft-gateway", version: "1", extensions: ["binary_tensor_data"] }));
  app.get("/v2/health/live", async (_request, reply) => upstreamProbe(() => triton.live(), reply));
  app.get("/v2/health/ready", async (_request, reply) => upstreamProbe(() => triton.ready(), reply));
  const metadataRoute = async (request: FastifyRequest<{ Params: { model: string } }>): Promise<unknown> => {
    checkEnsemble(request.params.model, triton);
    try {
      return await triton.metadata();
    } catch (error) {
      throw overloaded(`the inference server did not answer: ${(error as Error).message}`, 2, "upstream_unavailable");
    }
  };
  app.get<{ Params: { model: string } }>("/v2/models/:model", metadataRoute);
  app.get<{ Params: { model: string; version: string } }>("/v2/models/:model/versions/:version", metadataRoute);
  const readyRoute = async (
    request: FastifyRequest<{ Params: { model: string } }>,
    reply: FastifyReply,
  ): Promise<FastifyReply> => {
    checkEnsemble(request.params.model, triton);
    return upstreamProbe(() => triton.ready(), reply);
  };
  app.get<{ Params: { model: string } }>("/v2/models/:model/ready", readyRoute);
  app.get<{ Params: { model: string; version: string } }>("/v2/models/:model/versions/:version/ready", readyRoute);
  /** The infer body as bytes: JSON, or a JSON header plus binary tensors; gzip/deflate as tritonclient can send. */
  const inferBody = (request: FastifyRequest): Buffer => {
    const type = (request.headers["content-type"] ?? "").split(";")[0].trim().toLowerCase();
    if (type !== "" && type !== "application/json" && type !== "application/octet-stream") {
      throw new ApiError(
        415,
        "invalid_request_error",
        `send the infer body as application/json or application/octet-stream (binary tensors), not ${type}`,
        "unsupported_media_type",
      );
    }
    let body = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
    const encoding = (request.headers["content-encoding"] ?? "identity").trim().toLowerCase();
    if (encoding !== "identity") {
      if (encoding !== "gzip" && encoding !== "deflate") {
        throw new ApiError(
          415,
          "invalid_request_error",
          `Content-Encoding ${encoding} is not supported`,
          "unsupported_media_type",
        );
      }
      try {
        const limit = { maxOutputLength: config.limits.bodyBytes };
        body = encoding === "gzip" ? gunzipSync(body, limit) : inflateSync(body, limit);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === "ERR_BUFFER_TOO_LARGE") {
          throw tooLarge(
            `the decompressed body is larger than the limit of ${config.limits.bodyBytes} bytes`,
            null,
            "body_too_large",
          );
        }
        throw invalid(`the ${encoding} body does not decompress: ${(error as Error).message}`, null, "invalid_body");
      }
    }
    return body;
  };
  const inferRoute = async (
    request: FastifyRequest<{ Params: { model: string } }>,
    reply: FastifyReply,
  ): Promise<unknown> => {
    checkEnsemble(request.params.model, triton);
    const { header, binary } = splitInferBody(inferBody(request), request.headers["inference-header-content-length"]);
    const parsed = parseInferRequest(header, config, binary);
    const batch = parsed.inputs[0].shape[0];
    const ctx = begin(request, reply, "/v2/models/:model/infer", batch);
    const result = await infer(triton, parsed, {
      signal: ctx.signal,
      deadline: ctx.deadline,
      timeoutSeconds: config.limits.requestTimeoutSeconds,
    });
    ctx.finished({
      promptTokens: result.promptTokens,
      completionTokens: result.completionTokens,
    });
    if (result.binary.length === 0) return result.json;
    const json = Buffer.from(JSON.stringify(result.json), "utf8");
    reply.header("inference-header-content-length", String(json.length));
    reply.header("content-type", "application/octet-stream");
    return reply.send(Buffer.concat([json, ...result.binary]));
  };
  // Infer bodies are bytes (JSON or the binary tensor extension): their own parser, in their own context.
  void app.register(async (kserveInfer) => {
    kserveInfer.removeAllContentTypeParsers();
    kserveInfer.addContentTypeParser("*", { parseAs: "buffer" }, (_request, body, done) => done(null, body));
    kserveInfer.post<{ Params: { model: string } }>("/v2/models/:model/infer", inferRoute);
    kserveInfer.post<{ Params: { model: string; version: string } }>(
      "/v2/models/:model/versions/:version/infer",
      inferRoute,
    );
  });

  // --- probes (no key) --------------------------------------------------------------------
  app.get("/healthz", async () => ({ status: "ok" }));
  let readyCache: { at: number; ok: boolean } | undefined;
  app.get("/readyz", async (_request, reply) => {
    const now = Date.now();
    if (!readyCache || now - readyCache.at > 1000) {
      let ok: boolean;
      try {
        ok = await triton.ready(2000);
      } catch {
        ok = false;
      }
      readyCache = { at: now, ok };
    }
    return reply.code(readyCache.ok ? 200 : 503).send({ status: readyCache.ok ? "ready" : "triton not ready" });
  });

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
