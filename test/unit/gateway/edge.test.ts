/**
 * The gateway's pure parts: key checking, admission (rate and concurrency),
 * the mapping of Triton errors to client-visible statuses, request
 * validation and chat templating, and the config rendered by the stack
 * (it must parse with the gateway's own strict schema).
 */
import { status as GrpcStatus, type ServiceError, Metadata } from "@grpc/grpc-js";
import { describe, expect, it } from "vitest";
import { KeyRing, sha256Hex } from "../../../images/gateway/src/auth/keyRing";
import { GatewayConfigSchema, KeysFileSchema, type GatewayConfig } from "../../../images/gateway/src/config";
import { ApiError } from "../../../images/gateway/src/server/apiError";
import { ensembleInputs } from "../../../images/gateway/src/openai/generate";
import { parseInferRequest, splitInferBody } from "../../../images/gateway/src/kserve/inferProtocol";
import { Admission } from "../../../images/gateway/src/admission/podAdmission";
import { classifyGrpcError, classifyTritonMessage } from "../../../images/gateway/src/triton/tritonClient";
import { parseChat, parseCompletion, renderChat } from "../../../images/gateway/src/openai/validate";
import { MODEL_PRESETS, findPreset } from "../../../infra/model/catalog";
import { renderGatewayConfig } from "../../../infra/plan/gatewayConfig";
import { maxPromptBytes } from "../../../infra/plan/modelRepository";

import { ENSEMBLE_MODEL } from "../../../infra/conventions/workload";
const MODEL = { id: "m", maxInputLen: 512, maxOutputLen: 256, maxBatchSize: 8, vocab: 50400 };
const ROUTE = { tritonGrpc: "triton:8001", maxInflight: 16 };
const config: GatewayConfig = GatewayConfigSchema.parse(renderGatewayConfig([{ ...MODEL, ...ROUTE }]));
/** What a request for model m is checked against. */
const rules = { model: config.models[0], limits: config.limits };

function refusal(fn: () => unknown): ApiError {
  try {
    fn();
  } catch (e) {
    if (e instanceof ApiError) return e;
    throw e;
  }
  throw new Error("no refusal");
}

describe("KeyRing", () => {
  const keys = {
    consumers: [
      { name: "team-a", keySha256: [sha256Hex("old-key"), sha256Hex("new-key")] },
      { name: "team-b", keySha256: [sha256Hex("b-key")] },
    ],
  };
  const ring = new KeyRing(KeysFileSchema.parse(keys));

  it("maps a bearer key to its consumer; both keys work during a rotation", () => {
    expect(ring.authenticate("Bearer old-key")?.name).toBe("team-a");
    expect(ring.authenticate("Bearer new-key")?.name).toBe("team-a");
    expect(ring.authenticate("Bearer b-key")?.name).toBe("team-b");
  });

  it("refuses missing, malformed and unknown keys", () => {
    for (const header of [
      undefined,
      "",
      "Bearer",
      "Bearer ",
      "bearer b-key",
      "Basic b-key",
      "Bearer b-key extra",
      "Bearer b-keyx",
      `Bearer ${"x".repeat(600)}`,
    ]) {
      expect(ring.authenticate(header), String(header)).toBeUndefined();
    }
  });

  it("stops accepting a removed key after a reload", () => {
    const rotated = new KeyRing(KeysFileSchema.parse(keys));
    rotated.replace(KeysFileSchema.parse({ consumers: [{ name: "team-a", keySha256: [sha256Hex("new-key")] }] }));
    expect(rotated.authenticate("Bearer old-key")).toBeUndefined();
    expect(rotated.authenticate("Bearer new-key")?.name).toBe("team-a");
  });

  it("reads a consumer's model scope; an empty scope is refused (a key for no model is a slip)", () => {
    const consumer = { name: "team-a", keySha256: [sha256Hex("k")] };
    expect(KeysFileSchema.parse({ consumers: [{ ...consumer, models: ["m"] }] }).consumers[0].models).toEqual(["m"]);
    expect(KeysFileSchema.safeParse({ consumers: [{ ...consumer, models: [] }] }).success).toBe(false);
  });

  it("keeps only hashes", () => {
    expect(JSON.stringify(ring)).not.toContain("old-key");
  });
});

