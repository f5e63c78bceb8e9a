/**
 * Admission control on this pod, checked after authentication and parsing,
 * before Triton: per-team requests per minute and tokens per minute (token
 * buckets), per-team concurrency, the pod's cap on requests in flight and
 * each model's own cap (its Triton's queue), both divided into fair shares by
 * the teams' `share` weights. The team's own limits are the client's doing
 * (429); the gateway's and the model's capacity are not (503). Both carry a
 * Retry-After.
 *
 * Without a shared store (store/), every check here is the team's whole
 * limit on this pod, so N pods give a team N× its limits. With a store the
 * team's limits are enforced there across all pods, and this class keeps
 * only the pod's and the models' in-flight caps and fair shares (`hold`) —
 * unless the store is unreachable, when it enforces the team's limits
 * divided by the pod count (sharedLimits.ts). docs/consuming.md "Limits".
 */
import { ApiError, overloaded, rateLimited } from "../server/apiError";

export interface KeyLimits {
  requestsPerMinute: number;
  maxConcurrent: number;
  /** Unset: no tokens/minute limit. */
  tokensPerMinute?: number;
  /** Weight of the team's share of the in-flight cap; default 1. */
  share?: number;
}

interface Team {
  /** Token buckets, filled at the first check of the team's limits (a team only held, in store mode, has none). */
  requests?: number;
  tokens?: number;
  updated: number;
  /** Prompts of this team in flight on this pod, whoever admitted them (the store or this class). */
  inflight: number;
}

/** The model a generation goes to and its own in-flight cap (ModelConfig.maxInflight). */
export interface ModelCap {
  id: string;
  maxInflight: number;
}

/** What an admitted request holds: release it when the response ends, with the real token usage when known. */
export interface Admitted {
  /** Give back the slots and settle the token reservation with `usedTokens` (undefined: keep the reservation). Idempotent. */
  release(usedTokens?: number): void | Promise<void>;
}

/** Slots in flight per team against one model's cap. */
class ModelPool {
  inflight = 0;
  private readonly teams = new Map<string, number>();

  constructor(readonly cap: number) {}

  held(team: string): number {
    return this.teams.get(team) ?? 0;
  }

  add(team: string, slots: number): void {
    this.inflight += slots;
    this.teams.set(team, this.held(team) + slots);
  }
}

export class Admission {
  private teams = new Map<string, Team>();
  private inflight = 0;
  private models = new Map<string, ModelPool>();

  constructor(
    private readonly maxInflight: number,
    /** The sum of every team's share weight (KeyRing.totalShare); read at each admission (the keys file may change). */
    private readonly totalShare: () => number = () => 1,
    private readonly now: () => number = () => Date.now(),
  ) {}

  get inFlight(): number {
    return this.inflight;
  }

  /** Generations in flight to one model. */
  inFlightTo(model: string): number {
    return this.models.get(model)?.inflight ?? 0;
  }

  /** A team's fair share of the gateway's in-flight cap (or of `cap`, a model's): at least one slot. */
  fairShare(limits: Pick<KeyLimits, "share">, cap = this.maxInflight): number {
    const total = Math.max(this.totalShare(), limits.share ?? 1);
    return Math.max(1, Math.floor((cap * (limits.share ?? 1)) / total));
  }

  /** A model's pool, made at its first generation (the config, and so its cap, is fixed for the process). */
  private pool(model: ModelCap): ModelPool {
    let pool = this.models.get(model.id);
    if (!pool) {
      pool = new ModelPool(model.maxInflight);
      this.models.set(model.id, pool);
    }
    return pool;
  }

  private team(consumer: string): Team {
    let t = this.teams.get(consumer);
    if (!t) {
      t = { updated: this.now(), inflight: 0 };
      this.teams.set(consumer, t);
    }
    return t;
  }

