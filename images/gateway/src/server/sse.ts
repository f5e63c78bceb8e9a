/**
 * Server-Sent Events on a raw response: the headers every stream of the
 * gateway sends, data events and comment lines. A comment (a line starting
 * with ':') is ignored by every SSE client (the WHATWG parser and OpenAI's
 * SDKs skip it) but is bytes on the wire: it keeps idle timers from firing.
 */
import type { ServerResponse } from "node:http";

/** Status 200 and the stream's headers, sent at once (no proxy buffering: x-accel-buffering); `extra`: the request's own. */
export function openEventStream(raw: ServerResponse, requestId: string, extra: Record<string, string> = {}): void {
  raw.writeHead(200, {
    ...extra,
    "content-type": "text/event-stream; charset=utf-8",
    "cache-control": "no-cache",
    connection: "keep-alive",
    "x-accel-buffering": "no",
    "x-request-id": requestId,
  });
}

/** Whether bytes can still be written: not ended, and the client still there. */
export function writable(raw: ServerResponse): boolean {
  return !raw.writableEnded && !raw.destroyed;
}

/** One `data:` event holding `data` as JSON. */
export function sendEvent(raw: ServerResponse, data: unknown): void {
  if (writable(raw)) raw.write(`data: ${JSON.stringify(data)}\n\n`);
}

/** One `data:` event holding `json`, already serialized. */
export function sendJsonEvent(raw: ServerResponse, json: string): void {
  if (writable(raw)) raw.write(`data: ${json}\n\n`);
}

/** One comment line (": <text>"), which clients ignore. */
export function sendComment(raw: ServerResponse, text: string): void {
  if (writable(raw)) raw.write(`: ${text}\n\n`);
}