// A team's own limits (rate, tokens, concurrency) in both modes: admission.test.ts.
describe("the pod's capacity (Admission.hold)", () => {
  it("answers 503 with Retry-After when a key above its fair share finds the gateway-wide cap reached", () => {
    const a = new Admission(2, () => 2);
    a.hold("a", {});
    a.hold("a", {});
    const e = refusal(() => a.hold("a", {}));
    expect([e.status, e.retryAfter]).toEqual([503, 1]);
    expect(e.message).toContain("above its fair share of 1");
  });

  it("four teams saturating the gateway do not keep an idle fifth team out; its share is by weight", () => {
    // Cap 20, five teams of share 1 (fair share 4 each), the fifth idle until the others fill the gateway.
    const a = new Admission(20, () => 5);
    for (const team of ["a", "b", "c", "d"]) for (let i = 0; i < 5; i++) a.hold(team, {});
    expect(a.inFlight).toBe(20);
    expect(refusal(() => a.hold("a", {})).status).toBe(503);
    for (let i = 0; i < 4; i++) a.hold("idle", {});
    expect(refusal(() => a.hold("idle", {})).status).toBe(503);
    // A weight of 3 in a total of 7 is 3/7 of the cap.
    expect(new Admission(14, () => 7).fairShare({ share: 3 })).toBe(6);
  });

  it("caps each model's generations at its own maxInflight, in fair shares; another model's capacity is untouched", () => {
    // Gateway cap far above the models': only the model caps bind. Two teams of share 1.
    const a = new Admission(100, () => 2);
    const small = { id: "small", maxInflight: 2 };
    const large = { id: "large", maxInflight: 8 };
    a.hold("a", {}, 1, small);
    const second = a.hold("a", {}, 1, small);
    expect(a.inFlightTo("small")).toBe(2);
    const e = refusal(() => a.hold("a", {}, 1, small));
    expect([e.status, e.code, e.retryAfter]).toEqual([503, "overloaded", 1]);
    expect(e.message).toBe(
      "the model 'small' has 2 generations in flight, its limit is 2; this key has 2 there, above its fair share of 1",
    );
    // Team b is within its share of small (1 of 2): admitted although small is full.
    a.hold("b", {}, 1, small);
    // The other model has its own cap: team a is not held back there.
    for (let i = 0; i < 8; i++) a.hold("a", {}, 1, large);
    expect(a.inFlightTo("large")).toBe(8);
    void second.release();
    void second.release();
    expect(a.inFlightTo("small")).toBe(2);
  });
});

describe("Triton errors", () => {
  it("maps a full queue to 503 with Retry-After", () => {
    const e = classifyTritonMessage("in ensemble 'ensemble', Exceeds maximum queue size");
    expect([e.status, e.retryAfter]).toEqual([503, 1]);
  });

  it("maps the tokenizer's length refusal to 400 context_length_exceeded, other model refusals to 400", () => {
    expect(classifyTritonMessage("text_input[0]: prompt is 600 tokens, more than max_input_len=512").code).toBe(
      "context_length_exceeded",
    );
    expect(classifyTritonMessage("temperature[0] is nan: must be finite").status).toBe(400);
    expect(classifyTritonMessage("text_input[0]: prompt is 9 bytes, more than max_prompt_bytes=8").status).toBe(413);
  });

  it("maps a model Triton is loading or unloading (starting, stopping) to 503 upstream_unavailable, its text only logged", () => {
    for (const message of [
      "Request for unknown model: 'small_ensemble' has no available versions",
      "in ensemble 'ensemble', Request for unknown model: 'fastertransformer' version 1 is not at ready state",
    ]) {
      const e = classifyTritonMessage(message);
      expect([e.status, e.code, e.retryAfter, e.message], message).toEqual([
        503,
        "upstream_unavailable",
        2,
        "the inference server is unavailable",
      ]);
      expect(e.detail).toContain("Request for unknown model");
    }
    // A model Triton has never heard of is a wiring fault, not a passing state.
    expect(classifyTritonMessage("Request for unknown model: 'nope' is not found").status).toBe(502);
  });

  it("never blames the client for a server fault", () => {
    expect(classifyTritonMessage("CUDA error: an illegal memory access").status).toBe(502);
    const grpc = (code: GrpcStatus): ServiceError =>
      Object.assign(new Error("x"), { code, details: "x", metadata: new Metadata() });
    expect(classifyGrpcError(grpc(GrpcStatus.UNAVAILABLE), 10).status).toBe(503);
    expect(classifyGrpcError(grpc(GrpcStatus.RESOURCE_EXHAUSTED), 10).status).toBe(503);
    expect(classifyGrpcError(grpc(GrpcStatus.DEADLINE_EXCEEDED), 10).status).toBe(504);
    expect(classifyGrpcError(grpc(GrpcStatus.INTERNAL), 10).status).toBe(502);
  });
});

