/**
 * The gateway's HTTP surface in process: `app.inject()` against an in-memory
 * Triton (fakeTriton.ts), so auth, the OpenAI and KServe error bodies, the
 * 404/413/415 texts, admission limits, the SSE shape and the probes are
 * checked in seconds. The real-server suite (test/gateway) stays the contract
 * with tritonserver; this one pins the bytes the gateway itself writes.
 */
import { connect } from "node:net";
import { gzipSync } from "node:zlib";
import { afterEach, describe, expect, it } from "vitest";
import { buildGateway, buildMetricsServer } from "../../../images/gateway/src/app";
import { KeyRing, sha256Hex } from "../../../images/gateway/src/auth/keyRing";
import {
  type Consumer as GatewayConsumer,
  type GatewayConfig,
  GatewayConfigSchema,
  type GatewayConfigInput,
} from "../../../images/gateway/src/config";
import { Metadata, type ServiceError, status as GrpcStatus } from "@grpc/grpc-js";
import { classifyGrpcError, classifyTritonMessage } from "../../../images/gateway/src/triton/tritonClient";
import { GatewayMetrics, METRICS } from "../../../images/gateway/src/telemetry/metrics";
import { errors } from "../../../images/gateway/src/server/errorHandler";
import { limits } from "../../../images/gateway/src/admission/admissionPlugin";
import { FakeTriton, OTHER_MODEL, TEST_MODEL, token } from "./fakeTriton";

// Fastify resolves from the gateway's own node_modules, not the root's: its types come through the app.
type FastifyInstance = ReturnType<typeof buildGateway>;
type LightMyRequestResponse = Awaited<ReturnType<FastifyInstance["inject"]>>;

const KEY = "key-team-a";
const BODY_LIMIT = 64 * 1024;

interface Harness {
  app: FastifyInstance;
  /** The Triton of TEST_MODEL (`m`). */
  triton: FakeTriton;
  /** Every model's Triton, by model id. */
  tritons: Map<string, FakeTriton>;
  metrics: GatewayMetrics;
}

/** A `models` entry of the config: one of the fixtures (the schema parses it). */
type ModelEntry = typeof TEST_MODEL | typeof OTHER_MODEL;

const open: FastifyInstance[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((app) => app.close()));
});

function configWith(overrides: GatewayConfigInput["limits"] = {}, models: ModelEntry[] = [TEST_MODEL]): GatewayConfig {
  return GatewayConfigSchema.parse({ models, limits: { bodyBytes: BODY_LIMIT, ...overrides } });
}

/** Log lines the app wrote, when a harness is built with `logs`. */
type LogLines = Record<string, unknown>[];

const CONSUMERS = [
  { name: "team-a", keySha256: [sha256Hex(KEY)] },
  { name: "team-b", keySha256: [sha256Hex("key-team-b")] },
  { name: "rate-limited", keySha256: [sha256Hex("key-rate")], requestsPerMinute: 2 },
  { name: "one-at-a-time", keySha256: [sha256Hex("key-solo")], maxConcurrent: 1 },
  { name: "token-limited", keySha256: [sha256Hex("key-tokens")], tokensPerMinute: 300 },
];

function gateway(
  overrides: GatewayConfigInput["limits"] = {},
  logs?: LogLines,
  models: ModelEntry[] = [TEST_MODEL],
  consumers: GatewayConsumer[] = CONSUMERS,
): Harness {
  const config = configWith(overrides, models);
  const keys = new KeyRing({ consumers });
  const tritons = new Map(config.models.map((m) => [m.id, new FakeTriton()]));
  const triton = tritons.get(TEST_MODEL.id) ?? new FakeTriton();
  const metrics = new GatewayMetrics();
  const logger = logs
    ? {
        level: "info",
        stream: { write: (line: string) => void logs.push(JSON.parse(line) as Record<string, unknown>) },
      }
    : false;
  const app = buildGateway({ config, keys, tritons, metrics, logger });
  open.push(app);
  return { app, triton, tritons, metrics };
}

const auth = (key = KEY): Record<string, string> => ({ authorization: `Bearer ${key}` });

function complete(app: FastifyInstance, body: Record<string, unknown>, key = KEY): Promise<LightMyRequestResponse> {
  return app.inject({ method: "POST", url: "/v1/completions", headers: auth(key), payload: { model: "m", ...body } });
}

/** The OpenAI error body, serialized as the gateway must send it. */
function openaiError(message: string, type: string, code: string | null, param: string | null = null): string {
  return JSON.stringify({ error: { message, type, param, code } });
}

async function counter(metrics: GatewayMetrics, name: string, labels: Record<string, string>): Promise<number> {
  const metric = (await metrics.registry.getMetricsAsJSON()).find((m) => m.name === name);
  const values = (metric?.values ?? []) as { labels: Record<string, string | number>; value: number }[];
  return values
    .filter((v) => Object.entries(labels).every(([k, want]) => String(v.labels[k]) === want))
    .reduce((n, v) => n + v.value, 0);
}

/** Resolves once the fake has seen `n` generations (they are then admitted and in flight). */
async function generations(triton: FakeTriton, n: number): Promise<void> {
  while (triton.calls.length < n) await new Promise((resolve) => setImmediate(resolve));
}

