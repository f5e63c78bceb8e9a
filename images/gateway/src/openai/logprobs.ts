/**
 * The `logprobs` objects of OpenAI's responses, from the tokens a generation
 * returned (generate.ts: each token's text, log probability and, from a vLLM
 * model, its top alternatives). Streamed chunks carry their own tokens' part.
 */
import type { TokenLogprob } from "./generate";

/**
 * Completions `logprobs`: `tokens`, `token_logprobs`, `text_offset`, and
 * `top_logprobs`: per token an object of its top alternatives' texts to their
 * log probabilities, with the sampled token always among them (OpenAI: "up to
 * logprobs+1 elements"; of two alternatives with one text, the better ranked).
 * `null` where the engine computes no alternatives (FasterTransformer).
 */
export function completionLogprobs(
  tokens: readonly TokenLogprob[],
  offset: number,
  alternatives: boolean,
): Record<string, unknown> {
  const textOffset: number[] = [];
  let at = offset;
  for (const t of tokens) {
    textOffset.push(at);
    at += t.text.length;
  }
  return {
    tokens: tokens.map((t) => t.text),
    token_logprobs: tokens.map((t) => t.logprob),
    top_logprobs: alternatives ? tokens.map(topObject) : null,
    text_offset: textOffset,
  };
}

function topObject(t: TokenLogprob): Record<string, number> {
  const out: Record<string, number> = {};
  for (const a of t.top ?? []) if (!Object.hasOwn(out, a.text)) out[a.text] = a.logprob;
  if (!Object.hasOwn(out, t.text)) out[t.text] = t.logprob;
  return out;
}

function bytes(text: string): number[] {
  return [...Buffer.from(text, "utf8")];
}

/** Chat `logprobs`: one entry per token, with its `top_logprobs` (as many as asked: none on FasterTransformer). */
export function chatLogprobs(tokens: readonly TokenLogprob[]): Record<string, unknown> {
  return {
    content: tokens.map((t) => ({
      token: t.text,
      logprob: t.logprob,
      bytes: bytes(t.text),
      top_logprobs: (t.top ?? []).map((a) => ({ token: a.text, logprob: a.logprob, bytes: bytes(a.text) })),
    })),
    refusal: null,
  };
}
