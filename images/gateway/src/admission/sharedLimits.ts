/**
 * A team's limits across every gateway pod, kept in the shared store:
 *
 * - requests/minute and tokens/minute: rate-limiter-flexible's RateLimiterRedis
 *   (a fixed one-minute window per team, counted by an atomic Lua script);
 *   Retry-After is the window's remaining time (its msBeforeNext). Tokens are
 *   reserved at admission (an upper bound: the prompt's bytes and every
 *   choice's max_tokens) and the unused part is given back (reward) when the
 *   request ends, if its window is still the current one.
 * - concurrency: redis-semaphore's MultiSemaphore, one permit per prompt. A
 *   permit is a sorted-set member stamped with its time; the pod holding it
 *   refreshes it every LEASE_REFRESH_MS, and any admission first drops members
 *   older than LEASE_TIMEOUT_MS, so a crashed pod's slots come back by themselves.
 *
 * The three checks go out together (ioredis pipelines them: one round trip);
 * when one refuses, what the others took is given back. A release is a round
 * trip too, so a team's next request can overtake its last one's release
 * (and a script the store has not cached yet takes two): a concurrency
 * refusal while this pod still has releases of the team on the wire waits
 * for them and asks once more. The pod's own in-flight cap and fair shares
 * stay local (podAdmission.ts `hold`), and so does each model's cap.
 *
 * When the store fails, the request is admitted on this pod's own buckets
 * with the team's limits divided by the gateway pod count (never unlimited,
 * never a 500), until a heartbeat reaches the store again (store/sharedStore.ts).
 */
import { RateLimiterRedis, RateLimiterRes } from "rate-limiter-flexible";
import { MultiSemaphore } from "redis-semaphore";
import { ApiError } from "../server/apiError";
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
import { type SharedStore, StoreKeys } from "../store/sharedStore";

/** A permit not refreshed for this long is free again: a crashed pod's slots return within it (and pods' clocks may differ by less). */
export const LEASE_TIMEOUT_MS = 15_000;
export const LEASE_REFRESH_MS = 5_000;
const WINDOW_SECONDS = 60;

/**
 * rate-limiter-flexible's counting script (its `customIncrTtlLuaScript` hook),
 * changed in one respect: a consume that would go over the limit takes
 * nothing. Its own script increments first, so a refused 2,000-token
 * reservation would eat the window's remaining budget for smaller requests.
 * Arguments as the library passes them: points, window seconds, the limit.
 * A reward (negative points) never takes the counter below zero.
 */
export const TAKE_IF_FITS_LUA = `
redis.call('set', KEYS[1], 0, 'EX', ARGV[2], 'NX')
local points = tonumber(ARGV[1])
local current = tonumber(redis.call('get', KEYS[1]))
local ttl = redis.call('pttl', KEYS[1])
if points > 0 and current + points > tonumber(ARGV[3]) then
  return {current + points, ttl}
end
if current + points < 0 then points = -current end
local consumed = redis.call('incrby', KEYS[1], points)
if ttl == -1 then
  redis.call('expire', KEYS[1], ARGV[2])
  ttl = 1000 * ARGV[2]
end
return {consumed, ttl}
`;

/** What decides admission for a team: this pod alone, or the shared store. */
export interface TeamLimiter {
  /** `model`: the model the request was routed to, whose own in-flight cap is kept on this pod. */
  admit(team: string, limits: KeyLimits, slots: number, tokens: number, model?: ModelCap): Promise<Admitted>;
}

/** Without a store: this pod's buckets hold the team's whole limits. */
export class LocalLimits implements TeamLimiter {
  constructor(private readonly admission: Admission) {}
  async admit(team: string, limits: KeyLimits, slots: number, tokens: number, model?: ModelCap): Promise<Admitted> {
    return this.admission.admit(team, limits, slots, tokens, model);
  }
}

/** A team's limits on one of `pods` pods: its share, at least 1 (so never 0, and never more than the team's in total but for that floor). */
export function perPod(limits: KeyLimits, pods: number): KeyLimits {
  const part = (value: number): number => Math.max(1, Math.floor(value / Math.max(1, pods)));
  return {
    ...limits,
    requestsPerMinute: part(limits.requestsPerMinute),
    maxConcurrent: part(limits.maxConcurrent),
    ...(limits.tokensPerMinute !== undefined ? { tokensPerMinute: part(limits.tokensPerMinute) } : {}),
  };
}

/**
 * A concurrency permit that outlives store trouble: the library's refresh
 * timer would turn a failed refresh into an unhandled rejection (and the
 * process would exit). While the store is unreachable the permit is kept
 * here; in the store it expires by itself if the outage outlasts LEASE_TIMEOUT_MS.
 */
class Permit extends MultiSemaphore {
  protected override async _refresh(): Promise<boolean> {
    try {
      return await super._refresh();
    } catch {
      return true;
    }
  }
}

function seconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
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

const ignore = (): void => undefined;

/** What the store granted: the lease to release when the response ends, or everything given back at once. */
interface Taken {
  lease: Admitted;
  cancel(): void;
}