describe("authentication", () => {
  it("refuses a request without a key, in OpenAI's shape, with a request id", async () => {
    const { app } = gateway();
    const r = await app.inject({ method: "GET", url: "/v1/models" });
    expect(r.statusCode).toBe(401);
    expect(r.body).toBe(
      openaiError("missing API key: send 'Authorization: Bearer <key>'", "authentication_error", "invalid_api_key"),
    );
    expect(r.headers["x-request-id"]).toMatch(/^[0-9a-f-]{36}$/);
  });

  it("refuses an unknown key and a malformed header alike", async () => {
    const { app } = gateway();
    for (const authorization of ["Bearer nope", "Basic a2V5", `Bearer ${KEY} extra`]) {
      const r = await app.inject({ method: "GET", url: "/v1/models", headers: { authorization } });
      expect(r.statusCode, authorization).toBe(401);
      expect(r.body).toBe(openaiError("invalid API key", "authentication_error", "invalid_api_key"));
    }
  });

  it("serves a good key", async () => {
    const { app } = gateway();
    const r = await app.inject({ method: "GET", url: "/v1/models", headers: auth() });
    expect(r.statusCode).toBe(200);
    expect(r.json()).toEqual({
      object: "list",
      data: [
        {
          id: "m",
          object: "model",
          created: 0,
          owned_by: "triton-ft",
          // A model without `wake` never sleeps: always ready.
          status: "ready",
          max_input_tokens: 512,
          max_output_tokens: 256,
          max_prompt_bytes: 4096,
          max_batch_size: 8,
          max_choice_tokens: 256 * 8,
          vocab_size: 50400,
          chat: true,
        },
      ],
    });
  });

  it("refuses KServe requests in KServe's shape, and checks the key before the path exists", async () => {
    const { app } = gateway();
    for (const url of ["/v2/models/m", "/v2/repository/index", "/v2"]) {
      const r = await app.inject({ method: "GET", url });
      expect(r.statusCode, url).toBe(401);
      expect(r.body).toBe(JSON.stringify({ error: "missing API key: send 'Authorization: Bearer <key>'" }));
    }
    const unknown = await app.inject({ method: "GET", url: "/v1/nowhere" });
    expect(unknown.statusCode).toBe(401);
  });
});

describe("error bodies", () => {
  it("answers Triton unreachable (503) without its address, and logs the address with the request id", async () => {
    const logs: LogLines = [];
    const { app, triton } = gateway({}, logs);
    const details = "connect ECONNREFUSED 10.0.0.5:8001";
    const error = Object.assign(new Error(details), {
      code: GrpcStatus.UNAVAILABLE,
      details,
      metadata: new Metadata(),
    });
    triton.refuseWith = classifyGrpcError(error as ServiceError, 10);
    const r = await complete(app, { prompt: "hi", max_tokens: 2 });
    expect([r.statusCode, r.headers["retry-after"]]).toEqual([503, "2"]);
    expect(r.body).toBe(openaiError("the inference server is unavailable", "server_error", "upstream_unavailable"));
    expect(r.body).not.toMatch(/10\.0\.0\.5|8001|ECONNREFUSED/);
    const logged = logs.find((line) => line.msg === "request failed");
    expect(logged).toMatchObject({ reqId: r.headers["x-request-id"], code: "upstream_unavailable", detail: details });
  });

  it("answers KServe metadata with Triton unreachable (503) without its address", async () => {
    const logs: LogLines = [];
    const { app, triton } = gateway({}, logs);
    triton.metadata = async () => {
      throw new Error("14 UNAVAILABLE: No connection established. Last error: connect ECONNREFUSED 10.0.0.5:8001");
    };
    const r = await app.inject({ method: "GET", url: "/v2/models/m", headers: auth() });
    expect(r.statusCode).toBe(503);
    expect(r.body).toBe(JSON.stringify({ error: "the inference server did not answer" }));
    expect(logs.find((line) => line.msg === "request failed")?.detail).toContain("10.0.0.5:8001");
  });

  it("names an unknown OpenAI path without its query string (404)", async () => {
    const { app } = gateway();
    const r = await app.inject({ method: "POST", url: "/v1/embeddings?x=1", headers: auth(), payload: {} });
    expect(r.statusCode).toBe(404);
    expect(r.body).toBe(
      openaiError("POST /v1/embeddings is not an endpoint of this API", "not_found_error", "not_found"),
    );
  });

  it("answers an unknown KServe path in KServe's shape (404)", async () => {
    const { app } = gateway();
    const r = await app.inject({ method: "GET", url: "/v2/repository/index?ready=1", headers: auth() });
    expect(r.statusCode).toBe(404);
    expect(r.body).toBe(
      JSON.stringify({
        error: "GET /v2/repository/index is not served: only the served models' KServe v2 API is reachable",
      }),
    );
  });

  it("refuses a declared oversized body before reading it (413, connection closed)", async () => {
    const { app } = gateway();
    const payload = JSON.stringify({ model: "m", prompt: "x".repeat(BODY_LIMIT) });
    const r = await app.inject({
      method: "POST",
      url: "/v1/completions",
      headers: { ...auth(), "content-type": "application/json" },
      payload,
    });
    expect(r.statusCode).toBe(413);
    expect(r.headers.connection).toBe("close");
    expect(r.body).toBe(
      openaiError(
        `the request body is ${Buffer.byteLength(payload)} bytes; the limit is ${BODY_LIMIT}`,
        "invalid_request_error",
        "body_too_large",
      ),
    );
  });

  it("refuses a KServe body that decompresses past the limit (413, KServe shape)", async () => {
    const { app } = gateway();
    const r = await app.inject({
      method: "POST",
      url: "/v2/models/m/infer",
      headers: { ...auth(), "content-type": "application/json", "content-encoding": "gzip" },
      payload: gzipSync(Buffer.alloc(BODY_LIMIT + 1, 32)),
    });
    expect(r.statusCode).toBe(413);
    expect(r.body).toBe(
      JSON.stringify({ error: `the decompressed body is larger than the limit of ${BODY_LIMIT} bytes` }),
    );
  });

  it("maps body parser failures to OpenAI errors: bad JSON 400, text/plain 415, empty 400", async () => {
    const { app } = gateway();
    const post = (payload: string, type: string): Promise<LightMyRequestResponse> =>
      app.inject({ method: "POST", url: "/v1/completions", headers: { ...auth(), "content-type": type }, payload });
    const bad = await post("{", "application/json");
    expect(bad.statusCode).toBe(400);
    expect(bad.json()).toMatchObject({ error: { type: "invalid_request_error", code: "invalid_json", param: null } });
    expect(bad.json().error.message).toMatch(/^the request body is not valid JSON: /);
    expect((await post("hello", "text/plain")).body).toBe(
      openaiError("send the body as application/json", "invalid_request_error", "unsupported_media_type"),
    );
    expect((await post("", "application/json")).body).toBe(
      openaiError("the request body is empty", "invalid_request_error", "invalid_body"),
    );
  });

  it("passes a Triton refusal on as a 4xx: OpenAI shape on /v1, KServe shape on /v2", async () => {
    const { app, triton } = gateway();
    const message = "prompt has 600 tokens, more than max_input_len 512";
    triton.refuseWith = classifyTritonMessage(message);
    const openai = await complete(app, { prompt: "hi" });
    expect(openai.statusCode).toBe(400);
    expect(openai.body).toBe(openaiError(message, "invalid_request_error", "context_length_exceeded", "prompt"));
    const kserve = await app.inject({
      method: "POST",
      url: "/v2/models/m/infer",
      headers: auth(),
      payload: inferBody(),
    });
    expect(kserve.statusCode).toBe(400);
    expect(kserve.body).toBe(JSON.stringify({ error: message }));
  });

  it("counts refusals by the code the client saw; KServe bodies carry none", async () => {
    const { app, metrics } = gateway();
    const openai = await app.inject({ method: "GET", url: "/v1/models" });
    const kserve = await app.inject({ method: "GET", url: "/v2" });
    // The code travels inside the app, never as a response header.
    expect(Object.keys(openai.headers).filter((h) => h.startsWith("x-") && h !== "x-request-id")).toEqual([]);
    expect(Object.keys(kserve.headers).filter((h) => h.startsWith("x-") && h !== "x-request-id")).toEqual([]);
    const errors = METRICS.errors;
    expect(await counter(metrics, errors, { status: "401", code: "invalid_api_key", consumer: "anonymous" })).toBe(1);
    expect(await counter(metrics, errors, { status: "401", code: "error", consumer: "anonymous" })).toBe(1);
    await app.inject({ method: "GET", url: "/v1/models/other", headers: auth() });
    expect(await counter(metrics, errors, { status: "404", code: "model_not_found", consumer: "team-a" })).toBe(1);
  });

  it("names the model /v1/models/:model serves (404 model_not_found in OpenAI's shape)", async () => {
    const { app } = gateway();
    const r = await app.inject({ method: "GET", url: "/v1/models/other", headers: auth() });
    expect(r.statusCode).toBe(404);
    expect(r.body).toBe(
      openaiError(
        "the model 'other' does not exist or you do not have access to it; this endpoint serves 'm'",
        "invalid_request_error",
        "model_not_found",
        "model",
      ),
    );
    expect((await app.inject({ method: "GET", url: "/v1/models/m", headers: auth() })).json().id).toBe("m");
  });
});

