/**
 * The bad-request catalogue: every entry gets its documented 4xx with an
 * OpenAI error body (KServe `{"error": "..."}` under /v2), never a 5xx, and a
 * normal request succeeds right after each one, so no refusal leaves the
 * gateway or Triton worse off.
 */
import { describe, expect, inject, it } from "vitest";

const h = inject("gateway");
const BASE = h.main.url;
const KEY = h.main.keys.catalogue;
const MODEL = h.model.id;
/** Top alternatives one more than the model's engine returns: FT none (a completion's logprobs at most 1), vLLM max_logprobs. */
const TOO_MANY_LOGPROBS = h.model.engine === "vllm" ? (h.model.maxLogprobs ?? 0) + 1 : 5;

interface Case {
  name: string;
  method?: "GET" | "POST" | "PUT" | "DELETE";
  path?: string;
  /** Raw body (string) or a JSON value. */
  body?: unknown;
  raw?: string;
  /** Raw bytes (the binary tensor extension); sent as application/octet-stream. */
  bytes?: Buffer;
  headers?: Record<string, string>;
  /** Authorization header; undefined = a valid key, null = none. */
  auth?: string | null;
  status: number;
  code?: string;
  param?: string;
  /** What the message must say (KServe bodies carry only a message). */
  message?: RegExp;
  /** Why the entry is a refusal on FT only (vLLM serves it): skipped in vLLM mode. */
  ftOnly?: string;
}

const completion = (extra: Record<string, unknown>): Record<string, unknown> => ({
  model: MODEL,
  prompt: "hello there",
  max_tokens: 2,
  ...extra,
});
const chat = (extra: Record<string, unknown>): Record<string, unknown> => ({
  model: MODEL,
  messages: [{ role: "user", content: "hi" }],
  max_tokens: 2,
  ...extra,
});
const kserve = (inputs: unknown[]): Record<string, unknown> => ({ inputs });
const text = (value: string[]): Record<string, unknown> => ({
  name: "text_input",
  datatype: "BYTES",
  shape: [value.length, 1],
  data: value,
});
const maxTokens = (v: number[]): Record<string, unknown> => ({
  name: "max_tokens",
  datatype: "UINT32",
  shape: [v.length, 1],
  data: v,
});

// The binary tensor data extension: a JSON header, then raw tensors (BYTES elements with 4-byte LE lengths).
const bytesTensor = (values: (string | Buffer)[]): Buffer =>
  Buffer.concat(
    values.flatMap((v) => {
      const b = typeof v === "string" ? Buffer.from(v, "utf8") : v;
      const n = Buffer.alloc(4);
      n.writeUInt32LE(b.length);
      return [n, b];
    }),
  );
const u32 = (values: number[]): Buffer => {
  const b = Buffer.alloc(4 * values.length);
  values.forEach((v, i) => b.writeUInt32LE(v, 4 * i));
  return b;
};
const binaryInput = (name: string, datatype: string, raw: Buffer, size = raw.length): Record<string, unknown> => ({
  name,
  datatype,
  shape: [1, 1],
  parameters: { binary_data_size: size },
});
/** A binary body: header JSON + tensors; `headerLength` overrides the header's true length. */
const binary = (
  header: Record<string, unknown>,
  tail: Buffer[],
  headerLength?: string,
): Pick<Case, "bytes" | "headers" | "path"> => {
  const json = Buffer.from(JSON.stringify(header));
  return {
    path: `/v2/models/${MODEL}/infer`,
    bytes: Buffer.concat([json, ...tail]),
    headers: {
      "content-type": "application/octet-stream",
      "inference-header-content-length": headerLength ?? String(json.length),
    },
  };
};
const PROMPT = bytesTensor(["hello there"]);
const TWO = u32([2]);
/** A well-formed binary request; the cases below break one thing each. */
const goodBinary = (tail = [PROMPT, TWO]): Record<string, unknown> => ({
  inputs: [binaryInput("text_input", "BYTES", tail[0]), binaryInput("max_tokens", "UINT32", tail[1])],
});

const HUGE = "x".repeat(h.model.maxInputLen * 32 + 1);
const FIVE_MB = "word ".repeat(1_000_000);

