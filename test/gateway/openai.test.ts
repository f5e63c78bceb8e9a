/**
 * The official `openai` npm client against the gateway in front of the real
 * tritonserver. The FT stand-in echoes the prompt's tokens cyclically (token
 * j = prompt[(j + seed) % prompt length]), so with temperature 0 (greedy,
 * seed 0) a completion of as many tokens as the prompt has is the prompt
 * itself; streamed with STEP_MS per token, the chunks arrive spread out over
 * the generation.
 */
import OpenAI from "openai";
import { describe, expect, inject, it } from "vitest";

const h = inject("gateway");
/** A test that needs the FT stand-in (its echo, step time, hold file or FT-only refusals): skipped in vLLM mode. */
const itOnFt = it.skipIf(h.upstream === "vllm");
const MODEL = h.model.id;
/** The FT stand-in echoes the prompt in STEP_MS steps; a random vLLM checkpoint's text is arbitrary, its pace its own. */
const ECHOES = h.upstream === "ft";

function client(key = h.main.keys["team-a"], baseURL = `${h.main.url}/v1`): OpenAI {
  return new OpenAI({ apiKey: key, baseURL, maxRetries: 0, timeout: 30_000 });
}

/** Prompt tokens the test tokenizer makes of a prompt, as the gateway reports them. */
async function promptTokens(prompt: string): Promise<number> {
  const r = await client().completions.create({ model: MODEL, prompt, max_tokens: 1, temperature: 0 });
  return r.usage?.prompt_tokens ?? -1;
}

describe("models", () => {
  it("lists the one model this endpoint serves", async () => {
    const list = await client().models.list();
    expect(list.data.map((m) => m.id)).toEqual([MODEL]);
    const model = await client().models.retrieve(MODEL);
    expect(model).toMatchObject({ id: MODEL, object: "model", owned_by: "triton-ft" });
  });

  it("answers 404 model_not_found for another model", async () => {
    const error = await client()
      .models.retrieve("gpt-4")
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.NotFoundError);
  });
});

