/**
 * Requests to a model that may sleep, in process (`app.inject()` against the
 * in-memory Triton): held while its Triton is not ready and answered once it
 * is, a held stream's status and keepalive comments sent before any token,
 * the 429 past the queue's depth, the 503 model_unavailable after the
 * activation timeout (a status, or a held stream's last event), a held
 * request holding its team's permit, a request held again when the model's
 * Triton went away since the last poll, /v1/models' status, the held-requests
 * gauge, /readyz while the only model sleeps, and a model without `wake`
 * served as before. Real time, about 5 s: the watch polls every 500 ms and a
 * keepalive is at least 1 s apart.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { buildGateway } from "../../../images/gateway/src/app";
import { KeyRing, sha256Hex } from "../../../images/gateway/src/auth/keyRing";
import { GatewayConfigSchema } from "../../../images/gateway/src/config";
import { overloaded } from "../../../images/gateway/src/server/apiError";
import { GatewayMetrics, METRICS } from "../../../images/gateway/src/telemetry/metrics";
import { FakeTriton, OTHER_MODEL, TEST_MODEL } from "./fakeTriton";

type FastifyInstance = ReturnType<typeof buildGateway>;

const KEY = "key-team-a";
const SOLO_KEY = "key-solo";
const WAKE = { queueDepth: 2, activationTimeoutSeconds: 2, keepaliveSeconds: 1 };

const open: FastifyInstance[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((app) => app.close()));
});

/** `m` may sleep (its Triton starts unreachable); `other` never sleeps and is ready. */
function gateway(
  wake: typeof WAKE = WAKE,
  withOther = true,
): { app: FastifyInstance; triton: FakeTriton; metrics: GatewayMetrics } {
  const config = GatewayConfigSchema.parse({
    models: [{ ...TEST_MODEL, wake }, ...(withOther ? [OTHER_MODEL] : [])],
  });
  const keys = new KeyRing({
    consumers: [
      { name: "team-a", keySha256: [sha256Hex(KEY)] },
      { name: "solo", keySha256: [sha256Hex(SOLO_KEY)], maxConcurrent: 1 },
    ],
  });
  const triton = new FakeTriton();
  // Asleep: no server behind the model's Service.
  vi.spyOn(triton, "ready").mockRejectedValue(new Error("connect ECONNREFUSED"));
  const tritons = new Map([
    [TEST_MODEL.id, triton],
    [OTHER_MODEL.id, new FakeTriton()],
  ]);
  const metrics = new GatewayMetrics();
  const app = buildGateway({ config, keys, tritons, metrics, logger: false });
  open.push(app);
  return { app, triton, metrics };
}

function wakeUp(triton: FakeTriton): void {
  vi.spyOn(triton, "ready").mockResolvedValue(true);
}

const post = (app: FastifyInstance, body: Record<string, unknown>, key = KEY, model = "m") =>
  app.inject({
    method: "POST",
    url: "/v1/completions",
    headers: { authorization: `Bearer ${key}` },
    payload: { model, prompt: "hello", max_tokens: 2, ...body },
  });

async function held(metrics: GatewayMetrics): Promise<number> {
  const metric = (await metrics.registry.getMetricsAsJSON()).find((m) => m.name === METRICS.heldRequests);
  const values = (metric?.values ?? []) as { labels: Record<string, string>; value: number }[];
  return values.find((v) => v.labels.model === "m")?.value ?? Number.NaN;
}