const CASES: Case[] = [
  // --- authentication
  { name: "no Authorization header", auth: null, body: completion({}), status: 401, code: "invalid_api_key" },
  { name: "wrong key", auth: "Bearer tft-not-a-real-key", body: completion({}), status: 401, code: "invalid_api_key" },
  {
    name: "Basic instead of Bearer",
    auth: `Basic ${Buffer.from("a:b").toString("base64")}`,
    body: completion({}),
    status: 401,
  },
  { name: "Bearer without a key", auth: "Bearer ", body: completion({}), status: 401 },
  {
    name: "key of another gateway's config",
    auth: `Bearer ${h.plain.keys["team-a"]}`,
    body: completion({}),
    status: 401,
  },
  { name: "no key on /v1/models", auth: null, method: "GET", path: "/v1/models", status: 401 },
  { name: "no key on KServe metadata", auth: null, method: "GET", path: `/v2/models/${MODEL}`, status: 401 },
  // --- body and media type
  { name: "malformed JSON", raw: '{"model": ', status: 400, code: "invalid_json" },
  {
    name: "NaN literal (not JSON)",
    raw: `{"model": "${MODEL}", "prompt": "x", "temperature": NaN}`,
    status: 400,
    code: "invalid_json",
  },
  { name: "JSON array body", body: [1, 2], status: 400, code: "invalid_body" },
  { name: "text/plain body", raw: "hello", headers: { "content-type": "text/plain" }, status: 415 },
  {
    name: "body above the limit",
    raw: JSON.stringify(completion({ prompt: "y".repeat(8_000_000) })),
    status: 413,
    code: "body_too_large",
  },
  // --- model
  { name: "missing model", body: { prompt: "x" }, status: 400, code: "missing_required_parameter", param: "model" },
  { name: "wrong model", body: completion({ model: "gpt-4" }), status: 404, code: "model_not_found", param: "model" },
  { name: "model not a string", body: completion({ model: 7 }), status: 400, param: "model" },
  // --- prompt
  { name: "missing prompt", body: { model: MODEL }, status: 400, param: "prompt" },
  { name: "empty prompt", body: completion({ prompt: "" }), status: 400, param: "prompt" },
  { name: "prompt is a number", body: completion({ prompt: 42 }), status: 400, param: "prompt" },
  { name: "token-id prompt", body: completion({ prompt: [1, 2, 3] }), status: 400, param: "prompt" },
  { name: "prompt object", body: completion({ prompt: { text: "x" } }), status: 400, param: "prompt" },
  { name: "empty prompt array", body: completion({ prompt: [] }), status: 400, param: "prompt" },
  {
    name: "more prompts than the batch",
    body: completion({ prompt: Array(h.model.maxBatchSize + 1).fill("x") }),
    status: 400,
    param: "prompt",
  },
  {
    name: "prompt over the byte cap",
    body: completion({ prompt: HUGE }),
    status: 400,
    code: "context_length_exceeded",
    param: "prompt",
  },
  { name: "5 MB prompt", raw: JSON.stringify(completion({ prompt: FIVE_MB })), status: 413 },
  {
    name: "prompt over max_input_len tokens",
    body: completion({ prompt: "word ".repeat(h.model.maxInputLen + 8) }),
    status: 400,
    code: "context_length_exceeded",
  },
  // --- max_tokens
  { name: "max_tokens -1", body: completion({ max_tokens: -1 }), status: 400, param: "max_tokens" },
  { name: "max_tokens 0", body: completion({ max_tokens: 0 }), status: 400, param: "max_tokens" },
  { name: 'max_tokens "4"', body: completion({ max_tokens: "4" }), status: 400, param: "max_tokens" },
  { name: "max_tokens 1.5", body: completion({ max_tokens: 1.5 }), status: 400, param: "max_tokens" },
  {
    name: "max_tokens above the limit",
    body: completion({ max_tokens: h.model.maxOutputLen + 1 }),
    status: 400,
    param: "max_tokens",
  },
  { name: "max_tokens 2000", body: completion({ max_tokens: 2000 }), status: 400, param: "max_tokens" },
  {
    name: "max_tokens 1e999 (Infinity)",
    raw: `{"model":"${MODEL}","prompt":"x","max_tokens":1e999}`,
    status: 400,
    param: "max_tokens",
  },
  // --- sampling
  { name: "temperature -0.1", body: completion({ temperature: -0.1 }), status: 400, param: "temperature" },
  { name: "temperature 2.5", body: completion({ temperature: 2.5 }), status: 400, param: "temperature" },
  {
    name: "temperature -1e999 (-Infinity)",
    raw: `{"model":"${MODEL}","prompt":"x","temperature":-1e999}`,
    status: 400,
    param: "temperature",
  },
  { name: "temperature a string", body: completion({ temperature: "hot" }), status: 400, param: "temperature" },
  { name: "top_p 0", body: completion({ top_p: 0 }), status: 400, param: "top_p" },
  { name: "top_p 1.01", body: completion({ top_p: 1.01 }), status: 400, param: "top_p" },
  { name: "top_p 1e999", raw: `{"model":"${MODEL}","prompt":"x","top_p":1e999}`, status: 400, param: "top_p" },
  { name: "top_k beyond the vocabulary", body: completion({ top_k: h.model.vocab + 1 }), status: 400, param: "top_k" },
  { name: "top_k 4294967295", body: completion({ top_k: 4294967295 }), status: 400, param: "top_k" },
  { name: "top_k -1", body: completion({ top_k: -1 }), status: 400, param: "top_k" },
  {
    name: "repetition_penalty 0",
    body: completion({ repetition_penalty: 0 }),
    status: 400,
    param: "repetition_penalty",
  },
  {
    name: "repetition_penalty 1e999",
    raw: `{"model":"${MODEL}","prompt":"x","repetition_penalty":1e999}`,
    status: 400,
    param: "repetition_penalty",
  },
  { name: "seed -1", body: completion({ seed: -1 }), status: 400, param: "seed" },
  { name: "seed 2^64", body: completion({ seed: 18446744073709551616 }), status: 400, param: "seed" },
  { name: "seed 1.5", body: completion({ seed: 1.5 }), status: 400, param: "seed" },
  { name: "n above the batch", body: completion({ n: h.model.maxBatchSize + 1 }), status: 400, param: "n" },
  { name: "best_of below n", body: completion({ n: 3, best_of: 2 }), status: 400, param: "best_of" },
  { name: "best_of streamed", body: completion({ best_of: 2, stream: true }), status: 400, param: "best_of" },
  { name: "echo with logprobs", body: completion({ echo: true, logprobs: 0 }), status: 400, param: "echo" },
  {
    name: `logprobs ${TOO_MANY_LOGPROBS}`,
    body: completion({ logprobs: TOO_MANY_LOGPROBS }),
    status: 400,
    param: "logprobs",
  },
  { name: "presence_penalty 3", body: completion({ presence_penalty: 3 }), status: 400, param: "presence_penalty" },
  {
    name: "presence_penalty with repetition_penalty",
    body: completion({ presence_penalty: 1, repetition_penalty: 1.2 }),
    status: 400,
    param: "presence_penalty",
    ftOnly: "FT applies one penalty per request; vLLM applies both",
  },
  {
    name: "frequency_penalty 1",
    body: completion({ frequency_penalty: 1 }),
    status: 400,
    param: "frequency_penalty",
    code: "unsupported_parameter",
  },
  { name: "suffix", body: completion({ suffix: "x" }), status: 400, param: "suffix", code: "unsupported_parameter" },
  { name: "logit_bias", body: completion({ logit_bias: { "1": 5 } }), status: 400, param: "logit_bias" },
  { name: "user of 300 characters", body: completion({ user: "u".repeat(300) }), status: 400, param: "user" },
  {
    name: "unknown field",
    body: completion({ temprature: 0.5 }),
    status: 400,
    code: "unknown_parameter",
    param: "temprature",
  },
  { name: "stream not a boolean", body: completion({ stream: "yes" }), status: 400, param: "stream" },
  {
    name: "stream_options without stream",
    body: completion({ stream_options: { include_usage: true } }),
    status: 400,
    param: "stream_options",
  },
  // --- stop
  { name: "stop list of 5", body: completion({ stop: ["a", "b", "c", "d", "e"] }), status: 400, param: "stop" },
  { name: "huge stop list", body: completion({ stop: Array(10_000).fill("x") }), status: 400, param: "stop" },
  { name: "stop sequence of 300 bytes", body: completion({ stop: ["z".repeat(300)] }), status: 400, param: "stop" },
  { name: "empty stop sequence", body: completion({ stop: [""] }), status: 400, param: "stop" },
  { name: "stop not strings", body: completion({ stop: [1] }), status: 400, param: "stop" },
  // --- chat
  {
    name: "chat without messages",
    path: "/v1/chat/completions",
    body: { model: MODEL },
    status: 400,
    param: "messages",
  },
  {
    name: "chat with empty messages",
    path: "/v1/chat/completions",
    body: chat({ messages: [] }),
    status: 400,
    param: "messages",
  },
  {
    name: "chat with a bad role",
    path: "/v1/chat/completions",
    body: chat({ messages: [{ role: "wizard", content: "x" }] }),
    status: 400,
    param: "messages",
  },
  {
    name: "chat with image content",
    path: "/v1/chat/completions",
    body: chat({ messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: "x" } }] }] }),
    status: 400,
    param: "messages",
  },
  {
    name: "chat with tools",
    path: "/v1/chat/completions",
    body: chat({ tools: [{ type: "function", function: { name: "f" } }] }),
    status: 400,
    param: "tools",
  },
  {
    name: "chat with response_format json_object",
    path: "/v1/chat/completions",
    body: chat({ response_format: { type: "json_object" } }),
    status: 400,
    param: "response_format",
  },
  {
    name: `chat with top_logprobs ${TOO_MANY_LOGPROBS}`,
    path: "/v1/chat/completions",
    body: chat({ logprobs: true, top_logprobs: TOO_MANY_LOGPROBS }),
    status: 400,
    param: "top_logprobs",
  },
  {
    name: "chat with metadata (an OpenAI field not served)",
    path: "/v1/chat/completions",
    body: chat({ metadata: { a: "b" } }),
    status: 400,
    code: "unknown_parameter",
    param: "metadata",
  },
  {
    name: "chat with only a system message",
    path: "/v1/chat/completions",
    body: chat({ messages: [{ role: "system", content: "x" }] }),
    status: 400,
    param: "messages",
  },
  {
    name: "chat over the byte cap",
    path: "/v1/chat/completions",
    body: chat({ messages: [{ role: "user", content: HUGE }] }),
    status: 400,
    code: "context_length_exceeded",
    param: "messages",
  },
  // --- routes: internal models and admin endpoints are not reachable
  { name: "unknown /v1 route", method: "GET", path: "/v1/engines", status: 404 },
  { name: "GET on completions", method: "GET", path: "/v1/completions", status: 404 },
  {
    name: "direct call to fastertransformer",
    path: "/v2/models/fastertransformer/infer",
    body: kserve([]),
    status: 404,
  },
  { name: "direct call to preprocessing", path: "/v2/models/preprocessing/infer", body: kserve([]), status: 404 },
  { name: "postprocessing metadata", method: "GET", path: "/v2/models/postprocessing", status: 404 },
  // KServe paths name the model by its OpenAI id: the ensemble's name inside Triton is no route.
  { name: "the ensemble by its Triton name", path: "/v2/models/ensemble/infer", body: kserve([]), status: 404 },
  { name: "admin: log settings", path: "/v2/logging", body: { log_verbose_level: 5 }, status: 404 },
  { name: "admin: repository index", path: "/v2/repository/index", body: {}, status: 404 },
  { name: "admin: unload a model", path: "/v2/repository/models/ensemble/unload", body: {}, status: 404 },
  { name: "admin: trace settings", path: "/v2/trace/setting", body: { trace_level: ["TIMESTAMPS"] }, status: 404 },
  { name: "admin: shared memory", method: "GET", path: "/v2/systemsharedmemory/status", status: 404 },
  { name: "metrics not on the API port", method: "GET", path: "/metrics", status: 404 },
  // --- KServe v2 infer on the model's ensemble
  { name: "kserve: missing max_tokens", path: `/v2/models/${MODEL}/infer`, body: kserve([text(["x"])]), status: 400 },
  {
    name: "kserve: token id far beyond the vocab as max_tokens",
    path: `/v2/models/${MODEL}/infer`,
    body: kserve([text(["x"]), maxTokens([2000])]),
    status: 400,
  },
  {
    name: "kserve: wrong datatype",
    path: `/v2/models/${MODEL}/infer`,
    body: kserve([{ ...text(["x"]), datatype: "INT32" }, maxTokens([2])]),
    status: 400,
  },
  {
    name: "kserve: internal tensor name",
    path: `/v2/models/${MODEL}/infer`,
    body: kserve([
      text(["x"]),
      maxTokens([2]),
      { name: "input_ids", datatype: "UINT32", shape: [1, 1], data: [999999] },
    ]),
    status: 400,
  },
  {
    name: "kserve: temperature 0",
    path: `/v2/models/${MODEL}/infer`,
    body: kserve([text(["x"]), maxTokens([2]), { name: "temperature", datatype: "FP32", shape: [1, 1], data: [0] }]),
    status: 400,
  },
  {
    name: "kserve: shape/data mismatch",
    path: `/v2/models/${MODEL}/infer`,
    body: kserve([{ ...text(["x", "y"]), shape: [1, 1] }, maxTokens([2])]),
    status: 400,
  },
  {
    name: "kserve: header length cuts the JSON",
    path: `/v2/models/${MODEL}/infer`,
    body: kserve([text(["x"]), maxTokens([2])]),
    headers: { "content-type": "application/json", "inference-header-content-length": "10" },
    status: 400,
    message: /JSON header is not valid JSON/,
  },
  // --- KServe v2 binary tensor data extension (tritonclient's default)
  {
    name: "binary: header length beyond the body",
    ...binary(goodBinary(), [PROMPT, TWO], "100000"),
    status: 400,
    message: /Inference-Header-Content-Length is 100000 but the body has \d+ bytes/,
  },
  {
    name: "binary: header length not a number",
    ...binary(goodBinary(), [PROMPT, TWO], "12abc"),
    status: 400,
    message: /one decimal byte count/,
  },
  {
    name: "binary: header length 0",
    ...binary(goodBinary(), [PROMPT, TWO], "0"),
    status: 400,
    message: /Inference-Header-Content-Length is 0/,
  },
  {
    name: "binary: binary_data_size runs past the body",
    ...binary({ inputs: [binaryInput("text_input", "BYTES", PROMPT), binaryInput("max_tokens", "UINT32", TWO, 400)] }, [
      PROMPT,
      TWO,
    ]),
    status: 400,
    message: /binary_data_size 400 runs past the end of the body/,
  },
  {
    name: "binary: bytes left after the last input",
    ...binary(goodBinary(), [PROMPT, TWO, Buffer.from("trailing")]),
    status: 400,
    message: /8 bytes after the last input's binary data/,
  },
  {
    name: "binary: BYTES length prefix beyond its tensor",
    ...binary(goodBinary([Buffer.concat([u32([1000]), Buffer.from("short")]), TWO]), [
      Buffer.concat([u32([1000]), Buffer.from("short")]),
      TWO,
    ]),
    status: 400,
    message: /claims 1000 bytes, 5 are left/,
  },
  {
    name: "binary: UINT32 tensor of 3 bytes",
    ...binary(goodBinary([PROMPT, Buffer.from([2, 0, 0])]), [PROMPT, Buffer.from([2, 0, 0])]),
    status: 400,
    message: /3 bytes for 1 UINT32 elements/,
  },
  {
    name: "binary: prompt not UTF-8",
    ...binary(goodBinary([bytesTensor([Buffer.from([0xc3, 0x28, 0xff])]), TWO]), [
      bytesTensor([Buffer.from([0xc3, 0x28, 0xff])]),
      TWO,
    ]),
    status: 400,
    message: /not valid UTF-8/,
  },
  {
    name: "binary: NaN temperature as FP32 bytes",
    ...binary(
      {
        inputs: [
          ...(goodBinary().inputs as unknown[]),
          binaryInput("temperature", "FP32", Buffer.from(new Float32Array([Number.NaN]).buffer)),
        ],
      },
      [PROMPT, TWO, Buffer.from(new Float32Array([Number.NaN]).buffer)],
    ),
    status: 400,
    message: /temperature.*finite/,
  },
  {
    name: "binary: both data and binary_data_size",
    ...binary(
      {
        inputs: [
          { ...binaryInput("text_input", "BYTES", PROMPT), data: ["x"] },
          binaryInput("max_tokens", "UINT32", TWO),
        ],
      },
      [PROMPT, TWO],
    ),
    status: 400,
    message: /either data or binary_data_size/,
  },
  {
    name: "binary: binary_data_size without the header",
    path: `/v2/models/${MODEL}/infer`,
    body: { inputs: [text(["x"]), { ...maxTokens([2]), data: undefined, parameters: { binary_data_size: 4 } }] },
    status: 400,
    message: /needs the binary body format/,
  },
  {
    name: "kserve: shared-memory input",
    path: `/v2/models/${MODEL}/infer`,
    body: kserve([
      { ...text(["x"]), parameters: { shared_memory_region: "r", shared_memory_byte_size: 8 } },
      maxTokens([2]),
    ]),
    status: 400,
    message: /shared_memory_region' is not supported/,
  },
  {
    name: "kserve: request priority parameter",
    path: `/v2/models/${MODEL}/infer`,
    body: { ...kserve([text(["x"]), maxTokens([2])]), parameters: { priority: 1 } },
    status: 400,
    message: /'priority' is not supported/,
  },
  {
    name: "kserve: text/plain infer body",
    path: `/v2/models/${MODEL}/infer`,
    raw: JSON.stringify(kserve([text(["x"]), maxTokens([2])])),
    headers: { "content-type": "text/plain" },
    status: 415,
  },
  {
    name: "binary: gzip body that does not decompress",
    ...binary(goodBinary(), [PROMPT, TWO]),
    headers: { "content-type": "application/octet-stream", "content-encoding": "gzip" },
    status: 400,
    message: /gzip body does not decompress/,
  },
  {
    name: "kserve: huge prompt",
    path: `/v2/models/${MODEL}/infer`,
    body: kserve([text([HUGE]), maxTokens([2])]),
    status: 413,
  },
];