describe("admission limits", () => {
  it("answers 429 rate_limit_exceeded with Retry-After once a key's rate is used up; other keys go on", async () => {
    const { app } = gateway();
    const statuses: number[] = [];
    let last: LightMyRequestResponse | undefined;
    for (let i = 0; i < 3; i++) {
      last = await complete(app, { prompt: "hi", max_tokens: 1 }, "key-rate");
      statuses.push(last.statusCode);
    }
    expect(statuses).toEqual([200, 200, 429]);
    expect(Number(last?.headers["retry-after"])).toBeGreaterThanOrEqual(1);
    expect(last?.json().error).toMatchObject({ type: "rate_limit_error", code: "rate_limit_exceeded" });
    expect(last?.json().error.message).toMatch(/^rate limit of 2 requests per minute reached for this key; retry in/);
    expect((await complete(app, { prompt: "hi", max_tokens: 1 })).statusCode).toBe(200);
  });

  it("answers 429 rate_limit_exceeded naming the token limit once a key's tokens/minute are reserved; settles with the usage", async () => {
    const { app } = gateway();
    // "hi" reserves 3 (its bytes + 1) + 100 max_tokens; the fake's usage is far less, given back at the end.
    const first = await complete(app, { prompt: "hi", max_tokens: 100 }, "key-tokens");
    expect(first.statusCode).toBe(200);
    const used = (first.json() as { usage: { total_tokens: number } }).usage.total_tokens;
    expect(used).toBeLessThan(103);
    const big = await complete(app, { prompt: "hi", max_tokens: 250 }, "key-tokens");
    expect(big.statusCode).toBe(429);
    expect(big.json().error).toMatchObject({ type: "rate_limit_error", code: "rate_limit_exceeded" });
    expect(big.json().error.message).toContain("token limit of 300 tokens per minute");
    // The window's count comes back at the next minute of the clock.
    const retry = Number(big.headers["retry-after"]);
    expect(retry).toBeGreaterThanOrEqual(1);
    expect(retry).toBeLessThanOrEqual(60);
    expect((await complete(app, { prompt: "hi", max_tokens: 100 }, "key-tokens")).statusCode).toBe(200);
  });

  it("answers 429 concurrency_limit_exceeded while a one-at-a-time key has a generation in flight", async () => {
    const { app, triton } = gateway();
    triton.hold();
    const first = complete(app, { prompt: "hi", max_tokens: 2 }, "key-solo");
    await generations(triton, 1);
    const second = await complete(app, { prompt: "hi", max_tokens: 2 }, "key-solo");
    expect(second.statusCode).toBe(429);
    expect(second.headers["retry-after"]).toBe("1");
    expect(second.body).toBe(
      openaiError(
        "this key already has 1 generation(s) in flight, its limit is 1",
        "rate_limit_error",
        "concurrency_limit_exceeded",
      ),
    );
    triton.release();
    expect((await first).statusCode).toBe(200);
    // The slot is free again once the first answer is complete.
    expect((await complete(app, { prompt: "hi", max_tokens: 1 }, "key-solo")).statusCode).toBe(200);
  });

  it("gives a generation's slot back once it has all its max_tokens, before Triton's stream ends; one ended by the model waits for the end", async () => {
    const { app, triton } = gateway();
    triton.holdEnd();
    /** The next request of the one-at-a-time key, sent while `ended` generations wait for their stream's end. */
    const next = async (ended: number): Promise<number> => {
      let settled = false;
      const r = complete(app, { prompt: "hi", max_tokens: 1 }, "key-solo").finally(() => (settled = true));
      while (triton.atEnd < ended && !settled) await new Promise((resolve) => setImmediate(resolve));
      triton.releaseEnd();
      return (await r).statusCode;
    };
    // Every token generated: the model can do nothing more, so the slot is free before the stream ends.
    const first = complete(app, { prompt: "hi", max_tokens: 2 }, "key-solo");
    while (triton.atEnd < 1) await new Promise((resolve) => setImmediate(resolve));
    expect(await next(2)).toBe(200);
    expect((await first).statusCode).toBe(200);
    // An end of text before max_tokens: the generation has ended only when Triton's stream says so.
    triton.holdEnd();
    triton.endAfter = 1;
    const eos = complete(app, { prompt: "hi", max_tokens: 2 }, "key-solo");
    while (triton.atEnd < 3) await new Promise((resolve) => setImmediate(resolve));
    expect(await next(4)).toBe(429);
    expect((await eos).statusCode).toBe(200);
  });

  it("answers a generation at max_tokens in full at its last token, before Triton's stream ends; one ended by the model at the end", async () => {
    const logs: LogLines = [];
    const { app, triton } = gateway({}, logs);
    /** The response, or a failure if it waits for Triton's held end (which nothing opens meanwhile). */
    const answered = <T>(p: Promise<T>): Promise<T> =>
      Promise.race([
        p,
        new Promise<T>((_, reject) => setTimeout(() => reject(new Error("waited for Triton's stream end")), 2000)),
      ]);
    const atEnd = async (n: number): Promise<void> => {
      while (triton.atEnd < n) await new Promise((resolve) => setImmediate(resolve));
    };
    triton.holdEnd();
    // Streamed and as JSON: the whole answer while Triton's final status is still held.
    const streamed = await answered(complete(app, { prompt: "hi", max_tokens: 2, stream: true }));
    expect(events(streamed.body).at(-1)).toBe("[DONE]");
    expect(events(streamed.body).at(-2)).toContain('"finish_reason":"length"');
    const json = await answered(complete(app, { prompt: "hi", max_tokens: 2 }));
    expect(json.json()).toMatchObject({ choices: [{ text: `${token(1)}${token(2)}`, finish_reason: "length" }] });
    await atEnd(2);
    // A failed final status after that: the client had its answer; the failure is logged, nothing else.
    triton.failAtEndWith = new Error("final status failed");
    triton.releaseEnd();
    triton.holdEnd();
    const late = await answered(complete(app, { prompt: "hi", max_tokens: 1, stream: true }));
    expect(events(late.body).at(-1)).toBe("[DONE]");
    await atEnd(3);
    triton.releaseEnd();
    await new Promise((resolve) => setImmediate(resolve));
    expect(logs.some((l) => String(l.msg).startsWith("Triton's stream failed after the generation had ended"))).toBe(
      true,
    );
    triton.failAtEndWith = undefined;
    // An end of text before max_tokens: only Triton's end says the generation is over.
    triton.holdEnd();
    triton.endAfter = 1;
    let settled = false;
    const eos = complete(app, { prompt: "hi", max_tokens: 2, stream: true }).finally(() => (settled = true));
    await atEnd(4);
    for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
    expect(settled).toBe(false);
    triton.releaseEnd();
    expect(events((await eos).body).at(-1)).toBe("[DONE]");
  });

  it("answers 503 overloaded to a key above its fair share at the gateway-wide cap; an idle key is still admitted", async () => {
    // Cap 2 over five teams of share 1: each team's fair share is 1 slot.
    const { app, triton, metrics } = gateway({ maxInflight: 2 });
    triton.hold();
    // A two-prompt completion takes two slots: the whole gateway, one above team-a's share.
    const first = complete(app, { prompt: ["a", "b"], max_tokens: 1 });
    await generations(triton, 2);
    const refused = await complete(app, { prompt: "c", max_tokens: 1 });
    expect(refused.statusCode).toBe(503);
    expect(refused.headers["retry-after"]).toBe("1");
    expect(refused.body).toBe(
      openaiError(
        "the gateway has 2 generations in flight, its limit is 2; this key has 2, above its fair share of 1",
        "server_error",
        "overloaded",
      ),
    );
    // team-b has nothing in flight: within its share, admitted although the gateway is full.
    const idle = complete(app, { prompt: "c", max_tokens: 1 }, "key-team-b");
    await generations(triton, 3);
    expect(await counter(metrics, METRICS.inflight, { consumer: "team-a" })).toBe(2);
    triton.release();
    expect((await first).statusCode).toBe(200);
    expect((await idle).statusCode).toBe(200);
    expect(await counter(metrics, METRICS.inflight, { consumer: "team-a" })).toBe(0);
  });
});

