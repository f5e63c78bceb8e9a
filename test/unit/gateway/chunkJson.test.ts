/**
 * A streamed chunk serialized from its parts (the response's fields once, the
 * choice at every token) is byte for byte the JSON of the whole chunk: what
 * OpenAI's clients parse, in the field order they have always received.
 */
import { describe, expect, it } from "vitest";
import { chunkHead, chunkJson } from "../../../images/gateway/src/openai/chunkJson";

const fields = {
  id: "cmpl-0a1b",
  object: "text_completion",
  created: 1_795_000_000,
  model: 'gpt2 "q" \u00e9\u{1f600}',
};

describe("chunkJson", () => {
  const head = chunkHead(fields);
  const cases: Array<[string, object, object | undefined]> = [
    [
      "a completion's text",
      { index: 0, text: ' tok "x"\n\u2028\ud800', logprobs: null, finish_reason: null },
      undefined,
    ],
    ["a chat delta", { index: 3, delta: { content: "\u00e9t\u00e9" }, logprobs: null, finish_reason: null }, undefined],
    [
      "the role chunk",
      { index: 0, delta: { role: "assistant", content: "" }, logprobs: null, finish_reason: null },
      undefined,
    ],
    [
      "the last chunk, with the usage",
      { index: 1, text: "", logprobs: { tokens: ["a"], token_logprobs: [-0.5] }, finish_reason: "length" },
      { prompt_tokens: 5, completion_tokens: 16, total_tokens: 21 },
    ],
  ];
  it.each(cases)("serializes %s as JSON.stringify does the whole chunk", (_name, choice, usage) => {
    const whole = { ...fields, choices: [choice], ...(usage ? { usage } : {}) };
    expect(chunkJson(head, choice, usage)).toBe(JSON.stringify(whole));
  });
});