describe("request validation", () => {
  it("defaults to OpenAI's sampling: full distribution at temperature 1, 16 tokens", () => {
    const r = parseCompletion({ model: "m", prompt: "x" }, rules);
    expect(r.sampling).toMatchObject({ maxTokens: 16, temperature: 1, topP: 1, topK: 0, stop: [] });
    const t = Object.fromEntries(ensembleInputs("x", r.sampling).map((i) => [i.name, i.data[0]]));
    expect(t).toMatchObject({ top_k: 0, top_p: 1, temperature: 1, max_tokens: 16 });
    expect(typeof t.random_seed).toBe("bigint");
  });

  it("maps temperature 0 to greedy decoding with seed 0", () => {
    const r = parseCompletion({ model: "m", prompt: "x", temperature: 0, top_k: 40 }, rules);
    const t = Object.fromEntries(ensembleInputs("x", r.sampling).map((i) => [i.name, i.data[0]]));
    expect(t).toMatchObject({ top_k: 1, temperature: 1, random_seed: 0n });
  });

  it("checks the prompt's bytes against the cap the model repository uses (400 context_length_exceeded)", () => {
    expect(rules.model.maxPromptBytes).toBe(maxPromptBytes(512));
    parseCompletion({ model: "m", prompt: "é".repeat(maxPromptBytes(512) / 2) }, rules);
    const e = refusal(() => parseCompletion({ model: "m", prompt: `${"é".repeat(maxPromptBytes(512) / 2)}x` }, rules));
    expect([e.status, e.code]).toEqual([400, "context_length_exceeded"]);
  });

  it("passes stop sequences to Triton as stop_words", () => {
    const r = parseCompletion({ model: "m", prompt: "x", stop: "\n" }, rules);
    expect(ensembleInputs("x", r.sampling).find((i) => i.name === "stop_words")?.data).toEqual(["\n"]);
  });
});

describe("chat templates", () => {
  const h2o = findPreset("h2ogpt-oig-oasst1-512-6_9b")?.chatTemplate;

  it("only presets fine-tuned on a conversation format declare one", () => {
    expect(MODEL_PRESETS.filter((p) => p.chatTemplate).map((p) => p.name)).toEqual(["h2ogpt-oig-oasst1-512-6_9b"]);
  });

  it("renders h2oGPT's human_bot format, ending with the bot prefix", () => {
    expect(h2o).toBeDefined();
    const prompt = renderChat(
      [
        { role: "system", content: "Be brief." },
        { role: "user", content: "Hi" },
        { role: "assistant", content: "Hello!" },
        { role: "user", content: "Bye" },
      ],
      h2o!,
    );
    expect(prompt).toBe("<human>: Be brief.\nHi\n<bot>: Hello!\n<human>: Bye\n<bot>:");
  });

  it("adds the template's stop sequences and refuses chat without a template (404)", () => {
    const withTemplate = GatewayConfigSchema.parse(renderGatewayConfig([{ ...MODEL, ...ROUTE, chatTemplate: h2o }]));
    const r = parseChat(
      { model: "m", messages: [{ role: "user", content: "x" }], stop: "###" },
      { model: withTemplate.models[0], limits: withTemplate.limits },
    );
    expect(r.sampling.stop).toEqual(["###", "<human>:", "<bot>:"]);
    expect(refusal(() => parseChat({ model: "m", messages: [{ role: "user", content: "x" }] }, rules)).status).toBe(
      404,
    );
  });
});

