/**
 * A model's canary (images/gateway/src/canary/): the weighted split's share,
 * exact per hundred on each pod and within 3 points over 2,000 requests across
 * three pods whatever their share of the load; the rollback rule's arithmetic
 * (the TTFT buckets and p95, the error rate and the TTFT ratio at and past
 * their limits, minRequests); the sliding window of samples; a monitor
 * without a store judging alone and deciding once; the config's refusals;
 * and, in process against two in-memory Tritons, the split, the canary's own
 * cap, the build label, the usage, the response header and /v1/models before
 * and after a rollback. The same against real tritonservers and a real store
 * across three gateway processes: test/gateway/canary.test.ts.
 */
import { afterEach, describe, expect, it } from "vitest";
import { buildGateway } from "../../../images/gateway/src/app";
import { KeyRing, sha256Hex } from "../../../images/gateway/src/auth/keyRing";
import { GatewayConfigSchema } from "../../../images/gateway/src/config";
import { GatewayMetrics, METRICS } from "../../../images/gateway/src/telemetry/metrics";
import { WeightedSplit, type Build } from "../../../images/gateway/src/canary/weightedSplit";
import {
  TTFT_BUCKET_FACTOR,
  type WindowTally,
  bucketUpper,
  judge,
  p95,
  ttftBucket,
} from "../../../images/gateway/src/canary/rollbackRule";
import { CanarySamples, SLOTS, tallyOf } from "../../../images/gateway/src/canary/canarySamples";
import { CanaryRoute } from "../../../images/gateway/src/canary/canaryRoute";
import { CanaryMonitor } from "../../../images/gateway/src/canary/canaryMonitor";
import type { Canary } from "../../../images/gateway/src/canary/canaryConfig";
import { upstream } from "../../../images/gateway/src/server/apiError";
import { FakeTriton, TEST_MODEL } from "./fakeTriton";
import { resolveStack } from "../../../infra/resolve";
import { buildStackPlan } from "../../../infra/plan/stack";
import { REPO_ROOT, repoPathHasher } from "../../../infra/repoFiles";
import { SEED_CANARY_STACK, stackFileConfig } from "../../lib/modelsForm";
import { BUILD_SERIES_LABEL, CANARY_ROLLED_BACK_METRIC } from "../../../infra/render/observability";
import { LABELS } from "../../../images/gateway/src/telemetry/metrics";

const RULE = { maxErrorRate: 0.05, maxTtftRatio: 1.5, windowSeconds: 60, minRequests: 20 };
const CANARY: Canary = {
  id: "c-1a2b3c4d",
  weight: 30,
  triton: { grpc: "in-memory:9001", ensemble: "ensemble" },
  maxInflight: 2,
  rollback: RULE,
};

describe("the weighted split", () => {
  it("sends exactly `weight` of every 100 consecutive requests to the canary, for every weight", () => {
    for (let weight = 1; weight <= 99; weight++) {
      const split = new WeightedSplit(weight);
      for (let hundred = 0; hundred < 3; hundred++) {
        let canary = 0;
        for (let i = 0; i < 100; i++) if (split.next() === "canary") canary += 1;
        expect(canary, `weight ${weight}, hundred ${hundred}`).toBe(weight);
      }
    }
  });

  it("spreads the canary's requests evenly (weight 10: one in ten, never two in a row)", () => {
    const split = new WeightedSplit(10);
    const picks = Array.from({ length: 100 }, () => split.next());
    const at = picks.flatMap((b, i) => (b === "canary" ? [i] : []));
    expect(at.slice(1).map((i, k) => i - at[k])).toEqual(Array(9).fill(10));
  });

  it("holds the share within 3 points over 2,000 requests across three pods, however unevenly they are spread", () => {
    for (const weight of [1, 10, 33, 50, 90]) {
      // Three pods behind a load balancer that sends them 50 %, 30 % and 20 % of the requests, in a
      // fixed pseudo-random order (a linear congruential generator, so the test cannot flake).
      const pods = [new WeightedSplit(weight), new WeightedSplit(weight), new WeightedSplit(weight)];
      let seed = 7;
      let canary = 0;
      const perPod = [0, 0, 0];
      const perPodCanary = [0, 0, 0];
      for (let i = 0; i < 2000; i++) {
        seed = (seed * 1103515245 + 12345) % 2 ** 31;
        const r = seed / 2 ** 31;
        const pod = r < 0.5 ? 0 : r < 0.8 ? 1 : 2;
        perPod[pod] += 1;
        if (pods[pod].next() === "canary") {
          canary += 1;
          perPodCanary[pod] += 1;
        }
      }
      expect(Math.abs((canary / 2000) * 100 - weight), `weight ${weight}`).toBeLessThanOrEqual(3);
      // Each pod on its own: within one request per started hundred.
      perPod.forEach((n, p) => expect(Math.abs(perPodCanary[p] - (n * weight) / 100)).toBeLessThanOrEqual(1));
    }
  });

  it("refuses a weight outside 1..99", () => {
    expect(() => new WeightedSplit(0)).toThrow(/1\.\.99/);
    expect(() => new WeightedSplit(100)).toThrow(/1\.\.99/);
  });
});

