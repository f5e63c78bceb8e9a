/**
 * logprobs per engine, in process against the fake Triton (fakeTriton.ts): a
 * vLLM model (engine "vllm", maxLogprobs 5) returns each token's top
 * alternatives in OpenAI's shapes, streamed and not; an FT model keeps its
 * refusals, naming the engine; the config refuses alternatives on FT. The
 * same against a real vLLM tritonserver: test/vllm/gateway.test.ts.
 */
import { afterEach, describe, expect, it } from "vitest";
import { buildGateway } from "../../../images/gateway/src/app";
import { KeyRing, sha256Hex } from "../../../images/gateway/src/auth/keyRing";
import { GatewayConfigSchema } from "../../../images/gateway/src/config";
import { GatewayMetrics } from "../../../images/gateway/src/telemetry/metrics";
import { type Json, KEY, error, events, input, openaiCalls } from "./openaiCalls";
import { FakeTriton, alternatives, logprob, TEST_MODEL, token, VLLM_MODEL } from "./fakeTriton";

type FastifyInstance = ReturnType<typeof buildGateway>;

const open: FastifyInstance[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((app) => app.close()));
});

/** One gateway serving the FT model `m` and the vLLM model `v`, each on its own fake Triton. */
function gateway(): { app: FastifyInstance; ft: FakeTriton; vllm: FakeTriton } {
  const config = GatewayConfigSchema.parse({
    models: [TEST_MODEL, { ...VLLM_MODEL, triton: { grpc: "in-memory:8002" } }],
  });
  const keys = new KeyRing({ consumers: [{ name: "team-a", keySha256: [sha256Hex(KEY)] }] });
  const ft = new FakeTriton();
  const vllm = new FakeTriton();
  const tritons = new Map([
    [TEST_MODEL.id, ft],
    [VLLM_MODEL.id, vllm],
  ]);
  const app = buildGateway({ config, keys, tritons, metrics: new GatewayMetrics(), logger: false });
  open.push(app);
  return { app, ft, vllm };
}

const { complete, chat } = openaiCalls();
const f = Math.fround;

/** OpenAI's completions top_logprobs entry of the fake's token i with k alternatives (the sampled one among them). */
function topEntry(i: number, k: number): Record<string, number> {
  const out: Record<string, number> = Object.fromEntries(alternatives(i, k).map((a) => [a.text, f(a.logprob)]));
  out[token(i)] = f(logprob(i));
  return out;
}