describe("completions", () => {
  it("returns the generated text with usage; greedy echo of the prompt", async () => {
    const prompt = "one two three four";
    const n = await promptTokens(prompt);
    expect(n).toBeGreaterThan(1);
    const r = await client().completions.create({ model: MODEL, prompt, max_tokens: n, temperature: 0 });
    expect(r.object).toBe("text_completion");
    expect(r.model).toBe(MODEL);
    expect(r.choices).toHaveLength(1);
    if (ECHOES) expect(r.choices[0].text).toBe(prompt);
    expect(r.choices[0].finish_reason).toBe("length");
    expect(r.usage).toEqual({ prompt_tokens: n, completion_tokens: n, total_tokens: 2 * n });
  });

  it("serves an array of prompts as separate choices in order", async () => {
    const prompts = ["alpha beta", "gamma delta epsilon"];
    const counts = await Promise.all(prompts.map(promptTokens));
    const r = await client().completions.create({
      model: MODEL,
      prompt: prompts,
      max_tokens: Math.max(...counts),
      temperature: 0,
    });
    expect(r.choices.map((c) => c.index)).toEqual([0, 1]);
    if (ECHOES) r.choices.forEach((c, i) => expect(c.text.startsWith(prompts[i])).toBe(true));
    expect(r.usage?.prompt_tokens).toBe(counts[0] + counts[1]);
  });

  // Needs a known text to cut: the stand-in's echo (vLLM's stop sequences: test/vllm/gateway.test.ts).
  itOnFt("ends before a stop sequence, which is not returned, with finish_reason stop", async () => {
    const prompt = "red green blue yellow";
    const n = await promptTokens(prompt);
    const r = await client().completions.create({
      model: MODEL,
      prompt,
      max_tokens: n,
      temperature: 0,
      stop: [" blue"],
    });
    expect(r.choices[0].text).toBe("red green");
    expect(r.choices[0].finish_reason).toBe("stop");
  });

  // Observes the parameters through the stand-in's seeded echo; vLLM samples them in ways a test cannot predict.
  itOnFt("passes seed, top_k, top_p, temperature and repetition_penalty to the model", async () => {
    const prompt = "a b c d e f";
    const n = await promptTokens(prompt);
    // The stand-in starts its echo at seed % prompt length: seed 2 skips the first two tokens.
    const body = {
      model: MODEL,
      prompt,
      max_tokens: 2,
      seed: 2,
      temperature: 0.5,
      top_p: 0.9,
      top_k: 7,
      repetition_penalty: 1.1,
    };
    const shifted = await client().completions.create(body);
    const greedy = await client().completions.create({ model: MODEL, prompt, max_tokens: 2 + 2, temperature: 0 });
    expect(n).toBeGreaterThan(4);
    expect(greedy.choices[0].text.endsWith(shifted.choices[0].text)).toBe(true);
    expect(shifted.choices[0].text).not.toBe(greedy.choices[0].text.slice(0, shifted.choices[0].text.length));
  });

  it("streams chunks while the model is still generating, ending with usage and [DONE]", async () => {
    const prompt = "the quick brown fox jumps over the lazy dog";
    const n = Math.min(await promptTokens(prompt), h.model.maxOutputLen);
    const started = performance.now();
    const stream = await client().completions.create({
      model: MODEL,
      prompt,
      max_tokens: n,
      temperature: 0,
      stream: true,
    });
    const arrivals: number[] = [];
    let text = "";
    let last: OpenAI.Completions.Completion | undefined;
    for await (const chunk of stream) {
      arrivals.push(performance.now() - started);
      text += chunk.choices[0]?.text ?? "";
      last = chunk;
    }
    if (ECHOES) {
      expect(text).toBe(prompt.slice(0, text.length));
      expect(text.length).toBeGreaterThan(10);
    }
    expect(last?.choices[0].finish_reason).toBe("length");
    expect(last?.usage).toEqual({
      prompt_tokens: expect.any(Number),
      completion_tokens: n,
      total_tokens: expect.any(Number),
    });
    // Generation takes n * STEP_MS on the stand-in; the first chunk must come long before the last.
    expect(arrivals.length).toBeGreaterThan(n / 2);
    if (ECHOES) expect(arrivals[arrivals.length - 1] - arrivals[0]).toBeGreaterThan(n * h.stepMs * 0.6);
  });

  it("adds a usage-only chunk with stream_options.include_usage", async () => {
    const stream = await client().completions.create({
      model: MODEL,
      prompt: "hello world",
      max_tokens: 3,
      temperature: 0,
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks: OpenAI.Completions.Completion[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    const tail = chunks[chunks.length - 1];
    expect(tail.choices).toEqual([]);
    expect(tail.usage?.completion_tokens).toBe(3);
  });
});

describe("chat completions (templated preset)", () => {
  it("renders the messages with the preset's template", async () => {
    const messages = [{ role: "user" as const, content: "Say hello to the team" }];
    const rendered = "<human>: Say hello to the team\n<bot>:";
    const r = await client().chat.completions.create({ model: MODEL, messages, max_tokens: 12, temperature: 0 });
    expect(r.object).toBe("chat.completion");
    expect(r.choices[0].message.role).toBe("assistant");
    expect(r.usage?.prompt_tokens).toBe(await promptTokens(rendered));
    // The echo starts with the template's own "<human>:", a stop sequence: nothing of it is returned.
    if (ECHOES) {
      expect(r.choices[0].message.content).toBe("");
      expect(r.choices[0].finish_reason).toBe("stop");
    }
  });

  // Finds the reply through the stand-in's seeded echo of the rendered prompt.
  itOnFt("returns the assistant's text up to the next turn, streamed as chat chunks", async () => {
    const content = "Say hello to the team";
    const n = await promptTokens(`<human>: ${content}\n<bot>:`);
    // Find the seed whose echo starts inside the user's message (after "<human>:").
    let reply = "";
    for (let seed = 1; seed < n && reply === ""; seed++) {
      const stream = await client().chat.completions.create({
        model: MODEL,
        messages: [{ role: "user", content }],
        max_tokens: Math.min(n, h.model.maxOutputLen),
        seed,
        temperature: 0.7,
        stream: true,
      });
      let text = "";
      let role: string | undefined;
      let finish: string | null = null;
      for await (const chunk of stream) {
        role ??= chunk.choices[0]?.delta.role;
        text += chunk.choices[0]?.delta.content ?? "";
        finish = chunk.choices[0]?.finish_reason ?? finish;
      }
      expect(role).toBe("assistant");
      expect(finish).not.toBeNull();
      expect(text).not.toMatch(/<human>:|<bot>:/);
      reply = text;
    }
    expect(reply).not.toBe("");
    expect(content.includes(reply.trimEnd()) || reply.trimEnd().endsWith(content)).toBe(true);
  });

  it("answers 404 for a model without a chat template", async () => {
    const error = await client(h.plain.keys["team-a"], `${h.plain.url}/v1`)
      .chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "hi" }] })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.NotFoundError);
    expect((error as InstanceType<typeof OpenAI.NotFoundError>).message).toMatch(/no chat template/);
  });
});

describe("errors through the client", () => {
  it("raises AuthenticationError for a wrong key", async () => {
    const error = await client("tft-wrong")
      .completions.create({ model: MODEL, prompt: "x", max_tokens: 1 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.AuthenticationError);
  });

  it("raises BadRequestError with the param for max_tokens above the limit", async () => {
    const error = (await client()
      .completions.create({ model: MODEL, prompt: "x", max_tokens: h.model.maxOutputLen + 1 })
      .catch((e: unknown) => e)) as InstanceType<typeof OpenAI.BadRequestError>;
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect(error.param).toBe("max_tokens");
  });

  it("raises BadRequestError context_length_exceeded when the tokenizer finds the prompt too long", async () => {
    const error = (await client()
      .completions.create({ model: MODEL, prompt: "word ".repeat(h.model.maxInputLen + 5), max_tokens: 1 })
      .catch((e: unknown) => e)) as InstanceType<typeof OpenAI.BadRequestError>;
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect(error.code).toBe("context_length_exceeded");
  });
});