async function call(c: Case): Promise<{ status: number; body: unknown; headers: Headers }> {
  const headers: Record<string, string> = { "content-type": "application/json", ...(c.headers ?? {}) };
  if (c.auth !== null) headers.authorization = c.auth ?? `Bearer ${KEY}`;
  const method = c.method ?? "POST";
  const response = await fetch(`${BASE}${c.path ?? "/v1/completions"}`, {
    method,
    headers:
      method === "GET" ? Object.fromEntries(Object.entries(headers).filter(([k]) => k !== "content-type")) : headers,
    body: method === "GET" ? undefined : (c.bytes ?? c.raw ?? JSON.stringify(c.body ?? {})),
  });
  const textBody = await response.text();
  let body: unknown = textBody;
  try {
    body = JSON.parse(textBody);
  } catch {
    // not JSON: the assertion below reports it
  }
  return { status: response.status, body, headers: response.headers };
}

async function normalRequestSucceeds(): Promise<void> {
  const r = await call({ name: "normal", body: completion({ max_tokens: 2, temperature: 0 }), status: 200 });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  expect((r.body as { choices: unknown[] }).choices).toHaveLength(1);
}

describe("bad-request catalogue", () => {
  it(`has at least 40 entries (${CASES.length})`, () => {
    expect(CASES.length).toBeGreaterThanOrEqual(40);
    expect(new Set(CASES.map((c) => c.name)).size).toBe(CASES.length);
  });

  for (const c of CASES) {
    // A refusal FT alone makes is not one on vLLM (c.ftOnly says why).
    it.skipIf(h.upstream === "vllm" && c.ftOnly !== undefined)(
      `${c.name} -> ${c.status}${c.code ? ` ${c.code}` : ""}, then a normal request succeeds`,
      async () => {
        const r = await call(c);
        expect(r.status, JSON.stringify(r.body).slice(0, 300)).toBe(c.status);
        const path = c.path ?? "/v1/completions";
        if (path.startsWith("/v2/")) {
          expect(typeof (r.body as { error: unknown }).error).toBe("string");
          if (c.message) expect((r.body as { error: string }).error).toMatch(c.message);
        } else {
          const error = (r.body as { error: { message: string; type: string; param: unknown; code: unknown } }).error;
          expect(error, JSON.stringify(r.body)).toBeDefined();
          expect(typeof error.message).toBe("string");
          expect(error.message.length).toBeGreaterThan(5);
          expect(typeof error.type).toBe("string");
          expect(error).toHaveProperty("param");
          expect(error).toHaveProperty("code");
          if (c.code) expect(error.code).toBe(c.code);
          if (c.param) expect(error.param).toBe(c.param);
        }
        await normalRequestSucceeds();
      },
    );
  }
});
