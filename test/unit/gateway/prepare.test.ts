/**
 * A generation's Triton request is built while admission decides (with a
 * shared store, during its round trip: issue 33, item 7): the request sent is
 * the one prepared, and a request that cannot be prepared is still served or
 * refused by `serve` as before, with nothing left held.
 */
import { afterEach, describe, expect, it } from "vitest";
import { buildGateway } from "../../../images/gateway/src/app";
import { KeyRing, sha256Hex } from "../../../images/gateway/src/auth/keyRing";
import { GatewayConfigSchema } from "../../../images/gateway/src/config";
import { GatewayMetrics } from "../../../images/gateway/src/telemetry/metrics";
import { FakeTriton, TEST_MODEL } from "./fakeTriton";

type FastifyInstance = ReturnType<typeof buildGateway>;

const open: FastifyInstance[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((app) => app.close()));
});

function gateway(): { app: FastifyInstance; triton: FakeTriton } {
  const config = GatewayConfigSchema.parse({ models: [TEST_MODEL], limits: {} });
  // One request at a time: a permit left held would refuse the next request.
  const keys = new KeyRing({
    consumers: [
      { name: "team", keySha256: [sha256Hex("key-team")] },
      { name: "solo", keySha256: [sha256Hex("key-solo")], maxConcurrent: 1 },
    ],
  });
  const triton = new FakeTriton();
  const app = buildGateway({
    config,
    keys,
    tritons: new Map([[TEST_MODEL.id, triton]]),
    metrics: new GatewayMetrics(),
    logger: false,
  });
  open.push(app);
  return { app, triton };
}

const post = (app: FastifyInstance, url: string, body: Record<string, unknown>, key = "key-team") =>
  app.inject({
    method: "POST",
    url,
    headers: { authorization: `Bearer ${key}` },
    payload: { model: TEST_MODEL.id, ...body },
  });

describe("the Triton request prepared during admission", () => {
  it.each([
    ["/v1/completions", { prompt: ["a b", "c d"], max_tokens: 2 }],
    ["/v1/chat/completions", { messages: [{ role: "user", content: "hi" }], max_tokens: 2, stream: true }],
  ])("is the request %s sends to Triton, prompt by prompt", async (url, body) => {
    const { app, triton } = gateway();
    const r = await post(app, url, body);
    expect(r.statusCode).toBe(200);
    expect(triton.prepared.length).toBeGreaterThan(0);
    expect(triton.calls).toHaveLength(triton.prepared.length);
    triton.calls.forEach((sent, i) => expect(sent).toBe(triton.prepared[i]));
  });

  it("failing, leaves the request to serve, which builds it again and gives back its permit", async () => {
    const { app, triton } = gateway();
    triton.prepareFailsWith = new Error("cannot serialize");
    for (let i = 0; i < 2; i++) {
      const r = await post(app, "/v1/completions", { prompt: "a b", max_tokens: 2 }, "key-solo");
      expect(r.statusCode).toBe(200);
    }
    expect(triton.prepared).toHaveLength(0);
    expect(triton.calls).toHaveLength(2);
  });
});