export class SharedLimits implements TeamLimiter {
  private readonly limiters = new Map<string, RateLimiterRedis>();
  /** team -> permit releases sent and not yet answered by the store. */
  private readonly releasing = new Map<string, Set<Promise<void>>>();

  constructor(
    private readonly store: SharedStore,
    private readonly local: Admission,
  ) {}

  async admit(team: string, limits: KeyLimits, slots: number, tokens: number, model?: ModelCap): Promise<Admitted> {
    if (limits.tokensPerMinute !== undefined) checkReservation(tokens, limits.tokensPerMinute);
    if (!this.store.isDegraded) {
      let taken: Taken | undefined;
      try {
        taken = await this.take(team, limits, slots, tokens);
      } catch (error) {
        if (error instanceof ApiError) throw error;
        this.store.unreachable(error);
      }
      if (taken) {
        const store = taken;
        let held: Admitted;
        try {
          held = this.local.hold(team, limits, slots, model);
        } catch (error) {
          // The pod is full: the request never ran, so the store gets back all it counted.
          store.cancel();
          throw error;
        }
        return once((used) => {
          void held.release();
          return store.lease.release(used);
        });
      }
    }
    return this.local.admit(team, perPod(limits, this.store.podCount), slots, tokens, model);
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

  private limiter(kind: "rpm" | "tpm", points: number): RateLimiterRedis {
    const id = `${kind}:${points}`;
    let limiter = this.limiters.get(id);
    if (!limiter) {
      limiter = new RateLimiterRedis({
        storeClient: this.store.client,
        keyPrefix: this.store.keys.limiterPrefix(kind),
        points,
        duration: WINDOW_SECONDS,
        rejectIfRedisNotReady: true,
        customIncrTtlLuaScript: TAKE_IF_FITS_LUA,
      });
      this.limiters.set(id, limiter);
    }
    return limiter;
  }

  /** The three checks in the store; throws the 429 to send, or the store's own error. */
  private async take(team: string, limits: KeyLimits, slots: number, tokens: number): Promise<Taken> {
    const key = StoreKeys.tag(team);
    const rpm = this.limiter("rpm", limits.requestsPerMinute);
    const tpmLimit = limits.tokensPerMinute;
    const tpm = tpmLimit !== undefined && tokens > 0 ? this.limiter("tpm", tpmLimit) : undefined;
    const permit = new Permit(this.store.client, this.store.keys.concurrency(team), limits.maxConcurrent, slots, {
      lockTimeout: LEASE_TIMEOUT_MS,
      refreshInterval: LEASE_REFRESH_MS,
      acquireAttemptsLimit: 1,
      retryInterval: 0,
      // Lost means expired in the store (an outage longer than the timeout): the request goes on.
      onLockLost: ignore,
    });
    const started = Date.now();
    // The releases this pod had on the wire when the checks were sent: the store may see them after the checks.
    const releasing = [...(this.releasing.get(team) ?? [])];
    const [r, t, first] = await Promise.allSettled([
      rpm.consume(key, 1),
      tpm ? tpm.consume(key, tokens) : Promise.resolve(undefined),
      permit.tryAcquire(),
    ]);
    let c = first;
    if (c.status === "fulfilled" && !c.value && releasing.length > 0) {
      // This pod's own releases of the team were on the wire: they may be what filled the count.
      await Promise.allSettled(releasing);
      [c] = await Promise.allSettled([permit.tryAcquire()]);
    }
    const undo = (): void => {
      if (r.status === "fulfilled") rpm.reward(key, 1).catch(ignore);
      if (tpm && t.status === "fulfilled") tpm.reward(key, tokens).catch(ignore);
      if (c.status === "fulfilled" && c.value) permit.release().catch(ignore);
    };
    for (const s of [r, t, c]) {
      if (s.status === "rejected" && !(s.reason instanceof RateLimiterRes)) {
        undo();
        throw s.reason;
      }
    }
    if (r.status === "rejected") {
      undo();
      throw requestLimited(limits.requestsPerMinute, seconds((r.reason as RateLimiterRes).msBeforeNext));
    }
    if (t.status === "rejected" && tpmLimit !== undefined) {
      undo();
      throw tokenLimited(tpmLimit, tokens, seconds((t.reason as RateLimiterRes).msBeforeNext));
    }
    if (c.status === "fulfilled" && !c.value) {
      undo();
      throw concurrencyLimited(undefined, limits.maxConcurrent);
    }
    // Rewards after the window turned would credit the next window: settle only within it (a second's margin).
    const windowEnds = t.status === "fulfilled" && t.value ? started + t.value.msBeforeNext - 1000 : 0;
    const lease = once((used) => {
      const released = permit.release().catch(ignore);
      this.track(team, released);
      if (tpm && used !== undefined && used < tokens && Date.now() < windowEnds) {
        tpm.reward(key, tokens - used).catch(ignore);
      }
      // The caller holds the response's last bytes until the store has the permit back (RequestContext.finished).
      return released;
    });
    return { lease, cancel: undo };
  }
}