async function until(check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 5000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error("condition not met within 5 s");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function statuses(app: FastifyInstance): Promise<Record<string, string>> {
  const r = await app.inject({ method: "GET", url: "/v1/models", headers: { authorization: `Bearer ${KEY}` } });
  const list = JSON.parse(r.body) as { data: { id: string; status: string }[] };
  return Object.fromEntries(list.data.map((m) => [m.id, m.status]));
}

describe("a model that may sleep", () => {
  it("holds a request while its Triton sleeps and answers it once ready; the gauge and the status follow", async () => {
    const { app, triton, metrics } = gateway();
    await app.ready();
    expect(await held(metrics)).toBe(0);
    expect(await statuses(app)).toEqual({ m: "sleeping", other: "ready" });
    const pending = post(app, {});
    await until(async () => (await held(metrics)) === 1);
    expect(triton.calls).toHaveLength(0);
    expect((await statuses(app)).m).toBe("waking");
    wakeUp(triton);
    const r = await pending;
    expect(r.statusCode).toBe(200);
    expect((JSON.parse(r.body) as { choices: { text: string }[] }).choices[0].text).toBe(" t1 t2");
    expect(await held(metrics)).toBe(0);
    expect((await statuses(app)).m).toBe("ready");
  });

  it("keeps the gateway ready while its only model sleeps: the pod must stay behind the load balancer", async () => {
    const { app } = gateway(WAKE, false);
    await app.ready();
    expect(await statuses(app)).toEqual({ m: "sleeping" });
    const r = await app.inject({ method: "GET", url: "/readyz" });
    expect([r.statusCode, r.body]).toEqual([200, JSON.stringify({ status: "ready" })]);
  });

  it("sends a held stream its 200 and keepalive comments before the first token", async () => {
    const { app, triton } = gateway();
    await app.ready();
    const pending = post(app, { stream: true });
    await new Promise((resolve) => setTimeout(resolve, 1_300));
    wakeUp(triton);
    const r = await pending;
    expect(r.statusCode).toBe(200);
    expect(r.headers["content-type"]).toBe("text/event-stream; charset=utf-8");
    // One comment at once, then one every 0.5 s (keepaliveSeconds 1, sent half a second early), then the generation.
    expect(r.body).toMatch(/^(: keepalive\n\n){3,4}data: /);
    expect(r.body.endsWith("data: [DONE]\n\n")).toBe(true);
  });

  it("keeps a released stream's keepalives going until Triton's first answer", async () => {
    const { app, triton } = gateway();
    await app.ready();
    // Awake soon, but its Triton answers the drained request only 1.3 s later (a queue drained at once).
    triton.hold();
    const pending = post(app, { stream: true });
    await new Promise((resolve) => setTimeout(resolve, 200));
    wakeUp(triton);
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    triton.release();
    const r = await pending;
    expect(r.body).toMatch(/^(: keepalive\n\n){3,4}data: /);
    expect(r.body.endsWith("data: [DONE]\n\n")).toBe(true);
  });

  it("holds a request again when the model's Triton went away since the last poll, instead of a 503", async () => {
    const { app, triton, metrics } = gateway();
    wakeUp(triton);
    await app.ready();
    await until(async () => (await statuses(app)).m === "ready");
    // Scaled to zero a moment ago: the watch still says ready, the first call finds no server.
    triton.refuseWith = overloaded("the inference server is unavailable", 2, "upstream_unavailable");
    const pending = post(app, {});
    await until(async () => triton.calls.length === 1 && (await held(metrics)) === 1);
    triton.refuseWith = undefined;
    const r = await pending;
    expect(r.statusCode).toBe(200);
    expect(triton.calls).toHaveLength(2);
  });

  it("refuses past the queue's depth with 429 and Retry-After", async () => {
    const { app, triton } = gateway();
    await app.ready();
    const first = post(app, {});
    const second = post(app, {});
    await new Promise((resolve) => setTimeout(resolve, 100));
    const third = await post(app, {});
    expect(third.statusCode).toBe(429);
    expect(JSON.parse(third.body)).toMatchObject({ error: { type: "rate_limit_error", code: "model_queue_full" } });
    expect(Number(third.headers["retry-after"])).toBeGreaterThanOrEqual(1);
    wakeUp(triton);
    expect([(await first).statusCode, (await second).statusCode]).toEqual([200, 200]);
  });

  it("answers 503 model_unavailable after the activation timeout; a held stream gets it as its last event", async () => {
    const { app, metrics } = gateway({ ...WAKE, activationTimeoutSeconds: 1 });
    await app.ready();
    const started = Date.now();
    const [plain, stream] = await Promise.all([post(app, {}), post(app, { stream: true })]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
    expect(plain.statusCode).toBe(503);
    expect(plain.headers["retry-after"]).toBe("5");
    expect(JSON.parse(plain.body)).toMatchObject({ error: { type: "server_error", code: "model_unavailable" } });
    expect(stream.statusCode).toBe(200);
    expect(stream.body).toMatch(
      /^(: keepalive\n\n){2,3}retry: 5000\ndata: \{"error":\{.*"code":"model_unavailable"\}\}\n\n$/,
    );
    expect(await held(metrics)).toBe(0);
    // The model that never sleeps is served meanwhile and after.
    expect((await post(app, {}, KEY, "other")).statusCode).toBe(200);
  });

  it("counts a held request against its team's limits, and gives its permit back on the timeout", async () => {
    const { app } = gateway({ ...WAKE, activationTimeoutSeconds: 1 });
    await app.ready();
    const first = post(app, {}, SOLO_KEY);
    await new Promise((resolve) => setTimeout(resolve, 100));
    const second = await post(app, {}, SOLO_KEY);
    expect(second.statusCode).toBe(429);
    expect(JSON.parse(second.body)).toMatchObject({ error: { code: "concurrency_limit_exceeded" } });
    expect((await first).statusCode).toBe(503);
    // The permit came back with the 503: the team is served by the model that never sleeps.
    expect((await post(app, {}, SOLO_KEY, "other")).statusCode).toBe(200);
  });
});

describe("a model that never sleeps", () => {
  it("is served as before: no hold, its gauge series 0, status ready", async () => {
    const { app, metrics } = gateway();
    await app.ready();
    expect((await post(app, {}, KEY, "other")).statusCode).toBe(200);
    const metric = (await metrics.registry.getMetricsAsJSON()).find((m) => m.name === METRICS.heldRequests);
    const series = ((metric?.values ?? []) as { labels: Record<string, string>; value: number }[]).map((v) => [
      v.labels.model,
      v.value,
    ]);
    expect(series).toEqual([
      ["m", 0],
      ["other", 0],
    ]);
    expect((await statuses(app)).other).toBe("ready");
  });
});
