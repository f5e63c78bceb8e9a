/**
 * The gateway in front of the project's vLLM model on a real CPU tritonserver (test/vllm/gatewaySetup.ts),
 * beside the FT stand-in behind the same gateway: the official `openai` npm client (completions,
 * streams, chat, n, stop, usage, errors), logprobs with top alternatives checked against what vLLM
 * itself returns over gRPC, the refusals per engine, routing, limits and usage per model, and a
 * cancelled stream aborted in vLLM. The Python clients (openai, tritonclient) are in
 * test/vllm/clients.test.ts.
 */
import OpenAI from "openai";
import { beforeAll, describe, expect, inject, it } from "vitest";
import type { Tensor } from "../../images/gateway/src/triton/tensors";
import { TritonGateway } from "../../images/gateway/src/triton/tritonClient";
import { MAX_NUM_SEQS } from "./gatewaySetup";
import { MAX_LOGPROBS } from "./tinyModels";

const h = inject("vllmGateway");
const GPT2 = h.vllm.models.gpt2;
const NEOX = h.vllm.models.neox;
const PROMPT = "The quick brown fox jumps over";

type Json = Record<string, unknown>;

function client(team = "team-a"): OpenAI {
  return new OpenAI({ baseURL: `${h.gateway.url}/v1`, apiKey: h.gateway.keys[team], maxRetries: 0, timeout: 120_000 });
}

