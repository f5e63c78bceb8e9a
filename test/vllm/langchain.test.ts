/**
 * LangChain (`@langchain/openai`, a client no one here wrote) against the gateway in front of the
 * project's vLLM model (test/vllm/gatewaySetup.ts), with the defaults LangChain sends: its
 * completions LLM gives the official client's greedy text, whole and streamed; its chat model reads
 * the top alternatives vLLM serves (the greedy token first); a refusal reaches it as the 400.
 */
import { ChatOpenAI, OpenAI as LangChainOpenAI } from "@langchain/openai";
import OpenAI from "openai";
import { describe, expect, inject, it } from "vitest";
import { MAX_LOGPROBS } from "./tinyModels";

const h = inject("vllmGateway");
const GPT2 = h.vllm.models.gpt2;
const PROMPT = "The quick brown fox jumps over";
const baseURL = `${h.gateway.url}/v1`;
const KEY = h.gateway.keys["team-a"];

function chat(topLogprobs: number): ChatOpenAI {
  return new ChatOpenAI({
    model: GPT2.id,
    apiKey: KEY,
    configuration: { baseURL },
    maxRetries: 0,
    temperature: 0,
    maxTokens: 6,
    logprobs: true,
    topLogprobs,
  });
}

describe("LangChain against a vLLM model", () => {
  it("its completions LLM returns the official client's greedy text, whole and streamed", async () => {
    const official = new OpenAI({ apiKey: KEY, baseURL, maxRetries: 0, timeout: 120_000 });
    const want = await official.completions.create({ model: GPT2.id, prompt: PROMPT, max_tokens: 8, temperature: 0 });
    const llm = new LangChainOpenAI({
      model: GPT2.id,
      apiKey: KEY,
      configuration: { baseURL },
      maxRetries: 0,
      temperature: 0,
      maxTokens: 8,
    });
    const text = want.choices[0].text;
    expect(text.length).toBeGreaterThan(0);
    expect(await llm.invoke(PROMPT)).toBe(text);
    const chunks: string[] = [];
    for await (const chunk of await llm.stream(PROMPT)) chunks.push(chunk);
    expect(chunks.join("")).toBe(text);
  });

  it("its chat model reads the top alternatives per token, the greedy token first", async () => {
    const r = await chat(3).invoke([["human", PROMPT]]);
    const content = (r.response_metadata.logprobs as { content?: OpenAI.Chat.ChatCompletionTokenLogprob[] }).content;
    expect(content?.length).toBeGreaterThan(0);
    for (const entry of content ?? []) {
      expect(entry.top_logprobs).toHaveLength(3);
      expect(entry.top_logprobs[0].token).toBe(entry.token);
      expect(entry.top_logprobs[0].logprob).toBeCloseTo(entry.logprob, 5);
    }
    expect(content?.map((e) => e.token).join("")).toBe(r.content);
  });

  it("gets the gateway's 400 for more alternatives than the model serves", async () => {
    const error = (await chat(MAX_LOGPROBS + 1)
      .invoke([["human", "hi"]])
      .catch((e: unknown) => e)) as { status?: number };
    expect(error.status).toBe(400);
  });
});
