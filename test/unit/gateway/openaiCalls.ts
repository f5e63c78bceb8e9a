/** OpenAI requests to an in-process gateway (Fastify inject) with team-a's key, as the unit tests send them. */
import type { FastifyInstance } from "fastify";
import type { Tensor } from "../../../images/gateway/src/triton/tensors";

export type Json = Record<string, unknown>;

/** team-a's key in the unit tests' key rings. */
export const KEY = "key-team-a";

export interface Answer {
  status: number;
  json: Json;
  raw: string;
}

/** post, completions and chat, each body merged over `defaults` (e.g. a model id). */
export function openaiCalls(defaults: Json = {}): {
  post: (app: FastifyInstance, url: string, body: Json) => Promise<Answer>;
  complete: (app: FastifyInstance, body: Json) => Promise<Answer>;
  chat: (app: FastifyInstance, body: Json) => Promise<Answer>;
} {
  const post = async (app: FastifyInstance, url: string, body: Json): Promise<Answer> => {
    const r = await app.inject({
      method: "POST",
      url,
      headers: { authorization: `Bearer ${KEY}` },
      payload: { ...defaults, ...body },
    });
    let json: Json = {};
    try {
      json = r.json();
    } catch {
      // an event stream
    }
    return { status: r.statusCode, json, raw: r.body };
  };
  return {
    post,
    complete: (app, body) => post(app, "/v1/completions", { prompt: "a b c", ...body }),
    chat: (app, body) => post(app, "/v1/chat/completions", { messages: [{ role: "user", content: "hi" }], ...body }),
  };
}

/** The JSON events of a server-sent event stream, without the final [DONE]. */
export const events = (raw: string): Json[] =>
  raw
    .split("\n\n")
    .filter((e) => e.startsWith("data: ") && e !== "data: [DONE]")
    .map((e) => JSON.parse(e.slice(6)) as Json);

/** The named input tensor of a request the fake Triton received. */
export const input = (call: Tensor[], name: string): Tensor | undefined => call.find((t) => t.name === name);

/** An answer's OpenAI error object. */
export const error = (r: { json: Json }): Json => r.json.error as Json;