describe("rendered gateway config", () => {
  it("parses with the gateway's strict schema for every preset's limits", () => {
    for (const preset of MODEL_PRESETS) {
      const rendered = renderGatewayConfig([
        { ...MODEL, ...ROUTE, id: preset.name, vocab: preset.arch.vocab, chatTemplate: preset.chatTemplate },
      ]);
      expect(() => GatewayConfigSchema.parse(JSON.parse(JSON.stringify(rendered)))).not.toThrow();
    }
  });

  it("targets the one ensemble name, which the gateway image also defaults to (it cannot import infra/)", () => {
    const rendered = renderGatewayConfig([{ ...MODEL, ...ROUTE }]);
    expect(rendered.models[0].triton.ensemble).toBe(ENSEMBLE_MODEL);
    const [model] = rendered.models;
    const withoutEnsemble = { ...rendered, models: [{ ...model, triton: { grpc: model.triton.grpc } }] };
    expect(GatewayConfigSchema.parse(withoutEnsemble).models[0].triton.ensemble).toBe(ENSEMBLE_MODEL);
  });

  it("leaves room in the body limit for the largest prompt, JSON-escaped, for a full batch", () => {
    expect(config.limits.bodyBytes).toBeGreaterThanOrEqual(6 * rules.model.maxPromptBytes * MODEL.maxBatchSize);
  });

  it("routes each model to its own Triton with its own cap; the gateway-wide limits cover the largest model and the sum of caps", () => {
    const small = { ...MODEL, id: "small", maxInputLen: 64, maxBatchSize: 2, tritonGrpc: "small:8001", maxInflight: 4 };
    const large = {
      ...MODEL,
      id: "large",
      maxInputLen: 2048,
      maxBatchSize: 16,
      tritonGrpc: "large:8001",
      maxInflight: 32,
    };
    const rendered = GatewayConfigSchema.parse(renderGatewayConfig([small, large]));
    expect(rendered.models.map((m) => [m.id, m.triton.grpc, m.maxInflight, m.maxPromptBytes])).toEqual([
      ["small", "small:8001", 4, maxPromptBytes(64)],
      ["large", "large:8001", 32, maxPromptBytes(2048)],
    ]);
    expect(rendered.limits.maxInflight).toBe(36);
    expect(rendered.limits.maxConcurrent).toBe(16);
    expect(rendered.limits.bodyBytes).toBeGreaterThanOrEqual(6 * maxPromptBytes(2048) * 16);
    expect(() => renderGatewayConfig([])).toThrow(/at least one model/);
  });

  it("refuses a config that lists one model id twice, or none", () => {
    const rendered = renderGatewayConfig([{ ...MODEL, ...ROUTE }]);
    const twice = GatewayConfigSchema.safeParse({ ...rendered, models: [rendered.models[0], rendered.models[0]] });
    expect(twice.error?.issues.map((i) => [i.path.join("."), i.message])).toEqual([
      ["models.1.id", "model m is listed twice"],
    ]);
    expect(GatewayConfigSchema.safeParse({ ...rendered, models: [] }).success).toBe(false);
  });

  it("refuses a model id that cannot be one path segment of /v2/models/<id>", () => {
    const rendered = renderGatewayConfig([{ ...MODEL, ...ROUTE, id: "org/model" }]);
    expect(GatewayConfigSchema.safeParse(rendered).error?.issues[0].path).toEqual(["models", 0, "id"]);
  });
});

describe("KServe v2 binary tensor data extension", () => {
  const u64 = (v: bigint): Buffer => {
    const b = Buffer.alloc(8);
    b.writeBigUInt64LE(v);
    return b;
  };
  const prompt = Buffer.concat([Buffer.from([5, 0, 0, 0]), Buffer.from("héllo".slice(0, 4), "utf8")]);
  const body = (seed: Buffer, extra = Buffer.alloc(0)): { bytes: Buffer; length: string } => {
    const header = Buffer.from(
      JSON.stringify({
        inputs: [
          { name: "text_input", datatype: "BYTES", shape: [1, 1], parameters: { binary_data_size: prompt.length } },
          { name: "max_tokens", datatype: "UINT32", shape: [1, 1], data: [3] },
          { name: "random_seed", datatype: "UINT64", shape: [1, 1], parameters: { binary_data_size: seed.length } },
        ],
        parameters: { binary_data_output: true },
      }),
    );
    return { bytes: Buffer.concat([header, prompt, seed, extra]), length: String(header.length) };
  };

  it("reads binary and JSON inputs together, exactly: a UINT64 seed above 2^53 survives", () => {
    const seed = 2n ** 63n + 7n;
    const { bytes, length } = body(u64(seed));
    const { header, binary } = splitInferBody(bytes, length);
    const parsed = parseInferRequest(header, rules, binary);
    expect(parsed.inputs.map((t) => [t.name, t.data[0]])).toEqual([
      ["text_input", "héll"],
      ["max_tokens", 3],
      ["random_seed", seed],
    ]);
    // binary_data_output: every output comes back as binary unless asked otherwise.
    expect(parsed.outputs.every((o) => o.binary)).toBe(true);
  });

  it("refuses lengths that do not add up, before reading past the body", () => {
    const { bytes, length } = body(u64(1n));
    expect(refusal(() => splitInferBody(bytes, String(bytes.length + 1))).status).toBe(400);
    expect(refusal(() => splitInferBody(bytes, "-3")).status).toBe(400);
    const short = body(Buffer.alloc(4));
    const s = splitInferBody(short.bytes, short.length);
    expect(refusal(() => parseInferRequest(s.header, rules, s.binary)).message).toMatch(/4 bytes for 1 UINT64/);
    const long = body(u64(1n), Buffer.from("x"));
    const l = splitInferBody(long.bytes, long.length);
    expect(refusal(() => parseInferRequest(l.header, rules, l.binary)).message).toMatch(/1 bytes after the last input/);
    const ok = splitInferBody(bytes, length);
    expect(() => parseInferRequest(ok.header, rules, ok.binary)).not.toThrow();
  });
});