/** The `data:` payloads of an SSE body, in order. */
function events(body: string): string[] {
  expect(body.endsWith("\n\n")).toBe(true);
  return body
    .slice(0, -2)
    .split("\n\n")
    .map((e) => {
      expect(e.startsWith("data: ")).toBe(true);
      return e.slice("data: ".length);
    });
}

describe("completions", () => {
  it("answers a JSON completion with the text and the usage", async () => {
    const { app } = gateway();
    const r = await complete(app, { prompt: "one two", max_tokens: 3 });
    expect(r.statusCode).toBe(200);
    expect(r.json()).toMatchObject({
      object: "text_completion",
      model: "m",
      choices: [{ index: 0, text: `${token(1)}${token(2)}${token(3)}`, logprobs: null, finish_reason: "length" }],
      usage: { prompt_tokens: 2, completion_tokens: 3, total_tokens: 5 },
    });
  });

  it("streams completions as SSE: one chunk per delta, usage on the last choice, then [DONE]", async () => {
    const { app } = gateway();
    const r = await complete(app, { prompt: "hi", max_tokens: 2, stream: true });
    expect(r.statusCode).toBe(200);
    expect(r.headers["content-type"]).toBe("text/event-stream; charset=utf-8");
    expect(r.headers["cache-control"]).toBe("no-cache");
    expect(r.headers["x-request-id"]).toMatch(/^[0-9a-f-]{36}$/);
    const data = events(r.body);
    expect(data.at(-1)).toBe("[DONE]");
    const chunks = data.slice(0, -1).map((d) => JSON.parse(d) as Record<string, unknown>);
    expect(chunks.map((c) => (c.choices as { text: string }[])[0].text).join("")).toBe(`${token(1)}${token(2)}`);
    expect(chunks.every((c) => c.object === "text_completion" && c.model === "m")).toBe(true);
    expect(chunks.at(-1)).toMatchObject({
      choices: [{ index: 0, text: "", finish_reason: "length" }],
      usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 },
    });
  });

  it("streams chat: a role chunk first, content deltas, an empty delta with the finish reason", async () => {
    const { app } = gateway();
    const r = await app.inject({
      method: "POST",
      url: "/v1/chat/completions",
      headers: auth(),
      payload: {
        model: "m",
        messages: [{ role: "user", content: "hi" }],
        max_tokens: 2,
        stream: true,
        stream_options: { include_usage: true },
      },
    });
    const data = events(r.body);
    expect(data.at(-1)).toBe("[DONE]");
    const chunks = data.slice(0, -1).map((d) => JSON.parse(d) as { choices: { delta: unknown }[]; usage?: unknown });
    expect(chunks[0].choices[0]).toEqual({
      index: 0,
      delta: { role: "assistant", content: "" },
      logprobs: null,
      finish_reason: null,
    });
    expect(chunks.at(-2)?.choices[0]).toMatchObject({ delta: {}, finish_reason: "length" });
    // include_usage: a last chunk with no choices and the usage.
    expect(chunks.at(-1)).toMatchObject({ choices: [], usage: { completion_tokens: 2 } });
  });

  it("ends a stream that fails mid-way with an error event and no [DONE]", async () => {
    const { app, triton } = gateway();
    triton.failMidStreamWith = new Error("socket hang up");
    const r = await complete(app, { prompt: "hi", max_tokens: 4, stream: true });
    expect(r.statusCode).toBe(200);
    const data = events(r.body);
    expect(data).not.toContain("[DONE]");
    expect(data.at(-1)).toBe(openaiError("the stream failed", "server_error", "stream_failed"));
  });
});