async function post(path: string, body: Json, team = "team-a"): Promise<{ status: number; json: Json }> {
  const r = await fetch(`${h.gateway.url}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${h.gateway.keys[team]}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: r.status, json: (await r.json()) as Json };
}

/** What vLLM itself returns for a greedy request with k alternatives: per token its text, log probability and alternatives. */
interface Direct {
  tokens: string[];
  logprobs: number[];
  top: { text: string; logprob: number }[][];
}

const text = (v: unknown): string => (v instanceof Uint8Array ? Buffer.from(v).toString("utf8") : String(v));

async function direct(ensemble: string, prompt: string, maxTokens: number, k: number): Promise<Direct> {
  const triton = new TritonGateway(h.vllm.grpc, ensemble);
  const scalar = (name: string, datatype: Tensor["datatype"], value: number): Tensor => ({
    name,
    datatype,
    shape: [1, 1],
    data: [value],
  });
  let last: Map<string, Tensor> | undefined;
  try {
    for await (const outputs of triton.stream(
      [
        { name: "text_input", datatype: "BYTES", shape: [1, 1], data: [prompt] },
        scalar("max_tokens", "UINT32", maxTokens),
        scalar("top_k", "UINT32", 1),
        scalar("return_tokens", "UINT32", 1),
        scalar("top_logprobs", "UINT32", k),
      ],
      { signal: new AbortController().signal, deadline: Date.now() + 120_000, timeoutSeconds: 120 },
    ))
      last = outputs;
  } finally {
    triton.close();
  }
  if (!last) throw new Error("vLLM sent no response");
  const get = (name: string): Tensor => {
    const t = last?.get(name);
    if (!t) throw new Error(`no ${name}`);
    return t;
  };
  const count = Number(get("output_token_count").data[0]);
  const topTexts = get("output_top_tokens");
  const topProbs = get("output_top_log_probs");
  const width = topTexts.shape[2];
  return {
    tokens: get("output_tokens").data.slice(0, count).map(text),
    logprobs: get("output_log_probs").data.slice(0, count).map(Number),
    top: Array.from({ length: count }, (_, i) =>
      Array.from({ length: width }, (_, r) => ({
        text: text(topTexts.data[i * width + r]),
        logprob: Number(topProbs.data[i * width + r]),
      })),
    ),
  };
}

describe("vLLM behind the gateway: logprobs with top alternatives, as vLLM computed them", () => {
  let vllm: Direct;
  beforeAll(async () => {
    vllm = await direct(GPT2.ensemble, PROMPT, 8, 5);
  });

  it("vLLM's own answer: the top-1 alternative of each greedy token is that token", () => {
    expect(vllm.tokens).toHaveLength(8);
    vllm.top.forEach((alternatives, i) => {
      expect(alternatives[0].text).toBe(vllm.tokens[i]);
      expect(alternatives[0].logprob).toBeCloseTo(vllm.logprobs[i], 5);
      // By rank: each alternative at most as likely as the one before.
      for (let r = 1; r < alternatives.length; r++)
        expect(alternatives[r].logprob).toBeLessThanOrEqual(alternatives[r - 1].logprob);
    });
  });

  it("completions logprobs=5: tokens, token_logprobs and top_logprobs are vLLM's", async () => {
    const r = await client().completions.create({
      model: GPT2.id,
      prompt: PROMPT,
      max_tokens: 8,
      temperature: 0,
      logprobs: 5,
    });
    const lp = r.choices[0].logprobs;
    expect(lp?.tokens).toEqual(vllm.tokens);
    lp?.token_logprobs?.forEach((p, i) => expect(p).toBeCloseTo(vllm.logprobs[i], 5));
    expect(lp?.top_logprobs).toHaveLength(8);
    lp?.top_logprobs?.forEach((top, i) => {
      const expected: Record<string, number> = {};
      for (const a of vllm.top[i]) if (!(a.text in expected)) expected[a.text] = a.logprob;
      expect(Object.keys(top).sort()).toEqual(Object.keys(expected).sort());
      for (const [t, p] of Object.entries(expected)) expect(top[t]).toBeCloseTo(p, 5);
      // The greedy token is the best of them.
      expect(Math.max(...Object.values(top))).toBeCloseTo(lp.token_logprobs?.[i] ?? NaN, 5);
    });
    expect(r.usage?.completion_tokens).toBe(8);
  });

  it("streams the same tokens and alternatives, chunk by chunk", async () => {
    const whole = await client().completions.create({
      model: GPT2.id,
      prompt: PROMPT,
      max_tokens: 8,
      temperature: 0,
      logprobs: 3,
    });
    const stream = await client().completions.create({
      model: GPT2.id,
      prompt: PROMPT,
      max_tokens: 8,
      temperature: 0,
      logprobs: 3,
      stream: true,
    });
    const tokens: string[] = [];
    const tops: Record<string, number>[] = [];
    let streamedText = "";
    for await (const chunk of stream) {
      const c = chunk.choices[0];
      if (!c) continue;
      streamedText += c.text;
      tokens.push(...(c.logprobs?.tokens ?? []));
      tops.push(...(c.logprobs?.top_logprobs ?? []));
    }
    expect(streamedText).toBe(whole.choices[0].text);
    expect(tokens).toEqual(whole.choices[0].logprobs?.tokens);
    expect(tops).toEqual(whole.choices[0].logprobs?.top_logprobs);
  });

  it("chat logprobs with top_logprobs=4: content[].top_logprobs {token, logprob, bytes}, the greedy token first", async () => {
    const r = await client().chat.completions.create({
      model: GPT2.id,
      messages: [{ role: "user", content: PROMPT }],
      max_tokens: 6,
      temperature: 0,
      logprobs: true,
      top_logprobs: 4,
    });
    const content = r.choices[0].logprobs?.content ?? [];
    expect(content.length).toBeGreaterThan(0);
    for (const entry of content) {
      expect(entry.top_logprobs).toHaveLength(4);
      expect(entry.top_logprobs[0].token).toBe(entry.token);
      expect(entry.top_logprobs[0].logprob).toBeCloseTo(entry.logprob, 5);
      for (const alt of entry.top_logprobs) expect(alt.bytes).toEqual([...Buffer.from(alt.token, "utf8")]);
    }
  });

  it("refuses more alternatives than the model's maxLogprobs, in OpenAI's error shape", async () => {
    const c = await post("/v1/completions", { model: GPT2.id, prompt: PROMPT, logprobs: MAX_LOGPROBS + 1 });
    expect(c.status).toBe(400);
    expect(c.json.error).toMatchObject({
      type: "invalid_request_error",
      param: "logprobs",
      code: "unsupported_parameter",
    });
    const t = await post("/v1/chat/completions", {
      model: GPT2.id,
      messages: [{ role: "user", content: "hi" }],
      logprobs: true,
      top_logprobs: MAX_LOGPROBS + 1,
    });
    expect([t.status, (t.json.error as Json).param]).toEqual([400, "top_logprobs"]);
  });
});

describe("vLLM behind the gateway: the openai client's everyday requests", () => {
  it("n=3 seeded: three choices, reproducible, the prompt counted once", async () => {
    const ask = () =>
      client().completions.create({ model: GPT2.id, prompt: PROMPT, max_tokens: 6, temperature: 1, n: 3, seed: 11 });
    const [a, b] = [await ask(), await ask()];
    expect(a.choices.map((c) => c.index)).toEqual([0, 1, 2]);
    // Each copy has its own seed (seed + copy): sampled copies differ.
    expect(new Set(a.choices.map((c) => c.text)).size).toBeGreaterThan(1);
    expect(a.choices.map((c) => c.text)).toEqual(b.choices.map((c) => c.text));
    const one = await client().completions.create({
      model: GPT2.id,
      prompt: PROMPT,
      max_tokens: 6,
      temperature: 1,
      seed: 11,
    });
    expect(one.choices[0].text).toBe(a.choices[0].text);
    expect(a.usage?.prompt_tokens).toBe(one.usage?.prompt_tokens);
  });

  it("a prompt array, a stop sequence, stream_options.include_usage", async () => {
    const full = await client().completions.create({
      model: GPT2.id,
      prompt: [PROMPT, "Once upon"],
      max_tokens: 12,
      temperature: 0,
    });
    expect(full.choices).toHaveLength(2);
    const greedy = full.choices[0].text;
    const visible = greedy.replace(/\s+$/, "");
    const stop = visible.slice(Math.floor(visible.length / 2), Math.floor(visible.length / 2) + 2);
    if (stop.length === 2) {
      const cut = await client().completions.create({
        model: GPT2.id,
        prompt: PROMPT,
        max_tokens: 12,
        temperature: 0,
        stop: [stop],
      });
      expect(cut.choices[0].text).toBe(greedy.slice(0, greedy.indexOf(stop)));
      expect(cut.choices[0].finish_reason).toBe("stop");
    }
    const stream = await client().completions.create({
      model: GPT2.id,
      prompt: PROMPT,
      max_tokens: 12,
      temperature: 0,
      stream: true,
      stream_options: { include_usage: true },
    });
    let streamed = "";
    let usage: OpenAI.CompletionUsage | undefined;
    for await (const chunk of stream) {
      streamed += chunk.choices[0]?.text ?? "";
      if (chunk.choices.length === 0) usage = chunk.usage ?? undefined;
    }
    expect(streamed).toBe(greedy);
    const single = await client().completions.create({
      model: GPT2.id,
      prompt: PROMPT,
      max_tokens: 12,
      temperature: 0,
    });
    // The usage-only chunk (choices empty) carries the request's usage.
    expect(usage).toEqual(single.usage);
  });

  it("a prompt over the model's context is 400 context_length_exceeded (vLLM's preprocessing counts it)", async () => {
    const prompt = Array.from({ length: 120 }, (_, i) => `w${i}`).join(" ");
    const r = await post("/v1/completions", { model: GPT2.id, prompt, max_tokens: 1 });
    expect(r.status).toBe(400);
    expect(r.json.error).toMatchObject({ code: "context_length_exceeded" });
  });
});

describe("FT and vLLM side by side behind one gateway", () => {
  it("lists every model for an unscoped key, only the vLLM ones for a scoped key", async () => {
    expect((await client().models.list()).data.map((m) => m.id).sort()).toEqual([GPT2.id, NEOX.id, h.ft.id].sort());
    expect((await client("only-vllm").models.list()).data.map((m) => m.id).sort()).toEqual([GPT2.id, NEOX.id].sort());
    const hidden = await post("/v1/completions", { model: h.ft.id, prompt: "x" }, "only-vllm");
    expect([hidden.status, (hidden.json.error as Json).code]).toEqual([404, "model_not_found"]);
  });

  it("routes by model: each answers, streamed and not; the FT model keeps FT's refusals, naming the engine", async () => {
    for (const model of [h.ft.id, GPT2.id]) {
      const r = await client().completions.create({ model, prompt: PROMPT, max_tokens: 4, temperature: 0 });
      expect([r.model, r.usage?.completion_tokens]).toEqual([model, expect.any(Number)]);
      const s = await client().completions.create({
        model,
        prompt: PROMPT,
        max_tokens: 4,
        temperature: 0,
        stream: true,
      });
      let streamed = "";
      for await (const chunk of s) streamed += chunk.choices[0]?.text ?? "";
      expect(streamed).toBe(r.choices[0].text);
    }
    const ft = await post("/v1/completions", { model: h.ft.id, prompt: PROMPT, logprobs: 2 });
    expect([ft.status, (ft.json.error as Json).param]).toEqual([400, "logprobs"]);
    expect((ft.json.error as Json).message).toMatch(
      /FasterTransformer computes the log probability of the sampled token only/,
    );
    const ftChat = await post("/v1/chat/completions", {
      model: h.ft.id,
      messages: [{ role: "user", content: "hi" }],
      logprobs: true,
      top_logprobs: 1,
    });
    expect([ftChat.status, (ftChat.json.error as Json).param]).toEqual([400, "top_logprobs"]);
    const ftOne = await client().completions.create({ model: h.ft.id, prompt: PROMPT, max_tokens: 2, logprobs: 1 });
    expect(ftOne.choices[0].logprobs?.top_logprobs).toBeNull();
  });

  it("applies each model's own limits", async () => {
    const over = h.ft.maxOutputLen + 1;
    expect(over).toBeLessThanOrEqual(GPT2.maxOutputLen);
    const ft = await post("/v1/completions", { model: h.ft.id, prompt: PROMPT, max_tokens: over });
    expect([ft.status, (ft.json.error as Json).param]).toEqual([400, "max_tokens"]);
    const vllm = await client().completions.create({
      model: GPT2.id,
      prompt: PROMPT,
      max_tokens: over,
      temperature: 0,
    });
    expect(vllm.choices[0].finish_reason).toBeDefined();
    const tooMany = await post("/v1/completions", {
      model: GPT2.id,
      prompt: PROMPT,
      max_tokens: GPT2.maxOutputLen + 1,
    });
    expect(tooMany.status).toBe(400);
    expect((tooMany.json.error as Json).message).toMatch(new RegExp(`between 1 and ${GPT2.maxOutputLen}`));
  });

  it("counts usage per model", async () => {
    const usage = client("usage");
    const a = await usage.completions.create({ model: h.ft.id, prompt: PROMPT, max_tokens: 3, temperature: 0 });
    const b = await usage.completions.create({ model: GPT2.id, prompt: PROMPT, max_tokens: 5, temperature: 0 });
    const r = await fetch(`${h.gateway.url}/v1/usage`, {
      headers: { authorization: `Bearer ${h.gateway.keys.usage}` },
    });
    const body = (await r.json()) as { today: { models: Json[]; total: Json } };
    const byModel = Object.fromEntries(body.today.models.map((m) => [m.model, m]));
    for (const [model, answer] of [
      [h.ft.id, a],
      [GPT2.id, b],
    ] as const) {
      expect(byModel[model]).toMatchObject({
        requests: 1,
        prompt_tokens: answer.usage?.prompt_tokens,
        completion_tokens: answer.usage?.completion_tokens,
      });
    }
    expect(body.today.total).toMatchObject({ requests: 2 });
  });
});

describe("a cancelled stream is aborted in vLLM (cancellable: true)", () => {
  const request = {
    model: NEOX.id,
    prompt: PROMPT,
    // n = the model's max_num_seqs: while these run, vLLM starts no other sequence.
    n: MAX_NUM_SEQS,
    max_tokens: NEOX.maxOutputLen,
    temperature: 0,
    stream: true,
  };
  const send = (signal?: AbortSignal): Promise<Response> =>
    fetch(`${h.gateway.url}/v1/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${h.gateway.keys["team-a"]}`, "content-type": "application/json" },
      body: JSON.stringify(request),
      signal,
    });
  let fullMs = 0;

  beforeAll(async () => {
    // The whole generation, read to its end: how long the 8 sequences hold vLLM.
    const started = Date.now();
    await (await send()).text();
    fullMs = Date.now() - started;
  }, 300_000);

  it("frees vLLM's sequences at once: the next request is answered long before the cancelled one would end", async () => {
    expect(fullMs, "the uncancelled generation must take long enough to tell").toBeGreaterThan(1_000);
    // The client leaves a quarter of the way in. Not on its first chunk: this greedy text is byte
    // tokens that form no character for a while, so the stream's first chunk may come only at its end.
    const controller = new AbortController();
    const leaveAfter = Math.min(1_000, fullMs / 4);
    const cancelled = send(controller.signal).catch(() => undefined);
    await new Promise((resolve) => setTimeout(resolve, leaveAfter));
    controller.abort();
    await cancelled;
    const started = Date.now();
    const next = await client().completions.create({ model: NEOX.id, prompt: PROMPT, max_tokens: 1, temperature: 0 });
    const nextMs = Date.now() - started;
    expect(next.choices).toHaveLength(1);
    process.stderr.write(
      `cancellation: the whole generation ${fullMs} ms, left after ${leaveAfter} ms, the next request ${nextMs} ms\n`,
    );
    // Not aborted, the next request would wait for the 8 sequences to finish (about fullMs - leaveAfter).
    expect(nextMs).toBeLessThan(fullMs / 3);
  }, 300_000);
});
