/**
 * The one admission rule for a team's own limits, in every mode: the shared
 * store's script (storeScripts.ts TAKE_LUA) and the in-memory store below,
 * which a pod uses alone (no store configured) or while the store is
 * unreachable, compute the same thing from the same state:
 *
 * - requests and tokens per minute count in fixed one-minute windows aligned
 *   to the clock's minutes (window n is [n·60 s, (n+1)·60 s) since the epoch),
 *   so every pod and both modes name the same window for a moment in time;
 *   Retry-After is the time to the window's end;
 * - concurrency is a set of permits, one per prompt, each with an expiry the
 *   pod holding it pushes forward (renew) while its generation runs: a permit
 *   not renewed (its pod died) lapses by itself;
 * - a request takes all three or nothing: a refusal counts nothing.
 *
 * `decide` is the rule on one team's counts; the Lua script is that function
 * over the store's keys, and the store-agreement test (test/gateway) runs one
 * sequence of takes and releases through both.
 */

/** One window of the requests/minute and tokens/minute counts. */
export const WINDOW_MS = 60_000;
/** A permit not renewed for this long is free again: a killed pod's slots come back within it. */
export const LEASE_TIMEOUT_MS = 15_000;
/** How often a pod renews the permits it holds (a third of the timeout: two renewals may fail). */
export const LEASE_REFRESH_MS = 5_000;

export function windowOf(now: number): number {
  return Math.floor(now / WINDOW_MS);
}

/** Milliseconds from `now` to the end of its window. */
export function windowLeft(now: number): number {
  return (windowOf(now) + 1) * WINDOW_MS - now;
}

export interface TakeRequest {
  team: string;
  /** windowOf(now), computed once by the caller so the check and its release name the same window. */
  window: number;
  now: number;
  requestsPerMinute: number;
  /** Unset: no tokens/minute limit. */
  tokensPerMinute?: number;
  /** Tokens reserved (settled at release). */
  tokens: number;
  maxConcurrent: number;
  /** The permits to take, one per prompt; unique per request. */
  permits: readonly string[];
  /** Expiry of the permits: now + LEASE_TIMEOUT_MS. */
  expiresAt: number;
}

/** The team's counts the rule saw (after the take when admitted). */
export interface Counts {
  requests: number;
  tokens: number;
  /** Permits held by the team, lapsed ones dropped. */
  held: number;
}

export type Limit = "requests" | "tokens" | "concurrency";

export type Verdict = ({ admitted: true } | { admitted: false; limit: Limit }) & Counts;

export interface ReleaseRequest {
  team: string;
  /** The window the request was admitted in. */
  window: number;
  permits: readonly string[];
  /** Reserved tokens not used, given back to the admission's window (never below zero). */
  refundTokens: number;
  /** 1 when the request never ran (refused after the store admitted it): its request is given back too. */
  refundRequests: number;
}

/** What decides a team's admissions: the shared store, or this pod's memory. */
export interface AdmissionStore {
  take(request: TakeRequest): Promise<Verdict>;
  release(request: ReleaseRequest): Promise<void>;
  /** Push the expiry of permits still held, adding any the store lost (a restart without persistence). */
  renew(team: string, permits: readonly string[], expiresAt: number): Promise<void>;
  /**
   * Bring a window up to what this pod knows of it: count = max(count, floor) + added, per limit
   * (what a pod admitted on its own while the store was away, over the last count it had seen).
   */
  carry(team: string, window: number, requests: Carry, tokens: Carry): Promise<void>;
}

export interface Carry {
  floor: number;
  added: number;
}

/** The rule: admit when the request fits every limit, else name the first limit it does not fit. */
export function decide(counts: Counts, request: TakeRequest): Verdict {
  if (counts.requests + 1 > request.requestsPerMinute) return { admitted: false, limit: "requests", ...counts };
  if (request.tokensPerMinute !== undefined && counts.tokens + request.tokens > request.tokensPerMinute) {
    return { admitted: false, limit: "tokens", ...counts };
  }
  if (counts.held + request.permits.length > request.maxConcurrent) {
    return { admitted: false, limit: "concurrency", ...counts };
  }
  return {
    admitted: true,
    requests: counts.requests + 1,
    tokens: counts.tokens + request.tokens,
    held: counts.held + request.permits.length,
  };
}

interface TeamState {
  /** window -> count; only the current window is ever read, older ones are dropped on the next take. */
  requests: Map<number, number>;
  tokens: Map<number, number>;
  /** permit -> expiry (ms since the epoch) */
  permits: Map<string, number>;
}

/**
 * The rule over this process's memory. Synchronous underneath (a pod's own
 * admission never waits); the AdmissionStore methods wrap it. Also the
 * stand-in of the shared store in the limiter's unit suite.
 */
export class MemoryAdmissionStore implements AdmissionStore {
  private readonly teams = new Map<string, TeamState>();

  private state(team: string): TeamState {
    let s = this.teams.get(team);
    if (!s) {
      s = { requests: new Map(), tokens: new Map(), permits: new Map() };
      this.teams.set(team, s);
    }
    return s;
  }

  /** Permits of `team` not lapsed at `now`, dropping the lapsed ones. */
  heldBy(team: string, now: number): number {
    const s = this.state(team);
    for (const [id, expiry] of s.permits) if (expiry <= now) s.permits.delete(id);
    return s.permits.size;
  }

  count(team: string, limit: "requests" | "tokens", window: number): number {
    return this.state(team)[limit].get(window) ?? 0;
  }

  takeNow(request: TakeRequest): Verdict {
    const s = this.state(request.team);
    for (const m of [s.requests, s.tokens]) for (const w of m.keys()) if (w < request.window) m.delete(w);
    const counts: Counts = {
      requests: s.requests.get(request.window) ?? 0,
      tokens: s.tokens.get(request.window) ?? 0,
      held: this.heldBy(request.team, request.now),
    };
    const verdict = decide(counts, request);
    if (!verdict.admitted) return verdict;
    s.requests.set(request.window, verdict.requests);
    s.tokens.set(request.window, verdict.tokens);
    for (const p of request.permits) s.permits.set(p, request.expiresAt);
    return verdict;
  }

  releaseNow(request: ReleaseRequest): void {
    const s = this.state(request.team);
    for (const p of request.permits) s.permits.delete(p);
    const give = (m: Map<number, number>, n: number): void => {
      const c = m.get(request.window);
      if (c !== undefined && n > 0) m.set(request.window, Math.max(0, c - n));
    };
    give(s.requests, request.refundRequests);
    give(s.tokens, request.refundTokens);
  }

  renewNow(team: string, permits: readonly string[], expiresAt: number): void {
    const s = this.state(team);
    for (const p of permits) s.permits.set(p, expiresAt);
  }

  carryNow(team: string, window: number, requests: Carry, tokens: Carry): void {
    const s = this.state(team);
    const bring = (m: Map<number, number>, c: Carry): void => {
      m.set(window, Math.max(m.get(window) ?? 0, c.floor) + c.added);
    };
    bring(s.requests, requests);
    bring(s.tokens, tokens);
  }

  async take(request: TakeRequest): Promise<Verdict> {
    return this.takeNow(request);
  }
  async release(request: ReleaseRequest): Promise<void> {
    this.releaseNow(request);
  }
  async renew(team: string, permits: readonly string[], expiresAt: number): Promise<void> {
    this.renewNow(team, permits, expiresAt);
  }
  async carry(team: string, window: number, requests: Carry, tokens: Carry): Promise<void> {
    this.carryNow(team, window, requests, tokens);
  }
}
