/**
 * The bench's clients of the gateway target: one streamed completion
 * (OpenAI /v1/completions, SSE), timed at the first text chunk and at the
 * end of the stream.
 *
 * - `http` (the default): node:http on a keep-alive agent, headers and body
 *   in one write. The bench measures what the gateway adds over direct
 *   Triton, so its HTTP client should cost about what the direct target's
 *   gRPC client costs (a few tenths of a millisecond), not more.
 * - `fetch`: Node's fetch (undici), as the `openai` npm client sends. Traced
 *   on the 2-core CI machine, it spends about 0.7 ms before the headers leave
 *   and sends the body in a second write, then about 0.5 ms from the
 *   response's headers to its first chunk (web streams): the client's time,
 *   counted in the gateway's TTFT. docs/operations.md "Bench" gives both.
 */
import { Agent, request } from "node:http";
import type { Sample, Sender, Workload } from "./loadgen";

export const GATEWAY_CLIENTS = ["http", "fetch"] as const;
export type GatewayClient = (typeof GATEWAY_CLIENTS)[number];

export interface GatewayTarget {
  url: string;
  key: string;
  model: string;
}

/** Splits a stream of SSE text into the `data:` payloads of its events (the gateway sends one field per event). */
export class SseReader {
  private buffer = "";

  push(text: string): string[] {
    this.buffer += text;
    const out: string[] = [];
    let end: number;
    while ((end = this.buffer.indexOf("\n\n")) >= 0) {
      const event = this.buffer.slice(0, end);
      this.buffer = this.buffer.slice(end + 2);
      if (event.startsWith("data: ")) out.push(event.slice(6));
    }
    return out;
  }
}

/** One streamed completion's timing: TTFT at the first chunk with text, output tokens from the usage chunk. */
class CompletionTiming {
  private ttft = -1;
  private outputTokens = 0;

  constructor(private readonly started: number) {}

  data(payload: string): void {
    if (payload === "[DONE]") return;
    const chunk = JSON.parse(payload) as { choices?: { text?: string }[]; usage?: { completion_tokens: number } };
    if (this.ttft < 0 && chunk.choices?.[0]?.text) this.ttft = performance.now() - this.started;
    if (chunk.usage) this.outputTokens = chunk.usage.completion_tokens;
  }

  sample(): Sample {
    const latencyMs = performance.now() - this.started;
    return { ok: true, status: "200", ttftMs: this.ttft, latencyMs, outputTokens: this.outputTokens };
  }
}

function failure(status: string, started: number): Sample {
  return { ok: false, status, ttftMs: -1, latencyMs: performance.now() - started, outputTokens: 0 };
}

function body(t: GatewayTarget, w: Workload): string {
  return JSON.stringify({ model: t.model, prompt: w.prompt, max_tokens: w.maxTokens, temperature: 0, stream: true });
}

/** node:http, one keep-alive connection per concurrent client. */
function httpSender(t: GatewayTarget): { send: Sender; close: () => void } {
  const agent = new Agent({ keepAlive: true });
  const url = new URL("/v1/completions", t.url);
  const send: Sender = (w) =>
    new Promise((resolve) => {
      const started = performance.now();
      const payload = body(t, w);
      const req = request(
        url,
        {
          method: "POST",
          agent,
          headers: {
            authorization: `Bearer ${t.key}`,
            "content-type": "application/json",
            "content-length": Buffer.byteLength(payload),
          },
        },
        (res) => {
          if (res.statusCode !== 200) {
            res.resume();
            res.once("end", () => resolve(failure(String(res.statusCode), started)));
            return;
          }
          res.setEncoding("utf8");
          const events = new SseReader();
          const timing = new CompletionTiming(started);
          res.on("data", (text: string) => {
            for (const payload of events.push(text)) timing.data(payload);
          });
          res.once("end", () => resolve(timing.sample()));
          res.once("error", (error) => resolve(failure(error.message.slice(0, 60), started)));
        },
      );
      req.once("error", (error) => resolve(failure(error.message.slice(0, 60), started)));
      // Before the first write: an agent's new socket otherwise waits for Nagle's timer on the body.
      req.once("socket", (socket) => socket.setNoDelay(true));
      req.end(payload);
    });
  return { send, close: () => agent.destroy() };
}

/** Node's fetch (undici). */
function fetchSender(t: GatewayTarget): { send: Sender; close: () => void } {
  const send: Sender = async (w) => {
    const started = performance.now();
    const response = await fetch(`${t.url}/v1/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${t.key}`, "content-type": "application/json" },
      body: body(t, w),
    });
    if (response.status !== 200 || !response.body) {
      await response.text();
      return failure(String(response.status), started);
    }
    const decoder = new TextDecoder();
    const events = new SseReader();
    const timing = new CompletionTiming(started);
    for await (const bytes of response.body) {
      for (const payload of events.push(decoder.decode(bytes as Uint8Array, { stream: true }))) timing.data(payload);
    }
    return timing.sample();
  };
  return { send, close: () => undefined };
}

export function gatewaySender(t: GatewayTarget, client: GatewayClient = "http"): { send: Sender; close: () => void } {
  return client === "fetch" ? fetchSender(t) : httpSender(t);
}
