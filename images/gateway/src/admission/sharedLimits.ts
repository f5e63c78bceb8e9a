/**
 * A team's own limits (requests/minute, tokens/minute, concurrency), decided
 * by the one rule of windowRule.ts: across every gateway pod in the shared
 * store (storeScripts.ts), or on this pod alone, without a store
 * (LocalLimits) or while it is unreachable (SharedLimits' degraded mode).
 * Then the pod's own capacity (podAdmission.ts `hold`).
 *
 * What a request takes it holds until its generation has ended upstream (the
 * admission plugin releases it then, not when the client leaves): its
 * permits, and its token reservation, settled with the tokens used.
 *
 * Through an outage of the store (SharedLimits):
 * - a pod admits on its own, in the same windows, up to its part of what the
 *   store had left when it last saw the team's window: seen + max(1, ⌊(limit −
 *   seen) / pods⌋), so a window spanning the outage admits at most the limit
 *   plus one request per pod; its concurrency is the team's divided by the pod
 *   count (at least 1), counting every permit the pod holds;
 * - releases it could not send are kept, and sent when the store answers
 *   again, before the pod leaves degraded mode, with what it admitted alone
 *   (carried into the current window) and every permit it still holds
 *   (renewed, so a store that restarted empty counts them again): a permit
 *   whose request has ended never refuses anyone;
 * - a killed pod's permits lapse LEASE_TIMEOUT_MS after its last renewal.
 *
 * A spare (SharedLimits, store reachable): when a team's request ends on a
 * pod, the same round trip that releases it also takes one admission of that
 * team ahead, under half of each of its limits (the rule with the limits
 * halved: nothing is taken past half), counted in the store like any
 * request. The team's next request on that pod within SPARE_MS, in the same
 * window, with one prompt and at most the spare's tokens, is admitted on it
 * without a round trip before Triton (a client that sends its next request
 * as soon as the last one ends: a chat turn, an agent, a batch loop); else
 * the spare is given back whole (its request, tokens and permit), as a
 * release is, outage or not. Limits are never exceeded: a spare is counted
 * before it is used. It can refuse another pod's request only when the
 * team's use rises from at most half of a limit to the limit within those
 * SPARE_MS, and then at most one request per pod. A pod killed holding a
 * spare leaves its request and tokens counted in their window; its permit
 * lapses as every permit does.
 */
import type { ApiError } from "../server/apiError";
import {
  type Admission,
  type Admitted,
  type KeyLimits,
  type ModelCap,
  checkReservation,
  concurrencyLimited,
  requestLimited,
  tokenLimited,
} from "./podAdmission";
import {
  type AdmissionStore,
  type Carry,
  type ReleaseRequest,
  type TakeRequest,
  type Verdict,
  LEASE_REFRESH_MS,
  LEASE_TIMEOUT_MS,
  MemoryAdmissionStore,
  windowLeft,
  windowOf,
} from "./windowRule";

/** What decides admission for a team: this pod alone, or the shared store. */
export interface TeamLimiter {
  /** `model`: the model the request was routed to, whose own in-flight cap is kept on this pod. */
  admit(team: string, limits: KeyLimits, slots: number, tokens: number, model?: ModelCap): Promise<Admitted>;
  /** Start renewing held permits (a store's leases); stop at close. */
  start(): void;
  stop(): void;
}

/** What SharedLimits needs of the store's link (store/sharedStore.ts SharedStore). */
export interface StoreLink {
  readonly isDegraded: boolean;
  readonly podCount: number;
  unreachable(error: unknown): void;
  onReturn(hook: () => Promise<void>): void;
}

/**
 * How long a spare admission waits for its team's next request on this pod before it is given back:
 * a program's next request (an agent's next step, a batch loop, the bench's client) comes within it,
 * and it bounds how long a spare can count against another pod's request of the team.
 */
export const SPARE_MS = 1_000;

