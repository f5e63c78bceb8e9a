/**
 * The gateway's gRPC channel to Triton is built with a bounded reconnect
 * backoff (see triton/tritonClient.ts). A real-process version (a local server stopped
 * 20 s, then restarted) recovered within 6 s with and without the options
 * here, so it proved nothing and is not kept.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import {
  INITIAL_RECONNECT_BACKOFF_MS,
  LONGEST_RECONNECT_WAIT_MS,
  MAX_RECONNECT_BACKOFF_MS,
  RECONNECT_JITTER,
  TritonGateway,
} from "../../../images/gateway/src/triton/tritonClient";

/** The grpc-js the gateway runs on in the tests (the root's; images/gateway/package.json pins the same version). */
const BACKOFF_SOURCE = path.join(__dirname, "../../../node_modules/@grpc/grpc-js/build/src/backoff-timeout.js");

describe("gRPC channel to Triton", () => {
  it("is built with a bounded reconnect backoff", () => {
    const client = new TritonGateway("127.0.0.1:1", "ensemble");
    try {
      expect(client.channelOptions).toMatchObject({
        "grpc.initial_reconnect_backoff_ms": INITIAL_RECONNECT_BACKOFF_MS,
        "grpc.max_reconnect_backoff_ms": MAX_RECONNECT_BACKOFF_MS,
      });
      // grpc-js jitters every delay: the longest wait, not the cap, must fit the 5 s promise.
      expect(LONGEST_RECONNECT_WAIT_MS).toBeLessThan(5000);
    } finally {
      client.close();
    }
  });

  it("states grpc-js's own jitter (its BACKOFF_JITTER), which the 5 s bound rests on", () => {
    const source = readFileSync(BACKOFF_SOURCE, "utf8");
    const jitter = /const BACKOFF_JITTER = ([0-9.]+);/.exec(source)?.[1];
    expect(Number(jitter)).toBe(RECONNECT_JITTER);
  });
});
