/**
 * n, best_of, logprobs, echo, the penalties and context errors on the OpenAI
 * routes, in process against the fake Triton (fakeTriton.ts): what the
 * gateway sends to the ensemble (one batched request per prompt, per-copy
 * seeds, the penalty FT takes) and the bytes it answers with. The same
 * behaviour against the real tritonserver is in test/gateway/choices.test.ts.
 */
import { afterEach, describe, expect, it } from "vitest";
import { buildGateway } from "../../../images/gateway/src/app";
import { KeyRing, sha256Hex } from "../../../images/gateway/src/auth/keyRing";
import { GatewayConfigSchema } from "../../../images/gateway/src/config";
import { ApiError } from "../../../images/gateway/src/server/apiError";
import { GatewayMetrics } from "../../../images/gateway/src/telemetry/metrics";
import { classifyTritonMessage } from "../../../images/gateway/src/triton/tritonClient";
import { type Json, KEY, error, events, input, openaiCalls } from "./openaiCalls";
import { FakeTriton, logprob, TEST_MODEL, token } from "./fakeTriton";

type FastifyInstance = ReturnType<typeof buildGateway>;

const open: FastifyInstance[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((app) => app.close()));
});

function gateway(maxChoiceTokens?: number): { app: FastifyInstance; triton: FakeTriton } {
  const config = GatewayConfigSchema.parse({
    models: [{ ...TEST_MODEL, ...(maxChoiceTokens ? { maxChoiceTokens } : {}) }],
  });
  const keys = new KeyRing({ consumers: [{ name: "team-a", keySha256: [sha256Hex(KEY)] }] });
  const triton = new FakeTriton();
  const tritons = new Map([[TEST_MODEL.id, triton]]);
  const app = buildGateway({ config, keys, tritons, metrics: new GatewayMetrics(), logger: false });
  open.push(app);
  return { app, triton };
}

const { complete, chat } = openaiCalls({ model: "m" });
const text = (row: number, count: number): string =>
  Array.from({ length: count }, (_, i) => token(i + 1, row)).join("");

describe("n: the copies of a prompt as one batched request", () => {
  it("n=3 sends one request of batch 3 with seeds seed, seed+1, seed+2 and returns three choices", async () => {
    const { app, triton } = gateway();
    const r = await complete(app, { n: 3, max_tokens: 2, seed: 41 });
    expect(r.status).toBe(200);
    expect(triton.calls).toHaveLength(1);
    expect(input(triton.calls[0], "text_input")?.shape).toEqual([3, 1]);
    expect(input(triton.calls[0], "random_seed")?.data).toEqual([41n, 42n, 43n]);
    const choices = r.json.choices as Json[];
    expect(choices.map((c) => [c.index, c.text, c.finish_reason])).toEqual([
      [0, text(0, 2), "length"],
      [1, text(1, 2), "length"],
      [2, text(2, 2), "length"],
    ]);
    // The prompt is counted once, every copy's tokens are.
    expect(r.json.usage).toEqual({ prompt_tokens: 3, completion_tokens: 6, total_tokens: 9 });
  });

  it("numbers choices prompt × n + copy for several prompts", async () => {
    const { app, triton } = gateway();
    const r = await complete(app, { prompt: ["a", "b c"], n: 2, max_tokens: 1 });
    expect(triton.calls).toHaveLength(2);
    expect((r.json.choices as Json[]).map((c) => [c.index, c.text])).toEqual([
      [0, text(0, 1)],
      [1, text(1, 1)],
      [2, text(0, 1)],
      [3, text(1, 1)],
    ]);
  });

  it("streams n=3 as interleaved chunks, each choice with its own index and finish_reason", async () => {
    const { app } = gateway();
    const r = await complete(app, { n: 3, max_tokens: 2, stream: true });
    expect(r.raw.endsWith("data: [DONE]\n\n")).toBe(true);
    const chunks = events(r.raw).map((e) => (e.choices as Json[])[0]);
    for (const index of [0, 1, 2]) {
      const mine = chunks.filter((c) => c.index === index);
      expect(mine.map((c) => c.text).join("")).toBe(text(index, 2));
      expect(mine.filter((c) => c.finish_reason !== null).map((c) => c.finish_reason)).toEqual(["length"]);
    }
    // Interleaved: choice 1's first token comes before choice 0's second.
    const order = chunks.filter((c) => c.text !== "").map((c) => c.index);
    expect(order.slice(0, 3)).toEqual([0, 1, 2]);
  });

  it("chat n=2: two messages, a role chunk per choice when streamed", async () => {
    const { app } = gateway();
    const r = await chat(app, { n: 2, max_tokens: 1 });
    expect((r.json.choices as Json[]).map((c) => [c.index, (c.message as Json).content])).toEqual([
      [0, text(0, 1).trimStart()],
      [1, text(1, 1).trimStart()],
    ]);
    const s = await chat(app, { n: 2, max_tokens: 1, stream: true });
    const roles = events(s.raw)
      .map((e) => (e.choices as Json[])[0])
      .filter((c) => (c.delta as Json).role === "assistant");
    expect(roles.map((c) => c.index)).toEqual([0, 1]);
  });

  it("refuses n above the model's batch and n × max_tokens above the model's cap", async () => {
    const { app } = gateway(300);
    const big = await complete(app, { n: 9 });
    expect([big.status, error(big).param]).toEqual([400, "n"]);
    expect(error(big).message).toMatch(/between 1 and 8/);
    const tokens = await complete(app, { n: 2, max_tokens: 200 });
    expect([tokens.status, error(tokens).param, error(tokens).code]).toEqual([400, "n", "invalid_value"]);
    expect(error(tokens).message).toMatch(/400 tokens: this model serves at most 300/);
  });
});