function inferBody(outputs?: unknown[]): Record<string, unknown> {
  return {
    inputs: [
      { name: "text_input", datatype: "BYTES", shape: [1, 1], data: ["hi"] },
      { name: "max_tokens", datatype: "UINT32", shape: [1, 1], data: [2] },
    ],
    ...(outputs ? { outputs } : {}),
  };
}

describe("KServe v2", () => {
  it("serves the ensemble's infer as JSON and with binary outputs", async () => {
    const { app } = gateway();
    const json = await app.inject({
      method: "POST",
      url: "/v2/models/m/infer",
      headers: auth(),
      payload: inferBody([{ name: "text_output" }]),
    });
    expect(json.statusCode).toBe(200);
    expect(json.json()).toEqual({
      model_name: "m",
      model_version: "1",
      outputs: [{ name: "text_output", datatype: "BYTES", shape: [1, 1], data: [`${token(1)}${token(2)}`] }],
    });
    const binary = await app.inject({
      method: "POST",
      url: "/v2/models/m/versions/1/infer",
      headers: auth(),
      payload: inferBody([{ name: "output_token_count", parameters: { binary_data: true } }]),
    });
    expect(binary.headers["content-type"]).toBe("application/octet-stream");
    const headerLength = Number(binary.headers["inference-header-content-length"]);
    expect(JSON.parse(binary.rawPayload.subarray(0, headerLength).toString("utf8")).outputs[0]).toEqual({
      name: "output_token_count",
      datatype: "UINT32",
      shape: [1, 1],
      parameters: { binary_data_size: 4 },
    });
    expect(binary.rawPayload.readUInt32LE(headerLength)).toBe(2);
  });

  it("serves only the served models by their ids: the internal models and the ensemble's own name are a 404 in KServe's shape", async () => {
    const { app } = gateway();
    for (const model of ["preprocessing", "ensemble"]) {
      const r = await app.inject({ method: "GET", url: `/v2/models/${model}/ready`, headers: auth() });
      expect(r.statusCode).toBe(404);
      expect(r.body).toBe(
        JSON.stringify({
          error: `the model '${model}' does not exist or you do not have access to it; this endpoint serves 'm'`,
        }),
      );
    }
  });

  it("answers server metadata, model metadata and health", async () => {
    const { app, triton } = gateway();
    const get = (url: string): Promise<LightMyRequestResponse> => app.inject({ method: "GET", url, headers: auth() });
    expect((await get("/v2")).json()).toEqual({
      name: "triton-ft-gateway",
      version: "1",
      extensions: ["binary_tensor_data"],
    });
    // Named as the client addresses it, not by the ensemble's name inside Triton.
    expect((await get("/v2/models/m")).json()).toMatchObject({ name: "m", platform: "ensemble" });
    const live = await get("/v2/health/live");
    expect([live.statusCode, live.body]).toEqual([200, ""]);
    triton.isReady = false;
    const ready = await get("/v2/health/ready");
    expect([ready.statusCode, ready.body]).toEqual([
      503,
      JSON.stringify({ error: "the inference server is not ready" }),
    ]);
  });
});

