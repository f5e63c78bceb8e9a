/**
 * Every refusal leaves through here: thrown ApiErrors, Fastify's own body and
 * content-type failures, and unmatched paths. The body is built once, in the
 * shape of the API the path belongs to (OpenAI's object, or KServe's
 * `{"error": "<message>"}` that tritonclient reads), and the code the client
 * saw is kept on the reply for the errors metric, so nothing downstream has
 * to read a serialized body back.
 */
import type { FastifyError, FastifyReply, FastifyRequest } from "fastify";
import { ApiError, type ErrorBody, invalid, notFound } from "./apiError";
import { isKserve, pathOf } from "./paths";
import definePlugin from "fastify-plugin";

declare module "fastify" {
  interface FastifyReply {
    /** The error code in the body sent, for the errors metric; null when the body carries none. */
    errorCode: string | null;
  }
}

export const ERRORS_PLUGIN = "gateway-errors";

/** KServe v2's error body: the message only. */
export interface KserveErrorBody {
  error: string;
}

/** The body a client of `url` reads for `error`, and the code that body shows it. */
export function errorReply(url: string, error: ApiError): { body: ErrorBody | KserveErrorBody; code: string | null } {
  if (isKserve(url)) return { body: { error: error.message }, code: null };
  return { body: error.body(), code: error.code };
}

/** Fastify's own failures (body parsing, content types) as the gateway's errors; anything else is a 500. */
export function toApiError(error: FastifyError | ApiError | Error): ApiError {
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

function sendError(request: FastifyRequest, reply: FastifyReply, error: ApiError): FastifyReply {
  if (error.retryAfter !== undefined) reply.header("retry-after", String(error.retryAfter));
  if (error.status >= 500) {
    request.log.warn(
      { code: error.code, message: error.message, ...(error.detail ? { detail: error.detail } : {}) },
      "request failed",
    );
  }
  const { body, code } = errorReply(request.url, error);
  reply.errorCode = code;
  return reply.code(error.status).send(body);
}

/** Shared with the parent (skip-override): the handlers must be the root's, so every route and every 404 uses them. */
export const errors = definePlugin(
  async (app) => {
    app.decorateReply("errorCode", null);
    app.setErrorHandler((error: FastifyError | ApiError, request, reply) => {
      const apiError = toApiError(error);
      if (apiError.status === 500) request.log.error({ err: error }, "unhandled error");
      return sendError(request, reply, apiError);
    });
    app.setNotFoundHandler((request, reply) => {
      const where = `${request.method} ${pathOf(request.url)}`;
      return sendError(
        request,
        reply,
        notFound(
          isKserve(request.url)
            ? `${where} is not served: only the served models' KServe v2 API is reachable`
            : `${where} is not an endpoint of this API`,
        ),
      );
    });
  },
  { name: ERRORS_PLUGIN, fastify: "5.x" },
);