/** A tally of `n` TTFTs of `seconds` each, by build. */
function hist(entries: Array<[number, number]>): Map<number, number> {
  const h = new Map<number, number>();
  for (const [seconds, n] of entries) h.set(ttftBucket(seconds), (h.get(ttftBucket(seconds)) ?? 0) + n);
  return h;
}

function tally(t: Partial<WindowTally>): WindowTally {
  return { finished: 0, errors: 0, canaryTtft: new Map(), stableTtft: new Map(), ...t };
}

describe("the rollback rule", () => {
  it("puts a TTFT in the first bucket whose upper bound holds it, each bound 2^(1/8) above the last", () => {
    for (const s of [0.0005, 0.001, 0.0011, 0.05, 0.1234, 1, 7.7, 120]) {
      const i = ttftBucket(s);
      expect(bucketUpper(i)).toBeGreaterThanOrEqual(s * (1 - 1e-9));
      if (i > 0) expect(bucketUpper(i - 1)).toBeLessThan(s);
    }
    expect(bucketUpper(5) / bucketUpper(4)).toBeCloseTo(TTFT_BUCKET_FACTOR, 12);
  });

  it("reads p95 as the nearest rank's bucket bound", () => {
    // 100 samples: 95 at 0.1 s, 5 at 2 s: the 95th is 0.1 s.
    expect(
      p95(
        hist([
          [0.1, 95],
          [2, 5],
        ]),
      ),
    ).toBe(bucketUpper(ttftBucket(0.1)));
    // 94 and 6: the 95th is 2 s.
    expect(
      p95(
        hist([
          [0.1, 94],
          [2, 6],
        ]),
      ),
    ).toBe(bucketUpper(ttftBucket(2)));
    expect(p95(new Map())).toBeUndefined();
  });

  it("judges nothing before minRequests canary requests finished", () => {
    expect(judge(tally({ finished: 19, errors: 19 }), RULE)).toBeUndefined();
    expect(judge(tally({ finished: 20, errors: 20 }), RULE)?.reason).toBe("error_rate");
  });

  it("rolls back on an error rate above maxErrorRate, not at it", () => {
    expect(judge(tally({ finished: 100, errors: 5 }), RULE)).toBeUndefined();
    const v = judge(tally({ finished: 100, errors: 6 }), RULE);
    expect(v?.reason).toBe("error_rate");
    expect(v?.detail).toMatch(/6 of 100 canary requests failed \(6\.0 %, the limit is 5\.0 %\)/);
  });

  it("rolls back on a canary p95 TTFT above maxTtftRatio × the stable build's, not at or below it", () => {
    const b = ttftBucket(0.1);
    const stable = new Map([[b, 100]]);
    // Four buckets up is 2^(4/8) = 1.41 × the stable p95 (kept); five is 1.54 × (past 1.5).
    const kept = judge(tally({ finished: 100, canaryTtft: new Map([[b + 4, 100]]), stableTtft: stable }), RULE);
    expect(kept).toBeUndefined();
    const v = judge(tally({ finished: 100, canaryTtft: new Map([[b + 5, 100]]), stableTtft: stable }), RULE);
    expect(v?.reason).toBe("ttft");
    expect(v?.detail).toMatch(/× the stable build's/);
  });

  it("compares TTFT only with minRequests first tokens of each build", () => {
    const slow = hist([[1, 100]]);
    expect(judge(tally({ finished: 100, canaryTtft: slow, stableTtft: hist([[0.1, 19]]) }), RULE)).toBeUndefined();
    expect(judge(tally({ finished: 100, canaryTtft: slow, stableTtft: hist([[0.1, 20]]) }), RULE)?.reason).toBe("ttft");
  });

  it("checks the error rate first: a failing canary that is also slow rolls back for its errors", () => {
    const t = tally({ finished: 50, errors: 50, canaryTtft: hist([[5, 50]]), stableTtft: hist([[0.1, 50]]) });
    expect(judge(t, RULE)?.reason).toBe("error_rate");
  });
});

describe("the samples", () => {
  it("keep a window of SLOTS slots that slides with the clock, and hand over what the store has not had", () => {
    let now = 1_000_000_000;
    const s = new CanarySamples(60, () => now);
    expect(s.slotMs).toBe((60 * 1000) / SLOTS);
    s.record({ build: "canary", failed: true, ttftSeconds: 0.2 });
    s.record({ build: "canary", failed: false });
    s.record({ build: "stable", failed: true, ttftSeconds: 0.1 });
    expect(s.localTally()).toMatchObject({ finished: 2, errors: 1 });
    expect(s.localTally().stableTtft.get(ttftBucket(0.1))).toBe(1);
    const pending = s.takePending();
    expect(tallyOf(pending.values())).toMatchObject({ finished: 2, errors: 1 });
    expect(s.takePending().size).toBe(0);
    s.putBack(pending);
    expect(tallyOf(s.takePending().values())).toMatchObject({ finished: 2, errors: 1 });
    // A window later the samples are out of it.
    now += 60_000;
    expect(s.localTally()).toMatchObject({ finished: 0, errors: 0 });
  });
});

describe("a monitor without a store", () => {
  it("judges the pod's own samples, rolls the canary back once with the reason, and never brings it back", async () => {
    const route = new CanaryRoute(CANARY, new FakeTriton());
    const decided: string[] = [];
    const warned: unknown[] = [];
    const log = { warn: (o: unknown) => warned.push(o) } as unknown as ConstructorParameters<
      typeof CanaryMonitor
    >[0]["log"];
    const monitor = new CanaryMonitor({ model: "m", route, log, onDecided: (d) => decided.push(d.reason) });
    for (let i = 0; i < 19; i++) route.samples.record({ build: "canary", failed: true });
    await monitor.tick();
    expect(route.state).toBe("serving");
    route.samples.record({ build: "canary", failed: true });
    await monitor.tick();
    expect(route.state).toBe("rolled_back");
    expect(route.card()).toEqual({ id: CANARY.id, weight: 30, state: "rolled_back", reason: "error_rate" });
    // The window still breaks the rule at the next tick: decided once, not again.
    await monitor.tick();
    expect(decided).toEqual(["error_rate"]);
    // Healthy samples afterwards change nothing: the decision is sticky for this id.
    for (let i = 0; i < 1000; i++) route.samples.record({ build: "canary", failed: false });
    await monitor.tick();
    expect(route.state).toBe("rolled_back");
    expect(decided).toEqual(["error_rate"]);
    expect(warned).toHaveLength(1);
    expect(Array.from({ length: 100 }, () => route.pick()).every((b) => b === "stable")).toBe(true);
  });

  it("with a store to read first, sends nothing to the canary before the decision was read", () => {
    const route = new CanaryRoute(CANARY, new FakeTriton(), true);
    expect(route.state).toBe("pending");
    expect(Array.from({ length: 100 }, () => route.pick()).includes("canary")).toBe(false);
    route.confirm();
    expect(Array.from({ length: 100 }, () => route.pick()).filter((b) => b === "canary")).toHaveLength(30);
  });
});

describe("the canary's config", () => {
  const entry = { ...TEST_MODEL, canary: CANARY };
  const problems = (model: unknown): string[] => {
    const r = GatewayConfigSchema.safeParse({ models: [model] });
    return r.success ? [] : r.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`);
  };

  it("parses the contract's block", () => {
    expect(problems(entry)).toEqual([]);
  });

  it("refuses unknown keys, weights outside 1..99, a window outside 60..3600 s, ratios and rates out of range", () => {
    expect(problems({ ...entry, canary: { ...CANARY, extra: 1 } })).toEqual([
      expect.stringMatching(/^models\.0\.canary: .*extra/),
    ]);
    expect(problems({ ...entry, canary: { ...CANARY, weight: 0 } })[0]).toMatch(/^models\.0\.canary\.weight/);
    expect(problems({ ...entry, canary: { ...CANARY, weight: 100 } })[0]).toMatch(/^models\.0\.canary\.weight/);
    expect(problems({ ...entry, canary: { ...CANARY, weight: 12.5 } })[0]).toMatch(/^models\.0\.canary\.weight/);
    const rule = (r: Record<string, unknown>) =>
      problems({ ...entry, canary: { ...CANARY, rollback: { ...RULE, ...r } } });
    expect(rule({ windowSeconds: 59 })[0]).toMatch(/rollback\.windowSeconds/);
    expect(rule({ windowSeconds: 3601 })[0]).toMatch(/rollback\.windowSeconds/);
    expect(rule({ maxErrorRate: 0 })[0]).toMatch(/rollback\.maxErrorRate/);
    expect(rule({ maxErrorRate: 1 })[0]).toMatch(/rollback\.maxErrorRate/);
    expect(rule({ maxTtftRatio: 1 })[0]).toMatch(/rollback\.maxTtftRatio/);
    expect(rule({ minRequests: 0 })[0]).toMatch(/rollback\.minRequests/);
    expect(problems({ ...entry, canary: { ...CANARY, id: "C_1" } })[0]).toMatch(/canary\.id/);
  });

  it("parses what the stack renders for the example canary stack (infra/plan/gateway.ts, the contract's other side)", () => {
    const raw = stackFileConfig(SEED_CANARY_STACK) as Record<string, unknown>;
    const r = resolveStack(raw, {}, { today: "2026-11-25" });
    expect(r.problems).toEqual([]);
    const sp = buildStackPlan(r.models ?? [], "seed-models", repoPathHasher(REPO_ROOT));
    const parsed = GatewayConfigSchema.safeParse(sp.gateway.plan.config);
    expect(parsed.error?.issues ?? []).toEqual([]);
    const withCanary = parsed.data?.models.filter((m) => m.canary) ?? [];
    expect(withCanary).toHaveLength(1);
    expect(withCanary[0].canary?.triton.grpc).not.toBe(withCanary[0].triton.grpc);
  });

  it("names its metric and label as the stack's alert and dashboard read them", () => {
    expect(CANARY_ROLLED_BACK_METRIC).toBe(METRICS.canaryRolledBack);
    expect(BUILD_SERIES_LABEL).toBe(LABELS.build);
  });

  it("refuses a canary on a model that may sleep, and a canary calling the stable build's Triton", () => {
    const wake = { queueDepth: 5, activationTimeoutSeconds: 60 };
    expect(problems({ ...entry, wake })).toEqual([expect.stringMatching(/^models\.0\.canary: .*wake and canary/)]);
    expect(
      problems({ ...entry, canary: { ...CANARY, triton: { ...TEST_MODEL.triton, ensemble: "ensemble" } } }),
    ).toEqual([expect.stringMatching(/^models\.0\.canary\.triton: .*its own/)]);
  });
});

describe("a model with a canary, in process", () => {
  type App = ReturnType<typeof buildGateway>;
  const open: App[] = [];
  afterEach(async () => {
    await Promise.all(open.splice(0).map((a) => a.close()));
  });
  const KEY = "key-team-a";

  async function app(): Promise<{ app: App; stable: FakeTriton; canary: FakeTriton; metrics: GatewayMetrics }> {
    const config = GatewayConfigSchema.parse({ models: [{ ...TEST_MODEL, canary: CANARY }] });
    const stable = new FakeTriton();
    const canary = new FakeTriton();
    const metrics = new GatewayMetrics();
    const a = buildGateway({
      config,
      keys: new KeyRing({ consumers: [{ name: "team-a", keySha256: [sha256Hex(KEY)], maxConcurrent: 100 }] }),
      tritons: new Map([["m", stable]]),
      canaryTritons: new Map([["m", canary]]),
      metrics,
      logger: false,
    });
    open.push(a);
    await a.ready();
    return { app: a, stable, canary, metrics };
  }
  const complete = (a: App, stream = false) =>
    a.inject({
      method: "POST",
      url: "/v1/completions",
      headers: { authorization: `Bearer ${KEY}` },
      payload: { model: "m", prompt: "hi", max_tokens: 2, stream },
    });
  async function value(metrics: GatewayMetrics, name: string, labels: Record<string, string>): Promise<number> {
    const metric = (await metrics.registry.getMetricsAsJSON()).find((m) => m.name === name);
    const values = (metric?.values ?? []) as { labels: Record<string, string | number>; value: number }[];
    return values
      .filter((v) => Object.entries(labels).every(([k, want]) => String(v.labels[k]) === want))
      .reduce((n, v) => n + v.value, 0);
  }

  it("sends its weight to the canary's own Triton, says which build answered, and labels the series", async () => {
    const { app: a, stable, canary, metrics } = await app();
    const builds: Build[] = [];
    for (let i = 0; i < 50; i++) {
      const r = await complete(a, i % 2 === 0);
      expect(r.statusCode).toBe(200);
      builds.push(r.headers["x-triton-ft-build"] as Build);
    }
    expect(canary.calls).toHaveLength(15);
    expect(stable.calls).toHaveLength(35);
    expect(builds.filter((b) => b === "canary")).toHaveLength(15);
    const ok = { route: "/v1/completions", status: "200", model: "m" };
    expect(await value(metrics, METRICS.requests, { ...ok, build: "canary" })).toBe(15);
    expect(await value(metrics, METRICS.requests, { ...ok, build: "stable" })).toBe(35);
    expect(await value(metrics, METRICS.outputTokens, { model: "m", build: "canary" })).toBe(30);
    expect(await value(metrics, METRICS.canaryRolledBack, { model: "m", canary: CANARY.id })).toBe(0);
    const usage = await a.inject({ method: "GET", url: "/v1/usage", headers: { authorization: `Bearer ${KEY}` } });
    const m = (usage.json() as { today: { models: Array<{ requests: number; canary?: { requests: number } }> } }).today
      .models[0];
    expect(m.requests).toBe(50);
    expect(m.canary?.requests).toBe(15);
  });

  it("holds the canary to its own in-flight cap, apart from the stable build's", async () => {
    const { app: a, canary } = await app();
    canary.hold();
    // Ten requests: three are picked for the canary, whose cap is 2 (the model's is 64).
    const pending = Array.from({ length: 10 }, () => complete(a));
    while (canary.calls.length < 2) await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setTimeout(resolve, 50));
    canary.release();
    const answers = await Promise.all(pending);
    const by = (build: string, status: number) =>
      answers.filter((r) => r.headers["x-triton-ft-build"] === build && r.statusCode === status).length;
    expect([by("stable", 200), by("canary", 200), by("canary", 503)]).toEqual([7, 2, 1]);
    const refused = answers.find((r) => r.statusCode === 503);
    expect(refused?.body).toMatch(/the model 'm' \(its canary build\) has 2 generations in flight, its limit is 2/);
  });

  it("shows its state in /v1/models, and once rolled back sends every new request to the stable build", async () => {
    const { app: a, canary, metrics } = await app();
    const card = async () =>
      (await a.inject({ method: "GET", url: "/v1/models/m", headers: { authorization: `Bearer ${KEY}` } })).json() as {
        canary: unknown;
      };
    expect((await card()).canary).toEqual({ id: CANARY.id, weight: 30, state: "serving", reason: null });
    canary.refuseWith = upstream("injected");
    const first = [];
    for (let i = 0; i < 100; i++) first.push(await complete(a));
    expect(first.filter((r) => r.statusCode === 502)).toHaveLength(30);
    // The monitor's first tick ran at start-up; the next one within TICK_MS judges the 30 failures.
    await new Promise((resolve) => setTimeout(resolve, 2200));
    expect((await card()).canary).toEqual({ id: CANARY.id, weight: 30, state: "rolled_back", reason: "error_rate" });
    expect(await value(metrics, METRICS.canaryRolledBack, { model: "m", canary: CANARY.id })).toBe(1);
    expect(await value(metrics, METRICS.canaryRollbacks, { model: "m", canary: CANARY.id, reason: "error_rate" })).toBe(
      1,
    );
    const calls = canary.calls.length;
    const after = await Promise.all(Array.from({ length: 50 }, () => complete(a)));
    expect(after.every((r) => r.statusCode === 200 && r.headers["x-triton-ft-build"] === "stable")).toBe(true);
    expect(canary.calls).toHaveLength(calls);
  });
});
