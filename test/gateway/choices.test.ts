/**
 * n, best_of, logprobs, echo, penalties and context errors with the official
 * `openai` npm client, through the gateway and the real tritonserver: the
 * copies travel as one batched request through the ensemble, and the log
 * probabilities come from the FT stand-in's `output_log_probs` (FT's name and
 * shape) through postprocessing. The stand-in's token j of a copy seeded s is
 * prompt[(j + s) % prompt length] and its log probability is
 * -(1 + (token id + j) % 7) / 8 (test/triton/ft_standin/1/model.py).
 */
import OpenAI from "openai";
import { describe, expect, inject, it } from "vitest";

const h = inject("gateway");
/** A test that needs the FT stand-in (its echo, step time, hold file or FT-only refusals): skipped in vLLM mode. */
const itOnFt = it.skipIf(h.upstream === "vllm");
const MODEL = h.model.id;

function client(): OpenAI {
  return new OpenAI({ apiKey: h.main.keys["team-a"], baseURL: `${h.main.url}/v1`, maxRetries: 0, timeout: 30_000 });
}

const PROMPT = "one two three four five";
const mean = (xs: (number | null)[]): number => xs.reduce<number>((s, x) => s + (x ?? 0), 0) / Math.max(1, xs.length);

describe("n and best_of through the real server", () => {
  it("n=3: three distinct choices, each indexed, usage counting every copy", async () => {
    const r = await client().completions.create({ model: MODEL, prompt: PROMPT, n: 3, max_tokens: 4, seed: 7 });
    expect(r.choices.map((c) => c.index)).toEqual([0, 1, 2]);
    expect(new Set(r.choices.map((c) => c.text)).size).toBe(3);
    expect(r.choices.every((c) => c.finish_reason === "length")).toBe(true);
    expect(r.usage?.completion_tokens).toBe(12);
  });

  it("n=3 streamed: interleaved chunks per index, each ending with its finish_reason", async () => {
    const stream = await client().completions.create({
      model: MODEL,
      prompt: PROMPT,
      n: 3,
      max_tokens: 4,
      seed: 7,
      stream: true,
    });
    const texts = ["", "", ""];
    const finished: number[] = [];
    for await (const chunk of stream) {
      for (const c of chunk.choices) {
        texts[c.index] += c.text;
        if (c.finish_reason) finished.push(c.index);
      }
    }
    const plain = await client().completions.create({ model: MODEL, prompt: PROMPT, n: 3, max_tokens: 4, seed: 7 });
    expect(texts).toEqual(plain.choices.map((c) => c.text));
    expect(finished.sort()).toEqual([0, 1, 2]);
  });

  it("chat n=2 streamed: a message per index", async () => {
    const stream = await client().chat.completions.create({
      model: MODEL,
      messages: [{ role: "user", content: PROMPT }],
      n: 2,
      max_tokens: 3,
      seed: 3,
      stream: true,
    });
    const texts = ["", ""];
    for await (const chunk of stream) for (const c of chunk.choices) texts[c.index] += c.delta.content ?? "";
    expect(texts.every((t) => t.length > 0)).toBe(true);
  });

  it("a seeded n=2 request returns the same choices twice", async () => {
    const ask = () =>
      client().completions.create({ model: MODEL, prompt: PROMPT, n: 2, max_tokens: 5, seed: 11, temperature: 0.8 });
    const [a, b] = [await ask(), await ask()];
    expect(b.choices.map((c) => c.text)).toEqual(a.choices.map((c) => c.text));
  });

  it("best_of=4, n=2 returns the two copies of highest log probability per token", async () => {
    const all = await client().completions.create({
      model: MODEL,
      prompt: PROMPT,
      n: 4,
      max_tokens: 4,
      seed: 5,
      logprobs: 1,
    });
    const ranked = [...all.choices]
      .sort(
        (x, y) => mean(y.logprobs?.token_logprobs ?? []) - mean(x.logprobs?.token_logprobs ?? []) || x.index - y.index,
      )
      .slice(0, 2)
      .map((c) => c.text);
    const best = await client().completions.create({
      model: MODEL,
      prompt: PROMPT,
      n: 2,
      best_of: 4,
      max_tokens: 4,
      seed: 5,
    });
    expect(best.choices.map((c) => c.text)).toEqual(ranked);
    expect(best.usage?.completion_tokens).toBe(16);
  });
});

describe("logprobs and echo through the real server", () => {
  // The stand-in's log probabilities and FT's lack of alternatives; vLLM's are checked against vLLM itself
  // over gRPC in test/vllm/gateway.test.ts.
  itOnFt("completions: one FT log probability per token, tokens joining to the text", async () => {
    const r = await client().completions.create({ model: MODEL, prompt: PROMPT, max_tokens: 4, logprobs: 1 });
    const lp = r.choices[0].logprobs;
    expect(lp?.tokens?.join("")).toBe(r.choices[0].text);
    expect(lp?.token_logprobs).toHaveLength(4);
    for (const v of lp?.token_logprobs ?? []) expect([1, 2, 3, 4, 5, 6, 7].map((k) => -k / 8)).toContain(v);
    expect(lp?.top_logprobs).toBeNull();
  });

  it("chat: logprobs.content[].logprob", async () => {
    const r = await client().chat.completions.create({
      model: MODEL,
      messages: [{ role: "user", content: PROMPT }],
      max_tokens: 3,
      logprobs: true,
    });
    const content = r.choices[0].logprobs?.content ?? [];
    expect(content.length).toBeGreaterThan(0);
    for (const c of content) expect(c.logprob).toBeLessThan(0);
  });

  // FT returns no alternatives; vLLM serves up to max_logprobs (its refusal above that: test/vllm/gateway.test.ts).
  itOnFt("top_logprobs=5 is a 400 that names the limit", async () => {
    const error = await client()
      .chat.completions.create({
        model: MODEL,
        messages: [{ role: "user", content: PROMPT }],
        logprobs: true,
        top_logprobs: 5,
      })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as InstanceType<typeof OpenAI.BadRequestError>).message).toMatch(/at most 0 is served/);
  });

  it("echo returns the prompt before the completion", async () => {
    const r = await client().completions.create({
      model: MODEL,
      prompt: PROMPT,
      max_tokens: 2,
      echo: true,
      temperature: 0,
    });
    expect(r.choices[0].text.startsWith(PROMPT)).toBe(true);
    expect(r.choices[0].text.length).toBeGreaterThan(PROMPT.length);
  });
});

describe("penalties and context through the real server", () => {
  it("presence_penalty is served (FT's additive penalty); frequency_penalty is a 400", async () => {
    const ok = await client().completions.create({
      model: MODEL,
      prompt: PROMPT,
      max_tokens: 2,
      presence_penalty: 0.5,
      // A random vLLM checkpoint samples lone bytes that may complete no character (no text): greedy, its text is known.
      ...(h.upstream === "vllm" ? { temperature: 0 } : {}),
    });
    expect(ok.choices[0].text.length).toBeGreaterThan(0);
    const error = await client()
      .completions.create({ model: MODEL, prompt: PROMPT, max_tokens: 2, frequency_penalty: 0.5 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as InstanceType<typeof OpenAI.BadRequestError>).param).toBe("frequency_penalty");
  });

  it("a prompt over the context is BadRequestError with code context_length_exceeded", async () => {
    const long = "a ".repeat(h.model.maxInputLen + 10);
    const error = await client()
      .completions.create({ model: MODEL, prompt: long, max_tokens: 1 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as InstanceType<typeof OpenAI.BadRequestError>).code).toBe("context_length_exceeded");
  });
});
