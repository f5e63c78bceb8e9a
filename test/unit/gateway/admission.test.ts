/**
 * A team's own limits, fast and without a server: the one rule
 * (admission/windowRule.ts) on this pod alone (LocalLimits), and the shared
 * limiter (SharedLimits) over an in-memory stand-in of the store that can be
 * taken down, wiped (a restart without persistence) and brought back, with a
 * stand-in of the store's link. The clock is the test's. The same limiter
 * against a real Valkey/Redis, and its scripts against this rule, are in
 * test/gateway/sharedStore.test.ts and storeOutage.test.ts.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { Admission, type Admitted, type KeyLimits } from "../../../images/gateway/src/admission/podAdmission";
import {
  LocalLimits,
  SPARE_MS,
  SharedLimits,
  type StoreLink,
  degradedLimit,
} from "../../../images/gateway/src/admission/sharedLimits";
import {
  type Carry,
  LEASE_TIMEOUT_MS,
  MemoryAdmissionStore,
  type ReleaseRequest,
  type TakeRequest,
  type Verdict,
  WINDOW_MS,
} from "../../../images/gateway/src/admission/windowRule";
import { ApiError } from "../../../images/gateway/src/server/apiError";

/** 10:00:00 UTC on some day: the start of a window. */
const T0 = 29_000_000 * WINDOW_MS;

class Clock {
  now = T0;
  read = (): number => this.now;
}

/** The store, in memory: down (every call fails) or up; wipe() is a restart that lost its data. */
class StandInStore extends MemoryAdmissionStore {
  down = false;
  private check(): void {
    if (this.down) throw new Error("connect ECONNREFUSED");
  }
  wipe(): void {
    Object.assign(this, new MemoryAdmissionStore());
  }
  override async take(r: TakeRequest): Promise<Verdict> {
    this.check();
    return super.take(r);
  }
  override async release(r: ReleaseRequest): Promise<void> {
    this.check();
    return super.release(r);
  }
  override async renew(team: string, permits: readonly string[], expiresAt: number): Promise<void> {
    this.check();
    return super.renew(team, permits, expiresAt);
  }
  override async carry(team: string, window: number, requests: Carry, tokens: Carry): Promise<void> {
    this.check();
    return super.carry(team, window, requests, tokens);
  }
}

/** The link as store/sharedStore.ts keeps it: degraded on any failed call, exact again once its return hooks ran. */
class StandInLink implements StoreLink {
  isDegraded = false;
  private readonly hooks: Array<() => Promise<void>> = [];
  constructor(public podCount = 1) {}
  unreachable(): void {
    this.isDegraded = true;
  }
  onReturn(hook: () => Promise<void>): void {
    this.hooks.push(hook);
  }
  /** A heartbeat got through: the hooks, then exact (a hook that throws keeps it degraded). */
  async beat(): Promise<void> {
    if (!this.isDegraded) return;
    for (const hook of this.hooks) await hook();
    this.isDegraded = false;
  }
}

async function refusal(p: Promise<unknown>): Promise<ApiError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof ApiError) return e;
    throw e;
  }
  throw new Error("expected a refusal");
}

const TEAM = "team";

function pod(
  store: StandInStore,
  clock: Clock,
  pods = 1,
  maxInflight = 100,
): { limiter: SharedLimits; link: StandInLink } {
  const link = new StandInLink(pods);
  const limiter = new SharedLimits(link, store, new Admission(maxInflight), `pod-${Math.random()}`, clock.read);
  return { limiter, link };
}