describe("several models", () => {
  const ONLY_OTHER = "key-only-other";
  const TWO = [TEST_MODEL, OTHER_MODEL];
  const scoped: GatewayConsumer[] = [
    ...CONSUMERS,
    { name: "only-other", keySha256: [sha256Hex(ONLY_OTHER)], models: ["other"] },
  ];
  const two = (overrides: GatewayConfigInput["limits"] = {}, logs?: LogLines): Harness =>
    gateway(overrides, logs, TWO, scoped);
  const fake = (h: Harness, id: string): FakeTriton => {
    const t = h.tritons.get(id);
    if (!t) throw new Error(`no fake Triton for ${id}`);
    return t;
  };
  const get = (app: FastifyInstance, url: string, key = KEY): Promise<LightMyRequestResponse> =>
    app.inject({ method: "GET", url, headers: auth(key) });

  it("lists every model with its limits, and only its own models to a scoped key", async () => {
    const { app } = two();
    const all = (await get(app, "/v1/models")).json() as { data: Record<string, unknown>[] };
    expect(all.data.map((m) => [m.id, m.max_input_tokens, m.max_output_tokens, m.max_batch_size, m.chat])).toEqual([
      ["m", 512, 256, 8, true],
      ["other", 64, 8, 2, false],
    ]);
    const mine = (await get(app, "/v1/models", ONLY_OTHER)).json() as { data: { id: string }[] };
    expect(mine.data.map((m) => m.id)).toEqual(["other"]);
  });

  it("routes each request to its model's Triton, under that model's limits and template", async () => {
    const h = two();
    const r = await complete(h.app, { model: "other", prompt: "hi", max_tokens: 2 });
    expect([r.statusCode, r.json().model]).toEqual([200, "other"]);
    expect([fake(h, "other").calls.length, fake(h, "m").calls.length]).toEqual([1, 0]);
    // other's max output is 8, m's 256; other's batch is 2; other has no chat template.
    const long = await complete(h.app, { model: "other", prompt: "hi", max_tokens: 9 });
    expect([long.statusCode, long.json().error.message]).toEqual([400, "max_tokens is 9: must be between 1 and 8"]);
    expect((await complete(h.app, { model: "m", prompt: "hi", max_tokens: 9 })).statusCode).toBe(200);
    expect((await complete(h.app, { model: "other", prompt: ["a", "b", "c"], max_tokens: 1 })).statusCode).toBe(400);
    const chat = await h.app.inject({
      method: "POST",
      url: "/v1/chat/completions",
      headers: auth(),
      payload: { model: "other", messages: [{ role: "user", content: "hi" }] },
    });
    expect([chat.statusCode, chat.json().error.code]).toEqual([404, "chat_not_supported"]);
    const infer = await h.app.inject({
      method: "POST",
      url: "/v2/models/other/infer",
      headers: auth(),
      payload: inferBody(),
    });
    expect([infer.statusCode, infer.json().model_name]).toEqual([200, "other"]);
    expect(fake(h, "other").calls.length).toBe(2);
  });

  it("answers a model outside the key's scope exactly as a model this gateway does not serve", async () => {
    const h = two();
    // The same key on a gateway that serves `other` alone: there `m` does not exist.
    const alone = gateway({}, undefined, [OTHER_MODEL], scoped);
    const pairs: [string, (app: FastifyInstance) => Promise<LightMyRequestResponse>][] = [
      ["completion", (app) => complete(app, { model: "m", prompt: "hi", max_tokens: 1 }, ONLY_OTHER)],
      ["model card", (app) => get(app, "/v1/models/m", ONLY_OTHER)],
      ["KServe readiness", (app) => get(app, "/v2/models/m/ready", ONLY_OTHER)],
      [
        "KServe infer",
        (app) =>
          app.inject({ method: "POST", url: "/v2/models/m/infer", headers: auth(ONLY_OTHER), payload: inferBody() }),
      ],
    ];
    for (const [what, send] of pairs) {
      const scopedOut = await send(h.app);
      const notServed = await send(alone.app);
      expect(scopedOut.statusCode, what).toBe(404);
      expect(scopedOut.body, what).toBe(notServed.body);
    }
    expect((await complete(h.app, { model: "m", prompt: "hi", max_tokens: 1 }, ONLY_OTHER)).body).toBe(
      openaiError(
        "the model 'm' does not exist or you do not have access to it; this endpoint serves 'other'",
        "invalid_request_error",
        "model_not_found",
        "model",
      ),
    );
    expect(fake(h, "m").calls.length).toBe(0);
    // An unscoped key names both models in the same 404.
    expect((await complete(h.app, { model: "nope", prompt: "hi" })).json().error.message).toBe(
      "the model 'nope' does not exist or you do not have access to it; this endpoint serves 'm', 'other'",
    );
  });

  it("keeps serving the other model while one model's Triton is down; ready while any model is", async () => {
    const h = two();
    const down = fake(h, "other");
    const details = "connect ECONNREFUSED 10.0.0.6:8001";
    down.isReady = false;
    down.refuseWith = classifyGrpcError(
      Object.assign(new Error(details), {
        code: GrpcStatus.UNAVAILABLE,
        details,
        metadata: new Metadata(),
      }) as ServiceError,
      10,
    );
    const r = await complete(h.app, { model: "other", prompt: "hi", max_tokens: 1 });
    expect([r.statusCode, r.headers["retry-after"]]).toEqual([503, "2"]);
    expect(r.body).toBe(openaiError("the inference server is unavailable", "server_error", "upstream_unavailable"));
    expect((await complete(h.app, { model: "m", prompt: "hi", max_tokens: 1 })).statusCode).toBe(200);
    expect((await h.app.inject({ method: "GET", url: "/readyz" })).statusCode).toBe(200);
    expect((await get(h.app, "/v2/models/other/ready")).statusCode).toBe(503);
    expect((await get(h.app, "/v2/models/m/ready")).statusCode).toBe(200);
    expect((await get(h.app, "/v2/health/ready")).statusCode).toBe(200);
    // A key that may use only the down model sees its KServe server unready.
    expect((await get(h.app, "/v2/health/ready", ONLY_OTHER)).statusCode).toBe(503);

    const bothDown = two();
    for (const t of bothDown.tritons.values()) t.isReady = false;
    const r2 = await bothDown.app.inject({ method: "GET", url: "/readyz" });
    expect([r2.statusCode, r2.body]).toEqual([503, JSON.stringify({ status: "triton not ready" })]);
  });

  it("caps a model's generations at its own maxInflight; the other model still admits", async () => {
    // other: maxInflight 4; six teams of share 1 give team-a a fair share of 1 there.
    const h = two();
    fake(h, "other").hold();
    fake(h, "m").hold();
    const first = complete(h.app, { model: "other", prompt: ["a", "b"], max_tokens: 1 });
    const second = complete(h.app, { model: "other", prompt: ["a", "b"], max_tokens: 1 });
    await generations(fake(h, "other"), 4);
    const refused = await complete(h.app, { model: "other", prompt: "c", max_tokens: 1 });
    expect([refused.statusCode, refused.headers["retry-after"]]).toEqual([503, "1"]);
    expect(refused.body).toBe(
      openaiError(
        "the model 'other' has 4 generations in flight, its limit is 4; this key has 4 there, above its fair share of 1",
        "server_error",
        "overloaded",
      ),
    );
    const elsewhere = complete(h.app, { model: "m", prompt: "c", max_tokens: 1 });
    await generations(fake(h, "m"), 1);
    for (const t of h.tritons.values()) t.release();
    expect([(await first).statusCode, (await second).statusCode, (await elsewhere).statusCode]).toEqual([
      200, 200, 200,
    ]);
  });

  it("labels request, token, latency and error metrics with the served model, never with a name a client made up", async () => {
    const h = two();
    await complete(h.app, { model: "m", prompt: "one two", max_tokens: 2 });
    await complete(h.app, { model: "other", prompt: "one", max_tokens: 3, stream: true });
    await complete(h.app, { model: "other", prompt: "one", max_tokens: 99 });
    await complete(h.app, { model: "made-up", prompt: "one" });
    const c = (name: string, labels: Record<string, string>): Promise<number> => counter(h.metrics, name, labels);
    expect(await c(METRICS.requests, { route: "/v1/completions", status: "200", model: "m" })).toBe(1);
    expect(await c(METRICS.requests, { route: "/v1/completions", status: "200", model: "other" })).toBe(1);
    expect(await c(METRICS.outputTokens, { model: "m" })).toBe(2);
    expect(await c(METRICS.outputTokens, { model: "other" })).toBe(3);
    expect(await c(METRICS.promptTokens, { model: "other", consumer: "team-a" })).toBe(1);
    expect(await c(METRICS.errors, { status: "400", code: "invalid_value", model: "other" })).toBe(1);
    expect(await c(METRICS.errors, { status: "404", code: "model_not_found", consumer: "team-a" })).toBe(1);
    const exposition = await h.metrics.registry.metrics();
    expect(exposition).not.toContain("made-up");
    for (const name of [METRICS.timeToFirstToken, METRICS.requestDuration, METRICS.outputTokensPerSecond]) {
      expect(exposition, name).toMatch(new RegExp(`^${name}_count\\{[^}]*model="other"[^}]*\\} [1-9]\\d*$`, "m"));
    }
  });

  it("logs the model on each request's line", async () => {
    const logs: LogLines = [];
    const h = two({}, logs);
    const r = await complete(h.app, { model: "other", prompt: "hi", max_tokens: 1 });
    expect(logs.find((line) => line.msg === "request" && line.reqId === r.headers["x-request-id"])).toMatchObject({
      model: "other",
      consumer: "team-a",
      status: 200,
    });
  });
});