/** A team's limits, halved: a spare is taken only within half of each (SharedLimits). */
export function halved(limits: KeyLimits): KeyLimits {
  return {
    requestsPerMinute: Math.floor(limits.requestsPerMinute / 2),
    maxConcurrent: Math.floor(limits.maxConcurrent / 2),
    ...(limits.tokensPerMinute !== undefined ? { tokensPerMinute: Math.floor(limits.tokensPerMinute / 2) } : {}),
  };
}

function sameLimits(a: KeyLimits, b: KeyLimits): boolean {
  return (
    a.requestsPerMinute === b.requestsPerMinute &&
    a.maxConcurrent === b.maxConcurrent &&
    a.tokensPerMinute === b.tokensPerMinute
  );
}

/** A permit held on this pod's own: it never lapses, it is released. */
const NEVER = Number.MAX_SAFE_INTEGER;

/** A team's limits on one of `pods` pods: its share, at least 1. */
export function perPod(limit: number, pods: number): number {
  return Math.max(1, Math.floor(limit / Math.max(1, pods)));
}

/** A pod's limit in a window of which it last saw `seen` counted in the store: its part of what was left, at least one. */
export function degradedLimit(limit: number, seen: number, pods: number): number {
  return seen + Math.max(1, Math.floor((limit - seen) / Math.max(1, pods)));
}

function seconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
}

/** The 429 for a refusal, its Retry-After the time to the window's end (1 s for concurrency). */
function refusal(verdict: Verdict, limits: KeyLimits, maxConcurrent: number, tokens: number, now: number): ApiError {
  if (verdict.admitted) throw new Error("refusal of an admitted request");
  switch (verdict.limit) {
    case "requests":
      return requestLimited(limits.requestsPerMinute, seconds(windowLeft(now)));
    case "tokens":
      return tokenLimited(limits.tokensPerMinute ?? 0, tokens, seconds(windowLeft(now)));
    case "concurrency":
      return concurrencyLimited(verdict.held, maxConcurrent);
  }
}

function once(release: (usedTokens?: number) => void | Promise<void>): Admitted {
  let done = false;
  return {
    release: (usedTokens?: number) => {
      if (done) return;
      done = true;
      return release(usedTokens);
    },
  };
}

let sequence = 0;
/** `slots` permit ids, unique across pods (the pod's id) and requests. */
function permitIds(pod: string, slots: number): string[] {
  sequence += 1;
  return Array.from({ length: slots }, (_, i) => `${pod}:${sequence}:${i}`);
}

function takeRequest(
  team: string,
  limits: KeyLimits,
  permits: string[],
  tokens: number,
  now: number,
  expiresAt: number,
): TakeRequest {
  return {
    team,
    window: windowOf(now),
    now,
    requestsPerMinute: limits.requestsPerMinute,
    ...(limits.tokensPerMinute !== undefined ? { tokensPerMinute: limits.tokensPerMinute } : {}),
    tokens,
    maxConcurrent: limits.maxConcurrent,
    permits,
    expiresAt,
  };
}

/** Without a store: the rule over this pod's memory holds the team's whole limits. */
export class LocalLimits implements TeamLimiter {
  private readonly rule = new MemoryAdmissionStore();

  constructor(
    private readonly pod: Admission,
    private readonly clock: () => number = Date.now,
  ) {}

  async admit(team: string, limits: KeyLimits, slots: number, tokens: number, model?: ModelCap): Promise<Admitted> {
    if (limits.tokensPerMinute !== undefined) checkReservation(tokens, limits.tokensPerMinute);
    const now = this.clock();
    const take = takeRequest(team, limits, permitIds("local", slots), tokens, now, NEVER);
    const verdict = this.rule.takeNow(take);
    if (!verdict.admitted) throw refusal(verdict, limits, limits.maxConcurrent, tokens, now);
    const settle = (refundTokens: number, refundRequests: number): void =>
      this.rule.releaseNow({ team, window: take.window, permits: take.permits, refundTokens, refundRequests });
    let held: Admitted;
    try {
      held = this.pod.hold(team, limits, slots, model);
    } catch (error) {
      // The pod is full: the request never ran, so its window gets back all it counted.
      settle(tokens, 1);
      throw error;
    }
    return once((used) => {
      void held.release();
      settle(used === undefined ? 0 : Math.max(0, tokens - used), 0);
    });
  }