describe("the rule on one pod (LocalLimits)", () => {
  it("counts requests in the clock's one-minute windows; Retry-After is the time to the window's end", async () => {
    const clock = new Clock();
    const l = new LocalLimits(new Admission(100), clock.read);
    const limits = { requestsPerMinute: 2, maxConcurrent: 10 };
    clock.now = T0 + 45_000;
    await (await l.admit(TEAM, limits, 1, 0)).release(0);
    await (await l.admit(TEAM, limits, 1, 0)).release(0);
    const e = await refusal(l.admit(TEAM, limits, 1, 0));
    expect([e.status, e.code, e.retryAfter]).toEqual([429, "rate_limit_exceeded", 15]);
    // The last millisecond of the window is still the window; the next one is a new window.
    clock.now = T0 + WINDOW_MS - 1;
    expect((await refusal(l.admit(TEAM, limits, 1, 0))).retryAfter).toBe(1);
    clock.now = T0 + WINDOW_MS;
    await l.admit(TEAM, limits, 1, 0);
  });

  it("reserves tokens, settles with the tokens used, refuses a reservation above the whole limit", async () => {
    const clock = new Clock();
    const l = new LocalLimits(new Admission(100), clock.read);
    const limits = { requestsPerMinute: 1000, maxConcurrent: 10, tokensPerMinute: 600 };
    const first = await l.admit(TEAM, limits, 1, 400);
    const e = await refusal(l.admit(TEAM, limits, 1, 300));
    expect([e.status, e.code, e.retryAfter]).toEqual([429, "rate_limit_exceeded", 60]);
    expect(e.message).toContain("token limit of 600 tokens per minute");
    await first.release(100); // 300 of the 400 reserved come back
    await (await l.admit(TEAM, limits, 1, 300)).release(300);
    const tooBig = await refusal(l.admit(TEAM, limits, 1, 601));
    expect(tooBig.message).toContain("more than this key's limit of 600 tokens per minute");
  });

  it("limits concurrency per key and frees the slot on release (idempotent)", async () => {
    const l = new LocalLimits(new Admission(100), new Clock().read);
    const limits = { requestsPerMinute: 100, maxConcurrent: 2 };
    const r1 = await l.admit(TEAM, limits, 1, 0);
    await l.admit(TEAM, limits, 1, 0);
    const e = await refusal(l.admit(TEAM, limits, 1, 0));
    expect([e.code, e.message]).toEqual([
      "concurrency_limit_exceeded",
      "this key already has 2 generation(s) in flight, its limit is 2",
    ]);
    await l.admit("other", limits, 1, 0);
    await r1.release(0);
    await r1.release(0);
    await l.admit(TEAM, limits, 1, 0);
    expect((await refusal(l.admit(TEAM, limits, 1, 0))).status).toBe(429);
  });

  it("gives the window back everything a request counted when the pod's capacity refuses it", async () => {
    const admission = new Admission(1);
    const l = new LocalLimits(admission, new Clock().read);
    const limits = { requestsPerMinute: 2, maxConcurrent: 5, tokensPerMinute: 100 };
    const first = await l.admit("other", limits, 1, 0);
    // A two-prompt request is above the team's fair share (1 slot of a cap of 1), and the pod is full.
    expect((await refusal(l.admit(TEAM, limits, 2, 100))).status).toBe(503);
    await first.release(0);
    // Had the refusal kept its count, the second request (or its 100 tokens) would be refused.
    await (await l.admit(TEAM, limits, 1, 100)).release(100);
    await l.admit(TEAM, limits, 1, 0);
  });
});

