/**
 * OpenAI-style errors: every refusal the gateway sends is one of these, with
 * body `{"error": {"message", "type", "param", "code"}}`. A client mistake is
 * always a 4xx; 5xx are only for the gateway's or Triton's own trouble.
 */

export type ErrorType =
  | "invalid_request_error"
  | "authentication_error"
  | "not_found_error"
  | "rate_limit_error"
  | "server_error"
  | "timeout_error";

export interface ErrorBody {
  error: { message: string; type: ErrorType; param: string | null; code: string | null };
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly type: ErrorType,
    message: string,
    readonly code: string | null = null,
    readonly param: string | null = null,
    /** Seconds, sent as Retry-After (429, 503). */
    readonly retryAfter?: number,
    /** Logged with the request id, never sent: what went wrong inside (addresses, library messages). */
    readonly detail?: string,
  ) {
    super(message);
  }

  body(): ErrorBody {
    return { error: { message: this.message, type: this.type, param: this.param, code: this.code } };
  }
}

export const invalid = (message: string, param: string | null = null, code = "invalid_value"): ApiError =>
  new ApiError(400, "invalid_request_error", message, code, param);

export const notFound = (message: string, code = "not_found", param: string | null = null): ApiError =>
  new ApiError(404, "not_found_error", message, code, param);

export const tooLarge = (message: string, param: string | null = null, code = "request_too_large"): ApiError =>
  new ApiError(413, "invalid_request_error", message, code, param);

export const unauthorized = (message: string): ApiError =>
  new ApiError(401, "authentication_error", message, "invalid_api_key");

export const rateLimited = (message: string, code: string, retryAfter: number): ApiError =>
  new ApiError(429, "rate_limit_error", message, code, null, retryAfter);

export const overloaded = (message: string, retryAfter: number, code = "overloaded", detail?: string): ApiError =>
  new ApiError(503, "server_error", message, code, null, retryAfter, detail);

/** Seconds a client is asked to wait before retrying on another pod while this one drains. */
export const DRAINING_RETRY_AFTER = 1;

/** A request that reached a pod after it started draining (SIGTERM): another pod will answer it. */
export const shuttingDown = (): ApiError =>
  overloaded("this gateway instance is shutting down; retry the request", DRAINING_RETRY_AFTER, "server_shutting_down");

export const timedOut = (seconds: number): ApiError =>
  new ApiError(504, "timeout_error", `the request took longer than the ${seconds} s limit`, "timeout");

export const upstream = (message: string): ApiError =>
  new ApiError(502, "server_error", `the inference server failed: ${message}`, "upstream_error");

/** A sleeping model's hold queue is full on this pod: the client retries once a place is sure to be free. */
export const holdQueueFull = (model: string, held: number, retryAfter: number): ApiError =>
  rateLimited(
    `the model '${model}' is waking up and ${held} requests already wait for it here; retry in ${retryAfter} s`,
    "model_queue_full",
    retryAfter,
  );

/** A sleeping model did not wake within its activation timeout. */
export const modelUnavailable = (model: string, timeoutSeconds: number, retryAfter: number): ApiError =>
  overloaded(
    `the model '${model}' was asleep and did not become ready within ${timeoutSeconds} s; retry in ${retryAfter} s`,
    retryAfter,
    "model_unavailable",
  );