describe("probes", () => {
  it("answer without a key and are left out of the request log's latency", async () => {
    const { app, metrics } = gateway();
    const health = await app.inject({ method: "GET", url: "/healthz" });
    expect([health.statusCode, health.body]).toEqual([200, JSON.stringify({ status: "ok" })]);
    const ready = await app.inject({ method: "GET", url: "/readyz" });
    expect([ready.statusCode, ready.body]).toEqual([200, JSON.stringify({ status: "ready" })]);
    expect(await counter(metrics, METRICS.requests, { route: "/readyz", status: "200" })).toBe(1);
    const seen = (await metrics.registry.getMetricsAsJSON()).find((m) => m.name === METRICS.requestDuration);
    expect(JSON.stringify(seen?.values ?? [])).not.toContain("/healthz");
  });

  it("says 503 when Triton is not ready", async () => {
    const { app, triton } = gateway();
    triton.isReady = false;
    const r = await app.inject({ method: "GET", url: "/readyz" });
    expect([r.statusCode, r.body]).toEqual([503, JSON.stringify({ status: "triton not ready" })]);
  });
});

describe("a generation holds what it took until it ends upstream", () => {
  /** A streamed completion over a socket that the client then drops; resolves once the gateway has it in flight. */
  async function abandon(app: FastifyInstance, triton: FakeTriton, key: string, maxTokens: number): Promise<void> {
    await app.listen({ host: "127.0.0.1", port: 0 });
    const { port } = app.server.address() as { port: number };
    const socket = connect(port, "127.0.0.1");
    const body = JSON.stringify({ model: "m", prompt: "hi", max_tokens: maxTokens, stream: true });
    socket.write(
      `POST /v1/completions HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${key}\r\n` +
        `content-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
    await generations(triton, 1);
    socket.destroy();
    await new Promise((resolve) => setTimeout(resolve, 50));
  }

  async function usage(app: FastifyInstance, key: string): Promise<{ requests: number; completion_tokens: number }> {
    const r = await app.inject({ method: "GET", url: "/v1/usage", headers: auth(key) });
    return (r.json() as { today: { total: { requests: number; completion_tokens: number } } }).today.total;
  }

  async function settled(app: FastifyInstance, key: string, requests: number): Promise<void> {
    while ((await usage(app, key)).requests < requests) await new Promise((resolve) => setTimeout(resolve, 10));
  }

  it("a client gone keeps the team's slot until Triton has finished (FT cannot cancel); usage counts the tokens generated", async () => {
    const { app, triton } = gateway();
    triton.hold();
    await abandon(app, triton, "key-solo", 7);
    // The generation still runs upstream: the one-at-a-time team is refused.
    const refused = await complete(app, { prompt: "hi", max_tokens: 1 }, "key-solo");
    expect([refused.statusCode, refused.json().error.code]).toEqual([429, "concurrency_limit_exceeded"]);
    expect((await usage(app, "key-solo")).requests).toBe(0);
    triton.release();
    await settled(app, "key-solo", 1);
    // Billed to the team that asked: every token Triton generated, although nobody read them.
    expect(await usage(app, "key-solo")).toMatchObject({ requests: 1, completion_tokens: 7 });
    expect((await complete(app, { prompt: "hi", max_tokens: 1 }, "key-solo")).statusCode).toBe(200);
  });

  it("a model that can cancel is cancelled and releases at once", async () => {
    const { app, triton } = gateway({}, undefined, [{ ...TEST_MODEL, cancellable: true } as unknown as ModelEntry]);
    triton.hold();
    await abandon(app, triton, "key-solo", 7);
    triton.release();
    expect((await complete(app, { prompt: "hi", max_tokens: 1 }, "key-solo")).statusCode).toBe(200);
  });

  it("usage counts requests that reached the model, not Triton's refusals", async () => {
    const { app, triton } = gateway();
    triton.refuseWith = classifyTritonMessage("text_input[0]: prompt is 600 tokens, more than max_input_len=512");
    const refused = await complete(app, { prompt: "hi", max_tokens: 3 });
    expect([refused.statusCode, refused.json().error.code]).toEqual([400, "context_length_exceeded"]);
    triton.refuseWith = undefined;
    expect((await complete(app, { prompt: "hi", max_tokens: 3 })).statusCode).toBe(200);
    expect(await usage(app, KEY)).toMatchObject({ requests: 1, completion_tokens: 3 });
  });
});

describe("what a generation asks of Triton", () => {
  it("only the outputs it reads: the per-token arrays only with logprobs", async () => {
    const { app, triton } = gateway();
    expect((await complete(app, { prompt: "hi", max_tokens: 2 })).statusCode).toBe(200);
    expect((await complete(app, { prompt: "hi", max_tokens: 2, logprobs: 0 })).statusCode).toBe(200);
    expect(triton.outputsAsked).toEqual([
      ["text_output", "input_token_count", "output_token_count", "cum_log_probs"],
      ["text_output", "input_token_count", "output_token_count", "cum_log_probs", "output_log_probs", "output_tokens"],
    ]);
  });
});

describe("request bodies that cannot be decoded", () => {
  it("answers 400 invalid_body to JSON that is not UTF-8 (or declares another charset); the next request is served", async () => {
    const { app } = gateway();
    const bad = Buffer.concat([Buffer.from('{"model":"m","prompt":"a'), Buffer.from([0xff, 0xfe]), Buffer.from('"}')]);
    const r = await app.inject({
      method: "POST",
      url: "/v1/completions",
      headers: { ...auth(), "content-type": "application/json" },
      payload: bad,
    });
    expect(r.statusCode).toBe(400);
    expect(r.body).toBe(openaiError("the request body is not valid UTF-8", "invalid_request_error", "invalid_body"));
    const latin = await app.inject({
      method: "POST",
      url: "/v1/completions",
      headers: { ...auth(), "content-type": "application/json; charset=iso-8859-1" },
      payload: '{"model":"m","prompt":"a"}',
    });
    expect([latin.statusCode, latin.json().error.code]).toEqual([400, "invalid_body"]);
    expect((await complete(app, { prompt: "hi", max_tokens: 1 })).statusCode).toBe(200);
  });
});

describe("draining", () => {
  it("answers a request arriving while the pod drains with 503 server_shutting_down and Retry-After", async () => {
    const { app, triton } = gateway();
    open.splice(open.indexOf(app), 1);
    triton.hold();
    await app.listen({ host: "127.0.0.1", port: 0 });
    const { port } = app.server.address() as { port: number };
    // One keep-alive connection: a generation in flight, then a second request once close() has begun
    // (inject() refuses to run on a closing app, so this goes over a socket).
    const socket = connect(port, "127.0.0.1");
    let received = "";
    socket.on("data", (chunk) => (received += chunk.toString()));
    const ended = new Promise<void>((resolve) => socket.on("close", () => resolve()));
    const body = JSON.stringify({ model: "m", prompt: "hi", max_tokens: 2 });
    socket.write(
      `POST /v1/completions HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${KEY}\r\n` +
        `content-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
    await generations(triton, 1);
    const closed = app.close();
    await new Promise((resolve) => setTimeout(resolve, 50));
    socket.write(`GET /v1/models HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${KEY}\r\n\r\n`);
    await new Promise((resolve) => setTimeout(resolve, 50));
    triton.release();
    await ended;
    await closed;
    const [first, second] = received.split(/(?=HTTP\/1\.1 )/);
    expect(first).toMatch(/^HTTP\/1\.1 200 /);
    expect(second).toMatch(/^HTTP\/1\.1 503 /);
    expect(second).toMatch(/\r\nretry-after: 1\r\n/i);
    expect(second).toMatch(/\r\nconnection: close\r\n/i);
    expect(second.split("\r\n\r\n")[1]).toBe(
      openaiError("this gateway instance is shutting down; retry the request", "server_error", "server_shutting_down"),
    );
  });
});

describe("composition", () => {
  it("refuses to boot when a plugin is registered before the one it depends on", async () => {
    // A bare Fastify instance (the metrics listener's), with limits registered before auth.
    const app = buildMetricsServer(new GatewayMetrics());
    open.push(app);
    void app.register(errors);
    void app.register(limits, {
      config: configWith(),
      metrics: new GatewayMetrics(),
      keys: new KeyRing({ consumers: [] }),
    });
    await expect(app.ready()).rejects.toThrow(/required by .gateway-limits./);
  });
});