describe("best_of: ranked by FT's log probabilities", () => {
  it("best_of=4, n=2 generates 4 copies in one request and returns the 2 best per token", async () => {
    const { app, triton } = gateway();
    const r = await complete(app, { best_of: 4, n: 2, max_tokens: 3 });
    expect(input(triton.calls[0], "text_input")?.shape).toEqual([4, 1]);
    const mean = (row: number): number => [1, 2, 3].reduce((s, i) => s + logprob(i, row), 0) / 3;
    const ranked = [0, 1, 2, 3].sort((a, b) => mean(b) - mean(a) || a - b).slice(0, 2);
    expect((r.json.choices as Json[]).map((c) => [c.index, c.text])).toEqual([
      [0, text(ranked[0], 3)],
      [1, text(ranked[1], 3)],
    ]);
    // Usage counts all four copies, as OpenAI bills best_of.
    expect((r.json.usage as Json).completion_tokens).toBe(12);
  });

  it("refuses best_of below n, above the batch, or streamed", async () => {
    const { app } = gateway();
    for (const body of [{ best_of: 1, n: 2 }, { best_of: 9 }, { best_of: 2, stream: true }]) {
      const r = await complete(app, body);
      expect([r.status, error(r).param]).toEqual([400, "best_of"]);
    }
  });
});

describe("logprobs: FT's log probability of each sampled token", () => {
  it("completions: tokens, token_logprobs and text_offset; top_logprobs null", async () => {
    const { app, triton } = gateway();
    const r = await complete(app, { logprobs: 1, max_tokens: 3 });
    expect(input(triton.calls[0], "return_tokens")?.data).toEqual([1]);
    const lp = (r.json.choices as Json[])[0].logprobs;
    expect(lp).toEqual({
      tokens: [token(1), token(2), token(3)],
      token_logprobs: [1, 2, 3].map((i) => Math.fround(logprob(i))),
      top_logprobs: null,
      text_offset: [0, 3, 6],
    });
  });

  it("chat: logprobs.content with token, logprob and bytes", async () => {
    const { app } = gateway();
    const r = await chat(app, { logprobs: true, max_tokens: 2 });
    const content = ((r.json.choices as Json[])[0].logprobs as Json).content as Json[];
    expect(content.map((c) => [c.token, c.logprob, c.top_logprobs])).toEqual([
      [token(1), Math.fround(logprob(1)), []],
      [token(2), Math.fround(logprob(2)), []],
    ]);
    expect(content[0].bytes).toEqual([...Buffer.from(token(1))]);
  });

  it("streams each chunk's tokens with it", async () => {
    const { app } = gateway();
    const r = await complete(app, { logprobs: 1, max_tokens: 2, stream: true });
    const withTokens = events(r.raw)
      .map((e) => (e.choices as Json[])[0])
      .filter((c) => c.logprobs !== null);
    expect(withTokens.map((c) => (c.logprobs as Json).tokens)).toEqual([[token(1)], [token(2)]]);
    expect(withTokens.map((c) => (c.logprobs as Json).text_offset)).toEqual([[0], [3]]);
  });

  it("cuts the tokens where a stop sequence cuts the text", async () => {
    const { app } = gateway();
    const r = await complete(app, { logprobs: 1, max_tokens: 4, stop: [" t3"] });
    const choice = (r.json.choices as Json[])[0];
    expect(choice.text).toBe(text(0, 2));
    expect((choice.logprobs as Json).tokens).toEqual([token(1), token(2)]);
  });

  it("refuses alternatives FT does not compute: logprobs above 1, top_logprobs above 0, naming the limit", async () => {
    const { app } = gateway();
    const c = await complete(app, { logprobs: 5 });
    expect([c.status, error(c).param, error(c).code]).toEqual([400, "logprobs", "unsupported_parameter"]);
    expect(error(c).message).toMatch(/at most 1 is served/);
    const t = await chat(app, { logprobs: true, top_logprobs: 5 });
    expect([t.status, error(t).param, error(t).code]).toEqual([400, "top_logprobs", "unsupported_parameter"]);
    expect(error(t).message).toMatch(/at most 0 is served/);
  });
});

