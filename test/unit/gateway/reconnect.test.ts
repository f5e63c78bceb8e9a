/**
 * The gateway's gRPC channel to Triton is built with a bounded reconnect
 * backoff (see triton/tritonClient.ts). A real-process version (a local server stopped
 * 20 s, then restarted) recovered within 6 s with and without the options
 * here, so it proved nothing and is not kept.
 */
import { describe, expect, it } from "vitest";
import {
  INITIAL_RECONNECT_BACKOFF_MS,
  MAX_RECONNECT_BACKOFF_MS,
  TritonGateway,
} from "../../../images/gateway/src/triton/tritonClient";

describe("gRPC channel to Triton", () => {
  it("is built with a bounded reconnect backoff", () => {
    const client = new TritonGateway("127.0.0.1:1", "ensemble");
    try {
      expect(client.channelOptions).toMatchObject({
        "grpc.initial_reconnect_backoff_ms": INITIAL_RECONNECT_BACKOFF_MS,
        "grpc.max_reconnect_backoff_ms": MAX_RECONNECT_BACKOFF_MS,
      });
      expect(MAX_RECONNECT_BACKOFF_MS).toBeLessThanOrEqual(5000);
    } finally {
      client.close();
    }
  });
});