describe("the shared limiter (SharedLimits) over a stand-in of the store", () => {
  const limits: KeyLimits = { requestsPerMinute: 6, maxConcurrent: 1, tokensPerMinute: 1000 };

  it("gives the store back the request, tokens and permits when the pod's capacity refuses after the store admitted", async () => {
    const clock = new Clock();
    const store = new StandInStore();
    const { limiter } = pod(store, clock, 1, 1);
    const running = await limiter.admit("other", { ...limits, maxConcurrent: 5 }, 1, 0);
    // Two prompts: above the team's fair share (1 slot of a cap of 1), and the pod is full.
    const e = await refusal(limiter.admit(TEAM, { ...limits, maxConcurrent: 5 }, 2, 500));
    expect(e.status).toBe(503);
    await new Promise((r) => setImmediate(r));
    const w = Math.floor(clock.now / WINDOW_MS);
    expect([store.count(TEAM, "requests", w), store.count(TEAM, "tokens", w), store.heldBy(TEAM, clock.now)]).toEqual([
      0, 0, 0,
    ]);
    await running.release(0);
  });

  it("holds a permit until released, settles tokens with the usage, Retry-After to the window's end", async () => {
    const clock = new Clock();
    const store = new StandInStore();
    const { limiter } = pod(store, clock);
    clock.now = T0 + 50_000;
    const first = await limiter.admit(TEAM, limits, 1, 600);
    const busy = await refusal(limiter.admit(TEAM, limits, 1, 100));
    expect([busy.code, busy.retryAfter]).toEqual(["concurrency_limit_exceeded", 1]);
    await first.release(200);
    expect(store.count(TEAM, "tokens", Math.floor(clock.now / WINDOW_MS))).toBe(200);
    const tokens = await refusal(limiter.admit(TEAM, limits, 1, 900));
    expect([tokens.message.startsWith("token limit of 1000"), tokens.retryAfter]).toEqual([true, 10]);
  });

  it("switches to the pod's own rule when the store fails, with its part of the limits; never a 500", async () => {
    const clock = new Clock();
    const store = new StandInStore();
    const { limiter, link } = pod(store, clock, 2);
    store.down = true;
    const rpm = { requestsPerMinute: 6, maxConcurrent: 16 };
    // Nothing seen in this window: 6 / 2 pods = 3 on this pod.
    for (let i = 0; i < 3; i++) await (await limiter.admit(TEAM, rpm, 1, 0)).release(0);
    expect(link.isDegraded).toBe(true);
    const e = await refusal(limiter.admit(TEAM, rpm, 1, 0));
    expect([e.status, e.code]).toEqual([429, "rate_limit_exceeded"]);
    expect(degradedLimit(6, 0, 2)).toBe(3);
  });

  it("no ghost permit: a release made while the store was away is in the store before the pod trusts it again", async () => {
    const clock = new Clock();
    const store = new StandInStore();
    const a = pod(store, clock);
    const b = pod(store, clock);
    const held = await a.limiter.admit(TEAM, limits, 1, 0);
    store.down = true;
    await held.release(0); // the store cannot hear it
    expect(a.limiter.pendingReleases).toBe(1);
    store.down = false;
    await a.link.beat();
    expect(a.limiter.pendingReleases).toBe(0);
    // At once (long before the lease of 15 s), on the other pod, which never left exact mode.
    clock.now += 1000;
    await b.limiter.admit(TEAM, limits, 1, 0);
  });

  it("a window that spans an outage and its end admits at most the limit plus one request per pod", async () => {
    const clock = new Clock();
    const store = new StandInStore();
    const rpm = { requestsPerMinute: 6, maxConcurrent: 100 };
    const pods = [pod(store, clock, 2), pod(store, clock, 2)];
    let admitted = 0;
    const tryAdmit = async (p: (typeof pods)[number]): Promise<void> => {
      try {
        await (await p.limiter.admit(TEAM, rpm, 1, 0)).release(0);
        admitted += 1;
      } catch (e) {
        if (!(e instanceof ApiError)) throw e;
      }
    };
    // Both pods serve the team before the outage, in turns: two of six used. During it each pod
    // admits its part of the four left; after it, the store must know them, or it would admit four more.
    for (let i = 0; i < 2; i++) await tryAdmit(pods[i % 2]);
    clock.now += 10_000;
    store.down = true;
    for (let i = 0; i < 10; i++) await tryAdmit(pods[i % 2]);
    clock.now += 10_000;
    store.down = false;
    for (const p of pods) await p.link.beat();
    for (let i = 0; i < 10; i++) await tryAdmit(pods[i % 2]);
    expect(admitted).toBeGreaterThanOrEqual(6);
    expect(admitted).toBeLessThanOrEqual(6 + pods.length);
    // And the store knows: the next window starts afresh.
    clock.now = T0 + WINDOW_MS;
    await tryAdmit(pods[0]);
    expect(admitted).toBeLessThanOrEqual(6 + pods.length + 1);
  });

  it("a killed pod's permits lapse LEASE_TIMEOUT_MS after its last renewal", async () => {
    const clock = new Clock();
    const store = new StandInStore();
    const killed = pod(store, clock);
    const other = pod(store, clock);
    await killed.limiter.admit(TEAM, limits, 1, 0); // never released: the pod is gone
    clock.now += LEASE_TIMEOUT_MS - 1;
    expect((await refusal(other.limiter.admit(TEAM, limits, 1, 0))).code).toBe("concurrency_limit_exceeded");
    clock.now += 1;
    await other.limiter.admit(TEAM, limits, 1, 0);
  });

  it("a store back empty (restarted) counts again the permits of generations still running", async () => {
    const clock = new Clock();
    const store = new StandInStore();
    const a = pod(store, clock);
    const b = pod(store, clock);
    const running: Admitted = await a.limiter.admit(TEAM, limits, 1, 0);
    store.down = true;
    store.wipe();
    await refusal(a.limiter.admit(TEAM, limits, 1, 0)).catch(() => undefined);
    store.down = false;
    await a.link.beat();
    expect((await refusal(b.limiter.admit(TEAM, limits, 1, 0))).code).toBe("concurrency_limit_exceeded");
    await running.release(0);
    await b.limiter.admit(TEAM, limits, 1, 0);
  });
});