  /**
   * Admit one request of `consumer` taking `slots` concurrency slots (one per
   * prompt) and reserving `tokens` of its tokens/minute (an upper bound of the
   * prompt's tokens plus every choice's max_tokens), or throw the ApiError to send.
   */
  admit(consumer: string, limits: KeyLimits, slots = 1, tokens = 0, model?: ModelCap): Admitted {
    const now = this.now();
    const tpm = limits.tokensPerMinute;
    const t = this.team(consumer);
    const elapsed = now - t.updated;
    const rpmPerMs = limits.requestsPerMinute / 60_000;
    t.requests = Math.min(limits.requestsPerMinute, (t.requests ?? limits.requestsPerMinute) + elapsed * rpmPerMs);
    if (tpm !== undefined) t.tokens = Math.min(tpm, (t.tokens ?? tpm) + (elapsed * tpm) / 60_000);
    t.updated = now;
    if (t.requests < 1) {
      const wait = Math.max(1, Math.ceil((1 - t.requests) / rpmPerMs / 1000));
      throw requestLimited(limits.requestsPerMinute, wait);
    }
    if (tpm !== undefined) checkReservation(tokens, tpm);
    if (tpm !== undefined && (t.tokens ?? 0) < tokens) {
      // Refill is linear: the deficit takes deficit / (tpm per second) seconds, if nothing else is settled back.
      const wait = Math.max(1, Math.ceil(((tokens - (t.tokens ?? 0)) * 60) / tpm));
      throw tokenLimited(tpm, tokens, wait);
    }
    if (t.inflight + slots > limits.maxConcurrent) throw concurrencyLimited(t.inflight, limits.maxConcurrent);
    const held = this.hold(consumer, limits, slots, model);
    t.requests -= 1;
    if (tpm !== undefined) t.tokens = (t.tokens ?? 0) - tokens;
    let released = false;
    return {
      release: (usedTokens?: number) => {
        if (released) return;
        released = true;
        held.release();
        // Settle with the real usage: give back what was reserved but not used (never above the bucket's size).
        if (tpm !== undefined && usedTokens !== undefined) {
          t.tokens = Math.min(tpm, (t.tokens ?? 0) + tokens - usedTokens);
        }
      },
    };
  }

  /**
   * Take `slots` of the pod's in-flight cap for `consumer`, or throw the 503:
   * within its fair share a team is admitted however full the pod is; above
   * it, only into free capacity; the same for `model`'s own cap. The team's
   * own limits are not checked (the store did, or `admit` just did).
   */
  hold(consumer: string, limits: Pick<KeyLimits, "share">, slots = 1, model?: ModelCap): Admitted {
    const t = this.team(consumer);
    const share = this.fairShare(limits);
    if (t.inflight + slots > share && this.inflight + slots > this.maxInflight) {
      throw overloaded(
        `the gateway has ${this.inflight} generations in flight, its limit is ${this.maxInflight}; this key has ${t.inflight}, above its fair share of ${share}`,
        1,
      );
    }
    // The same rule per model: its cap is what its own Triton queues, and one model's load
    // must not take another model's capacity (each has its own Triton).
    const pool = model ? this.pool(model) : undefined;
    if (model && pool) {
      const held = pool.held(consumer);
      const modelShare = this.fairShare(limits, pool.cap);
      if (held + slots > modelShare && pool.inflight + slots > pool.cap) {
        throw overloaded(
          `the model '${model.id}' has ${pool.inflight} generations in flight, its limit is ${pool.cap}; this key has ${held} there, above its fair share of ${modelShare}`,
          1,
        );
      }
    }
    t.inflight += slots;
    this.inflight += slots;
    pool?.add(consumer, slots);
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        t.inflight -= slots;
        this.inflight -= slots;
        pool?.add(consumer, -slots);
      },
    };
  }
}

/** A reservation larger than the whole tokens/minute limit can never be admitted: say so, not "retry". */
export function checkReservation(tokens: number, tokensPerMinute: number): void {
  if (tokens > tokensPerMinute) {
    throw rateLimited(
      `this request reserves ${tokens} tokens (prompt and max_tokens), more than this key's limit of ${tokensPerMinute} tokens per minute; lower max_tokens or shorten the prompt`,
      "rate_limit_exceeded",
      60,
    );
  }
}

export function tokenLimited(tokensPerMinute: number, tokens: number, wait: number): ApiError {
  return rateLimited(
    `token limit of ${tokensPerMinute} tokens per minute reached for this key (this request reserves ${tokens}); retry in ${wait} s`,
    "rate_limit_exceeded",
    wait,
  );
}

export function requestLimited(requestsPerMinute: number, wait: number): ApiError {
  return rateLimited(
    `rate limit of ${requestsPerMinute} requests per minute reached for this key; retry in ${wait} s`,
    "rate_limit_exceeded",
    wait,
  );
}

export function concurrencyLimited(inflight: number | undefined, maxConcurrent: number): ApiError {
  return rateLimited(
    inflight === undefined
      ? `this key's generations in flight are at its limit of ${maxConcurrent}`
      : `this key already has ${inflight} generation(s) in flight, its limit is ${maxConcurrent}`,
    "concurrency_limit_exceeded",
    1,
  );
}

export function isApiError(e: unknown): e is ApiError {
  return e instanceof ApiError;
}