describe("vLLM model: logprobs with top alternatives", () => {
  it("completions logprobs=3: sends top_logprobs 3 and returns per token its 3 alternatives", async () => {
    const { app, vllm } = gateway();
    const r = await complete(app, { model: "v", logprobs: 3, max_tokens: 2 });
    expect(r.status).toBe(200);
    expect(input(vllm.calls[0], "top_logprobs")?.data).toEqual([3]);
    expect(vllm.outputsAsked[0]).toEqual(expect.arrayContaining(["output_top_tokens", "output_top_log_probs"]));
    expect((r.json.choices as Json[])[0].logprobs).toEqual({
      tokens: [token(1), token(2)],
      token_logprobs: [f(logprob(1)), f(logprob(2))],
      top_logprobs: [topEntry(1, 3), topEntry(2, 3)],
      text_offset: [0, 3],
    });
  });

  it("completions logprobs=0: no alternatives asked, the sampled token alone in top_logprobs", async () => {
    const { app, vllm } = gateway();
    const r = await complete(app, { model: "v", logprobs: 0, max_tokens: 2 });
    expect(input(vllm.calls[0], "top_logprobs")).toBeUndefined();
    const lp = (r.json.choices as Json[])[0].logprobs as Json;
    expect(lp.top_logprobs).toEqual([{ [token(1)]: f(logprob(1)) }, { [token(2)]: f(logprob(2)) }]);
  });

  it("chat logprobs with top_logprobs=2: content[].top_logprobs as {token, logprob, bytes}", async () => {
    const { app, vllm } = gateway();
    const r = await chat(app, { model: "v", logprobs: true, top_logprobs: 2, max_tokens: 2 });
    expect(r.status).toBe(200);
    expect(input(vllm.calls[0], "top_logprobs")?.data).toEqual([2]);
    const content = ((r.json.choices as Json[])[0].logprobs as Json).content as Json[];
    expect(content.map((c) => c.top_logprobs)).toEqual(
      [1, 2].map((i) =>
        alternatives(i, 2).map((a) => ({ token: a.text, logprob: f(a.logprob), bytes: [...Buffer.from(a.text)] })),
      ),
    );
    // logprobs alone: no alternatives asked, each token's top_logprobs empty.
    const plain = await chat(app, { model: "v", logprobs: true, max_tokens: 1 });
    expect(input(vllm.calls[1], "top_logprobs")).toBeUndefined();
    expect((((plain.json.choices as Json[])[0].logprobs as Json).content as Json[])[0].top_logprobs).toEqual([]);
  });

  it("streams each chunk's tokens with their alternatives, completions and chat, n=2 copies apart", async () => {
    const { app } = gateway();
    const s = await complete(app, { model: "v", logprobs: 2, max_tokens: 2, stream: true });
    const chunks = events(s.raw)
      .map((e) => (e.choices as Json[])[0])
      .filter((c) => c.logprobs !== null);
    expect(chunks.map((c) => (c.logprobs as Json).top_logprobs)).toEqual([[topEntry(1, 2)], [topEntry(2, 2)]]);
    const c = await chat(app, { model: "v", logprobs: true, top_logprobs: 1, max_tokens: 1, n: 2, stream: true });
    const tops = events(c.raw)
      .map((e) => (e.choices as Json[])[0])
      .filter((x) => x.logprobs !== null)
      .map((x) => [x.index, (((x.logprobs as Json).content as Json[])[0].top_logprobs as Json[])[0].token]);
    expect(tops.sort()).toEqual([
      [0, token(1, 0)],
      [1, token(1, 1)],
    ]);
  });

  it("refuses more alternatives than the model's maxLogprobs, negative ones, top_logprobs without logprobs", async () => {
    const { app, vllm } = gateway();
    for (const [r, param, code] of [
      [await complete(app, { model: "v", logprobs: 6 }), "logprobs", "unsupported_parameter"],
      [await complete(app, { model: "v", logprobs: -1 }), "logprobs", "invalid_value"],
      [await chat(app, { model: "v", logprobs: true, top_logprobs: 6 }), "top_logprobs", "unsupported_parameter"],
      [await chat(app, { model: "v", top_logprobs: 2 }), "top_logprobs", undefined],
      [await complete(app, { model: "v", logprobs: 1, echo: true }), "echo", "unsupported_parameter"],
    ] as const) {
      expect([r.status, error(r).param, error(r).type]).toEqual([400, param, "invalid_request_error"]);
      if (code) expect(error(r).code).toBe(code);
    }
    const over = await complete(app, { model: "v", logprobs: 6 });
    expect(error(over).message).toMatch(/between 0 and 5 .*vLLM engine/);
    expect(vllm.calls).toHaveLength(0);
  });

  it("takes presence_penalty with repetition_penalty (vLLM applies both)", async () => {
    const { app, vllm } = gateway();
    const r = await complete(app, { model: "v", presence_penalty: 0.5, repetition_penalty: 1.2 });
    expect(r.status).toBe(200);
    expect(input(vllm.calls[0], "presence_penalty")?.data).toEqual([0.5]);
    expect(input(vllm.calls[0], "repetition_penalty")?.data).toEqual([1.2]);
  });
});

describe("FT model beside it: the refusals name the engine", () => {
  it("refuses logprobs above 1 and top_logprobs above 0, and sends FT no top_logprobs input", async () => {
    const { app, ft } = gateway();
    const c = await complete(app, { model: "m", logprobs: 2 });
    expect([c.status, error(c).param, error(c).code]).toEqual([400, "logprobs", "unsupported_parameter"]);
    expect(error(c).message).toMatch(/FasterTransformer computes the log probability of the sampled token only/);
    const t = await chat(app, { model: "m", logprobs: true, top_logprobs: 1 });
    expect([t.status, error(t).param]).toEqual([400, "top_logprobs"]);
    expect(error(t).message).toMatch(/FasterTransformer/);
    const ok = await complete(app, { model: "m", logprobs: 1, max_tokens: 1 });
    expect(((ok.json.choices as Json[])[0].logprobs as Json).top_logprobs).toBeNull();
    expect(input(ft.calls[0], "top_logprobs")).toBeUndefined();
    expect(ft.outputsAsked[0]).not.toContain("output_top_tokens");
  });
});

describe("config: engine and maxLogprobs", () => {
  it("defaults to FT with no alternatives, and refuses alternatives on FT", () => {
    const parsed = GatewayConfigSchema.parse({ models: [TEST_MODEL] });
    expect([parsed.models[0].engine, parsed.models[0].maxLogprobs]).toEqual(["ft", 0]);
    const bad = GatewayConfigSchema.safeParse({ models: [{ ...TEST_MODEL, maxLogprobs: 5 }] });
    expect(bad.success).toBe(false);
    expect(bad.error?.issues.map((i) => [i.path.join("."), i.message])).toEqual([
      ["models.0.maxLogprobs", expect.stringMatching(/FasterTransformer, which computes no alternatives/)],
    ]);
    for (const wrong of [
      { engine: "trtllm" },
      { engine: "vllm", maxLogprobs: -1 },
      { engine: "vllm", maxLogprobs: 1.5 },
    ]) {
      expect(GatewayConfigSchema.safeParse({ models: [{ ...TEST_MODEL, ...wrong }] }).success).toBe(false);
    }
  });
});