  start(): void {}
  stop(): void {}
}

/** A request this pod holds permits for. */
interface Lease {
  team: string;
  permits: readonly string[];
}

/** One admission of a team taken ahead in the store (see the header): its take, and the limits it was taken for. */
interface Spare {
  take: TakeRequest;
  limits: KeyLimits;
  timer: NodeJS.Timeout;
}

/** What this pod admitted on its own in a window, over the count it had seen in the store. */
interface Carried {
  team: string;
  window: number;
  requests: Carry;
  tokens: Carry;
}

export class SharedLimits implements TeamLimiter {
  /**
   * The rule on this pod's own, for the outages: its windows start from the
   * store's counts last seen, and its permits mirror every permit this pod
   * holds, whoever granted it.
   */
  private readonly fallback = new MemoryAdmissionStore();
  private readonly leases = new Set<Lease>();
  /** Releases the store has not had yet (sent while it was away, or failed). */
  private readonly pending: ReleaseRequest[] = [];
  /** team -> the store's counts in the window of this pod's last admission there. */
  private readonly seen = new Map<string, { window: number; requests: number; tokens: number }>();
  /** `team\nwindow` -> admissions made alone, to carry into the store on its return. */
  private readonly carried = new Map<string, Carried>();
  /** team -> releases sent and not yet answered by the store. */
  private readonly releasing = new Map<string, Set<Promise<void>>>();
  /** team -> its spare on this pod; `sparing`: teams whose spare is on the wire. */
  private readonly spares = new Map<string, Spare>();
  private readonly sparing = new Set<string>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly link: StoreLink,
    private readonly store: AdmissionStore,
    private readonly pod: Admission,
    /** Unique per pod: permit ids start with it. */
    private readonly podId: string,
    private readonly clock: () => number = Date.now,
  ) {
    link.onReturn(() => this.reconcile());
  }

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => {
      if (this.link.isDegraded) return;
      this.renewAll().catch((error: unknown) => this.link.unreachable(error));
    }, LEASE_REFRESH_MS);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    for (const team of [...this.spares.keys()]) void this.giveBack(team);
  }

  /** Teams with a spare on this pod (for the tests). */
  get spareTeams(): string[] {
    return [...this.spares.keys()];
  }

  /** Permits this pod holds, per team (for the tests and the renewal). */
  heldPermits(): Map<string, string[]> {
    const byTeam = new Map<string, string[]>();
    for (const lease of this.leases) byTeam.set(lease.team, [...(byTeam.get(lease.team) ?? []), ...lease.permits]);
    return byTeam;
  }

  /** Releases waiting for the store. */
  get pendingReleases(): number {
    return this.pending.length;
  }

  async admit(team: string, limits: KeyLimits, slots: number, tokens: number, model?: ModelCap): Promise<Admitted> {
    if (limits.tokensPerMinute !== undefined) checkReservation(tokens, limits.tokensPerMinute);
    const now = this.clock();
    const spare = this.spareFor(team, limits, slots, tokens, now);
    if (spare) return this.granted(spare, limits, model, false);
    const take = takeRequest(team, limits, permitIds(this.podId, slots), tokens, now, now + LEASE_TIMEOUT_MS);
    if (!this.link.isDegraded) {
      let verdict: Verdict | undefined;
      try {
        verdict = await this.store.take(take);
        const onWire = [...(this.releasing.get(team) ?? [])];
        if (!verdict.admitted && verdict.limit === "concurrency" && onWire.length > 0) {
          // This pod's own releases of the team were on the wire: they may be what filled the count.
          await Promise.allSettled(onWire);
          verdict = await this.store.take(take);
        }
      } catch (error) {
        this.link.unreachable(error);
        verdict = undefined;
      }
      if (verdict) {
        this.saw(take, verdict);
        if (!verdict.admitted) throw refusal(verdict, limits, limits.maxConcurrent, tokens, now);
        return this.granted(take, limits, model, false);
      }
    }
    return this.admitAlone(take, limits, model);
  }

  /**
   * The team's spare, taken for this request when it fits: the store reachable, the same window, one
   * prompt, at most the spare's tokens, the same limits. A spare that does not fit is given back now.
   */
  private spareFor(
    team: string,
    limits: KeyLimits,
    slots: number,
    tokens: number,
    now: number,
  ): TakeRequest | undefined {
    const spare = this.spares.get(team);
    if (!spare) return undefined;
    const fits =
      !this.link.isDegraded &&
      slots === spare.take.permits.length &&
      tokens <= spare.take.tokens &&
      windowOf(now) === spare.take.window &&
      sameLimits(limits, spare.limits);
    if (!fits) {
      void this.giveBack(team);
      return undefined;
    }
    return this.unhook(team)?.take;
  }

  /** The team's spare, off this pod's list and its timer. */
  private unhook(team: string): Spare | undefined {
    const spare = this.spares.get(team);
    if (spare) clearTimeout(spare.timer);
    this.spares.delete(team);
    return spare;
  }

  /** The store's counts in a window, as this pod last saw them there. */
  private saw(take: TakeRequest, verdict: Verdict): void {
    this.seen.set(take.team, { window: take.window, requests: verdict.requests, tokens: verdict.tokens });
  }

  /**
   * Take one admission of the team ahead, within half of each of its limits, sent right behind the
   * release of its last request (one round trip): kept SPARE_MS for the team's next request here.
   */
  private offerSpare(ended: TakeRequest, limits: KeyLimits): Promise<void> {
    const { team } = ended;
    if (this.link.isDegraded || !this.timer || this.spares.has(team) || this.sparing.has(team)) {
      return Promise.resolve();
    }
    const now = this.clock();
    const take = takeRequest(team, halved(limits), permitIds(this.podId, 1), ended.tokens, now, now + LEASE_TIMEOUT_MS);
    this.sparing.add(team);
    return this.store
      .take(take)
      .then((verdict) => {
        if (!verdict.admitted) return;
        // The store's counts with the spare in them: what an outage's own window starts from (admitAlone).
        this.saw(take, verdict);
        const timer = setTimeout(() => void this.giveBack(team), SPARE_MS);
        timer.unref();
        this.spares.set(team, { take, limits, timer });
        // Stopped or degraded meanwhile: not kept.
        if (this.link.isDegraded || !this.timer) void this.giveBack(team);
      })
      .catch((error: unknown) => this.link.unreachable(error))
      .finally(() => this.sparing.delete(team));
  }

  /** An unused spare back to the store, whole (its request, tokens and permit), as a release is sent. */
  private giveBack(team: string): Promise<void> {
    const spare = this.unhook(team);
    if (!spare) return Promise.resolve();
    const { window, permits, tokens } = spare.take;
    return this.send({ team, window, permits, refundTokens: tokens, refundRequests: 1 });
  }

  /** Degraded: the rule on this pod, with its part of what the store had left. */
  private admitAlone(take: TakeRequest, limits: KeyLimits, model: ModelCap | undefined): Promise<Admitted> {
    const { team, window } = take;
    const pods = this.link.podCount;
    const last = this.seen.get(team);
    const seen = last?.window === window ? last : { requests: 0, tokens: 0 };
    // The pod's windows start where the store's were when it last looked.
    this.fallback.carryNow(team, window, { floor: seen.requests, added: 0 }, { floor: seen.tokens, added: 0 });
    const maxConcurrent = perPod(limits.maxConcurrent, pods);
    const verdict = this.fallback.takeNow({
      ...take,
      requestsPerMinute: degradedLimit(limits.requestsPerMinute, seen.requests, pods),
      ...(limits.tokensPerMinute !== undefined
        ? { tokensPerMinute: degradedLimit(limits.tokensPerMinute, seen.tokens, pods) }
        : {}),
      maxConcurrent,
      expiresAt: NEVER,
    });
    if (!verdict.admitted) return Promise.reject(refusal(verdict, limits, maxConcurrent, take.tokens, take.now));
    const key = `${team}\n${window}`;
    const carried = this.carried.get(key) ?? {
      team,
      window,
      requests: { floor: seen.requests, added: 0 },
      tokens: { floor: seen.tokens, added: 0 },
    };
    carried.requests.added += 1;
    carried.tokens.added += take.tokens;
    this.carried.set(key, carried);
    return Promise.resolve(this.granted(take, limits, model, true, carried));
  }

  /** The team's limits admitted the request: the pod's own capacity, then the lease. */
  private granted(
    take: TakeRequest,
    limits: KeyLimits,
    model: ModelCap | undefined,
    alone: boolean,
    carried?: Carried,
  ): Admitted {
    const { team, window, permits, tokens } = take;
    let held: Admitted;
    try {
      held = this.pod.hold(team, limits, permits.length, model);
    } catch (error) {
      // The pod is full: the request never ran, so its window gets back all it counted.
      const undo = { team, window, permits, refundTokens: tokens, refundRequests: 1 };
      if (alone && carried) {
        this.fallback.releaseNow(undo);
        carried.requests.added -= 1;
        carried.tokens.added -= tokens;
      } else void this.send(undo);
      throw error;
    }
    if (!alone) this.fallback.renewNow(team, permits, NEVER);
    const lease: Lease = { team, permits };
    this.leases.add(lease);
    return once((used) => {
      void held.release();
      this.leases.delete(lease);
      const refundTokens = used === undefined ? 0 : Math.max(0, tokens - used);
      const stillAlone = alone && carried !== undefined && this.carried.get(`${team}\n${window}`) === carried;
      // An admission made alone settles in the pod's window while that is not yet carried to the store.
      this.fallback.releaseNow({
        team,
        window,
        permits,
        refundTokens: stillAlone ? refundTokens : 0,
        refundRequests: 0,
      });
      if (stillAlone && carried) carried.tokens.added -= Math.min(refundTokens, carried.tokens.added);
      const released = this.send({ team, window, permits, refundTokens: alone ? 0 : refundTokens, refundRequests: 0 });
      if (alone || permits.length !== 1) return released;
      // Behind the release on the same connection: one round trip, awaited with it by the response's end.
      return Promise.all([released, this.offerSpare(take, limits)]).then(() => undefined);
    });
  }

  /** A release to the store, or kept for its return. The caller may await it (RequestContext.finished). */
  private send(release: ReleaseRequest): Promise<void> {
    if (this.link.isDegraded) {
      this.pending.push(release);
      return Promise.resolve();
    }
    const sent = this.store.release(release).catch((error: unknown) => {
      this.pending.push(release);
      this.link.unreachable(error);
    });
    this.track(release.team, sent);
    return sent;
  }

  /** Remember a release until the store has answered it. */
  private track(team: string, release: Promise<void>): void {
    let set = this.releasing.get(team);
    if (!set) {
      set = new Set();
      this.releasing.set(team, set);
    }
    const pending = set;
    pending.add(release);
    void release.finally(() => {
      pending.delete(release);
      if (pending.size === 0) this.releasing.delete(team);
    });
  }

  /**
   * The store answers again (run before the pod leaves degraded mode; a
   * failure keeps it degraded): what it missed, in order. Releases first, so
   * no ended request's permit is there when admissions return to the store.
   */
  private async reconcile(): Promise<void> {
    while (this.pending.length > 0) {
      await this.store.release(this.pending[0]);
      this.pending.shift();
    }
    const window = windowOf(this.clock());
    for (const [key, c] of this.carried) {
      // Only the current window is ever read again.
      if (c.window === window) await this.store.carry(c.team, c.window, c.requests, c.tokens);
      this.carried.delete(key);
    }
    await this.renewAll();
    this.seen.clear();
  }

  /** Push every held permit's expiry, adding the ones the store does not have (admitted alone, or lost in a restart). */
  private async renewAll(): Promise<void> {
    const expiresAt = this.clock() + LEASE_TIMEOUT_MS;
    await Promise.all([...this.heldPermits()].map(([team, permits]) => this.store.renew(team, permits, expiresAt)));
  }
}
