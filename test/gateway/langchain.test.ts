/**
 * LangChain (`@langchain/openai`, a client no one here wrote) against the gateway in front of the
 * real tritonserver's FT stand-in, with the defaults LangChain sends: its completions LLM (greedy
 * echo of the prompt, whole and streamed), its chat model (the preset's template, usage, finish
 * reason) and a wrong key. The stand-in echoes the prompt's tokens (test/gateway/openai.test.ts).
 */
import { ChatOpenAI, OpenAI as LangChainOpenAI } from "@langchain/openai";
import OpenAI from "openai";
import { describe, expect, inject, it } from "vitest";

const h = inject("gateway");
const MODEL = h.model.id;
const baseURL = `${h.main.url}/v1`;
const KEY = h.main.keys["team-a"];
/** The FT stand-in echoes the prompt; a random vLLM checkpoint's text is arbitrary. */
const ECHOES = h.upstream === "ft";

function llm(maxTokens: number, apiKey = KEY): LangChainOpenAI {
  return new LangChainOpenAI({
    model: MODEL,
    apiKey,
    configuration: { baseURL },
    maxRetries: 0,
    temperature: 0,
    maxTokens,
  });
}

/** Prompt tokens the test tokenizer makes of a prompt, as the gateway reports them (the official client). */
async function promptTokens(prompt: string): Promise<number> {
  const client = new OpenAI({ apiKey: KEY, baseURL, maxRetries: 0 });
  const r = await client.completions.create({ model: MODEL, prompt, max_tokens: 1, temperature: 0 });
  return r.usage?.prompt_tokens ?? -1;
}

describe("LangChain's completions LLM", () => {
  it("returns the greedy echo of the prompt, whole and streamed chunk by chunk", async () => {
    const prompt = "one two three four five six";
    const n = await promptTokens(prompt);
    expect(n).toBeGreaterThan(1);
    const whole = await llm(n).invoke(prompt);
    if (ECHOES) expect(whole).toBe(prompt);
    const chunks: string[] = [];
    for await (const chunk of await llm(n).stream(prompt)) chunks.push(chunk);
    // Greedy: the stream says what the whole answer said.
    expect(chunks.join("")).toBe(whole);
    expect(chunks.length).toBeGreaterThan(1);
  });

  it("surfaces a wrong key as the gateway's 401", async () => {
    const error = (await llm(2, "tft_wrong")
      .invoke("hello")
      .catch((e: unknown) => e)) as { status?: number };
    expect(error.status).toBe(401);
  });
});

describe("LangChain's chat model", () => {
  it("renders the messages with the preset's template: usage and finish reason as the gateway reports them", async () => {
    const content = "Say hello to the team";
    const chat = new ChatOpenAI({
      model: MODEL,
      apiKey: KEY,
      configuration: { baseURL },
      maxRetries: 0,
      temperature: 0,
      maxTokens: 12,
    });
    const r = await chat.invoke([["human", content]]);
    // The greedy echo starts with the template's own "<human>:", a stop sequence: nothing of it is returned.
    if (ECHOES) {
      expect(r.content).toBe("");
      expect(r.response_metadata.finish_reason).toBe("stop");
    }
    expect(r.usage_metadata?.input_tokens).toBe(await promptTokens(`<human>: ${content}\n<bot>:`));
  });
});