/** The stand-in store, counting the takes that reach it (a round trip each on the real store). */
class CountingStore extends StandInStore {
  takes = 0;
  override async take(r: TakeRequest): Promise<Verdict> {
    this.takes += 1;
    return super.take(r);
  }
}

describe("spares: a team's next request on a pod admitted without a round trip", () => {
  const limits: KeyLimits = { requestsPerMinute: 10, maxConcurrent: 4, tokensPerMinute: 1000 };
  const counts = (store: StandInStore, clock: Clock): number[] => {
    const w = Math.floor(clock.now / WINDOW_MS);
    return [store.count(TEAM, "requests", w), store.count(TEAM, "tokens", w), store.heldBy(TEAM, clock.now)];
  };

  /** One pod on `store`, started (its renewals, and so its spares, run), on the test's clock. */
  const started = <S extends StandInStore>(store: S): { clock: Clock; store: S; limiter: SharedLimits } => {
    const clock = new Clock();
    const { limiter } = pod(store, clock);
    limiter.start();
    return { clock, store, limiter };
  };

  beforeEach(() => void vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "setInterval", "clearInterval"] }));
  afterEach(() => void vi.useRealTimers());

  it("takes a spare behind a release; the next request uses it with no take in the store, counted once", async () => {
    const { clock, store, limiter } = started(new CountingStore());
    const first = await limiter.admit(TEAM, limits, 1, 100);
    await first.release(60);
    expect(limiter.spareTeams).toEqual([TEAM]);
    // The ended request (60 tokens used) and the spare (100 reserved, its permit).
    expect(counts(store, clock)).toEqual([2, 160, 1]);
    const takes = store.takes;
    const second = await limiter.admit(TEAM, limits, 1, 80);
    expect(store.takes).toBe(takes);
    expect(counts(store, clock)).toEqual([2, 160, 1]);
    limiter.stop();
    await second.release(30);
    // Settled against the spare's 100: 60 + 30.
    expect(counts(store, clock)).toEqual([2, 90, 0]);
  });

  it("gives an unused spare back whole after SPARE_MS, and at stop", async () => {
    const { clock, store, limiter } = started(new StandInStore());
    await (await limiter.admit(TEAM, limits, 1, 100)).release(60);
    expect(counts(store, clock)).toEqual([2, 160, 1]);
    await vi.advanceTimersByTimeAsync(SPARE_MS);
    expect(limiter.spareTeams).toEqual([]);
    expect(counts(store, clock)).toEqual([1, 60, 0]);
    await (await limiter.admit(TEAM, limits, 1, 100)).release(60);
    expect(limiter.spareTeams).toEqual([TEAM]);
    limiter.stop();
    await vi.advanceTimersByTimeAsync(0);
    expect(counts(store, clock)).toEqual([2, 120, 0]);
  });

  it("takes none past half of a limit: a team limited to one generation, or past half its requests", async () => {
    const { clock, limiter } = started(new StandInStore());
    await (await limiter.admit(TEAM, { ...limits, maxConcurrent: 1 }, 1, 0)).release(0);
    expect(limiter.spareTeams).toEqual([]);
    // Requests: 1 counted, the spare would be the 2nd of a half of 2 (limit 4, 5 → 2).
    for (const rpm of [4, 5]) {
      const s = new StandInStore();
      const p = pod(s, clock);
      p.limiter.start();
      await (await p.limiter.admit(TEAM, { ...limits, requestsPerMinute: rpm }, 1, 0)).release(0);
      expect(p.limiter.spareTeams).toEqual([TEAM]);
      await (await p.limiter.admit(TEAM, { ...limits, requestsPerMinute: rpm }, 1, 0)).release(0);
      expect(p.limiter.spareTeams).toEqual([]);
      p.limiter.stop();
    }
    limiter.stop();
  });

  it("asks the store, and gives the spare back, for another window, more tokens, two prompts or new limits", async () => {
    const cases: Array<[string, (c: Clock) => [KeyLimits, number, number]]> = [
      ["the next window", (c) => ((c.now = T0 + WINDOW_MS), [limits, 1, 100])],
      ["more tokens", () => [limits, 1, 101]],
      ["two prompts", () => [limits, 2, 100]],
      ["new limits", () => [{ ...limits, requestsPerMinute: 20 }, 1, 100]],
    ];
    for (const [name, next] of cases) {
      const clock = new Clock();
      const store = new CountingStore();
      const { limiter } = pod(store, clock);
      limiter.start();
      await (await limiter.admit(TEAM, limits, 1, 100)).release(100);
      const spareWindow = Math.floor(clock.now / WINDOW_MS);
      const takes = store.takes;
      const [l, slots, tokens] = next(clock);
      const held = await limiter.admit(TEAM, l, slots, tokens);
      expect(store.takes, name).toBe(takes + 1);
      await vi.advanceTimersByTimeAsync(0);
      // The spare's request is back in its window (the stand-in drops a past window: the new one counts one).
      const w = Math.floor(clock.now / WINDOW_MS);
      expect(store.count(TEAM, "requests", w === spareWindow ? w : spareWindow + 1), name).toBe(
        w === spareWindow ? 2 : 1,
      );
      expect(store.heldBy(TEAM, clock.now), name).toBe(slots);
      limiter.stop();
      await held.release(0);
    }
  });

  it("never lets pods exceed a team's limits, spares counted; an outage's window stays within limit + 1 per pod", async () => {
    const clock = new Clock();
    const store = new StandInStore();
    const team = { requestsPerMinute: 12, maxConcurrent: 4 };
    const pods = [pod(store, clock, 2), pod(store, clock, 2)];
    for (const p of pods) p.limiter.start();
    const running: Admitted[] = [];
    let admitted = 0;
    // A seeded walk of admissions and releases on both pods, some of them while the store is down.
    let seed = 7;
    const random = (): number => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    for (let step = 0; step < 400; step++) {
      clock.now += 40;
      if (step === 150) store.down = true;
      if (step === 250) {
        store.down = false;
        for (const p of pods) await p.link.beat();
      }
      const p = pods[Math.floor(random() * 2)];
      if (running.length > 0 && random() < 0.5) {
        await running.splice(Math.floor(random() * running.length), 1)[0].release(0);
      } else {
        try {
          running.push(await p.limiter.admit(TEAM, team, 1, 0));
          admitted += 1;
        } catch (e) {
          if (!(e instanceof ApiError)) throw e;
        }
      }
      if (!store.down) expect(store.heldBy(TEAM, clock.now)).toBeLessThanOrEqual(team.maxConcurrent);
      await vi.advanceTimersByTimeAsync(10);
    }
    // 400 steps of 50 ms: one window, spanning the outage and its end.
    expect(Math.floor(clock.now / WINDOW_MS)).toBe(Math.floor(T0 / WINDOW_MS));
    expect(admitted).toBeLessThanOrEqual(team.requestsPerMinute + pods.length);
    expect(admitted).toBeGreaterThanOrEqual(team.requestsPerMinute);
    for (const p of pods) p.limiter.stop();
  });

  it("an outage after requests served on spares starts the pod's window from the store's count with them", async () => {
    const { store, limiter } = started(new StandInStore());
    const rpm = { requestsPerMinute: 20, maxConcurrent: 8 };
    let admitted = 0;
    // One client, one request after another: the first through the store, the next ones on spares.
    for (let i = 0; i < 8; i++) {
      await (await limiter.admit(TEAM, rpm, 1, 0)).release(0);
      admitted += 1;
    }
    store.down = true;
    await vi.advanceTimersByTimeAsync(SPARE_MS);
    for (let i = 0; i < 30; i++) {
      try {
        await (await limiter.admit(TEAM, rpm, 1, 0)).release(0);
        admitted += 1;
      } catch (e) {
        if (!(e instanceof ApiError)) throw e;
      }
    }
    expect(admitted).toBeLessThanOrEqual(rpm.requestsPerMinute + 1);
    limiter.stop();
  });

  it("a spare given back while the store is away is in the store before the pod trusts it again", async () => {
    const clock = new Clock();
    const store = new StandInStore();
    const a = pod(store, clock);
    const b = pod(store, clock);
    a.limiter.start();
    const two = { ...limits, maxConcurrent: 2 };
    await (await a.limiter.admit(TEAM, two, 1, 0)).release(0);
    expect(a.limiter.spareTeams).toEqual([TEAM]);
    store.down = true;
    await vi.advanceTimersByTimeAsync(SPARE_MS);
    expect(a.limiter.pendingReleases).toBe(1);
    store.down = false;
    await a.link.beat();
    // Both permits free on the other pod at once: the spare's is not a ghost.
    const x = await b.limiter.admit(TEAM, two, 1, 0);
    await b.limiter.admit(TEAM, two, 1, 0);
    await x.release(0);
    a.limiter.stop();
  });
});