describe("echo", () => {
  it("returns the prompt before the completion, streamed first", async () => {
    const { app } = gateway();
    const r = await complete(app, { echo: true, max_tokens: 2 });
    expect((r.json.choices as Json[])[0].text).toBe(`a b c${text(0, 2)}`);
    const s = await complete(app, { echo: true, max_tokens: 1, stream: true });
    expect((events(s.raw)[0].choices as Json[])[0].text).toBe("a b c");
  });

  it("refuses echo with logprobs: FT has no log probabilities for prompt tokens", async () => {
    const { app } = gateway();
    const r = await complete(app, { echo: true, logprobs: 0 });
    expect([r.status, error(r).param]).toEqual([400, "echo"]);
    expect(error(r).message).toMatch(/no log probabilities for prompt tokens/);
  });
});

describe("penalties: what FT accepts", () => {
  it("sends presence_penalty as FT's additive penalty, nothing for 0", async () => {
    const { app, triton } = gateway();
    await complete(app, { presence_penalty: 0.5, n: 2 });
    expect(input(triton.calls[0], "presence_penalty")?.data).toEqual([0.5, 0.5]);
    expect(input(triton.calls[0], "repetition_penalty")).toBeUndefined();
    await complete(app, { presence_penalty: 0, repetition_penalty: 1.2 });
    expect(input(triton.calls[1], "presence_penalty")).toBeUndefined();
    expect(input(triton.calls[1], "repetition_penalty")?.data).toEqual([1.2]);
  });

  it("refuses both penalties together, frequency_penalty, and presence_penalty outside OpenAI's range", async () => {
    const { app } = gateway();
    const both = await complete(app, { presence_penalty: 0.5, repetition_penalty: 1.2 });
    expect([both.status, error(both).param]).toEqual([400, "presence_penalty"]);
    const freq = await chat(app, { frequency_penalty: 0.5 });
    expect([freq.status, error(freq).param, error(freq).code]).toEqual([
      400,
      "frequency_penalty",
      "unsupported_parameter",
    ]);
    const range = await complete(app, { presence_penalty: 2.5 });
    expect([range.status, error(range).param]).toEqual([400, "presence_penalty"]);
  });
});

describe("context_length_exceeded, whichever check finds it", () => {
  it("the gateway's byte cap, preprocessing's byte cap and the tokenizer's count are all 400", async () => {
    const { app, triton } = gateway();
    const bytes = await complete(app, { prompt: "x".repeat(4097) });
    expect([bytes.status, error(bytes).code, error(bytes).param]).toEqual([400, "context_length_exceeded", "prompt"]);
    for (const message of [
      "text_input[0]: prompt is 9000 bytes, more than max_prompt_bytes=4096",
      "text_input[0]: prompt is 600 tokens, more than max_input_len=512",
    ]) {
      triton.refuseWith = classifyTritonMessage(message);
      const r = await chat(app, {});
      expect([r.status, error(r).code, error(r).type]).toEqual([
        400,
        "context_length_exceeded",
        "invalid_request_error",
      ]);
    }
    expect(triton.refuseWith).toBeInstanceOf(ApiError);
  });
});
