/**
 * This pod's own capacity, checked after a team's own limits have admitted a
 * request (sharedLimits.ts): the pod's cap on generations in flight and each
 * model's own cap (its Triton's queue), both divided into fair shares by the
 * teams' `share` weights. The team's own limits are the client's doing (429);
 * the gateway's and the model's capacity are not (503). Both carry a
 * Retry-After. docs/consuming.md "Limits".
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
  /** Prompts of this team in flight on this pod. */
  inflight: number;
}

/** The model a generation goes to and its own in-flight cap (ModelConfig.maxInflight, or its canary's). */
export interface ModelCap {
  id: string;
  maxInflight: number;
  /** `canary`: the model's canary build, whose own cap is counted apart from the stable build's. */
  build?: "stable" | "canary";
}

/** The pool a cap is counted in: one per model, and one more for its canary. */
function poolKey(model: ModelCap): string {
  return model.build === "canary" ? `${model.id}|canary` : model.id;
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
    let pool = this.models.get(poolKey(model));
    if (!pool) {
      pool = new ModelPool(model.maxInflight);
      this.models.set(poolKey(model), pool);
    }
    return pool;
  }

  private team(consumer: string): Team {
    let t = this.teams.get(consumer);
    if (!t) {
      t = { inflight: 0 };
      this.teams.set(consumer, t);
    }
    return t;
  }

  /**
   * Take `slots` of the pod's in-flight cap for `consumer`, or throw the 503:
   * within its fair share a team is admitted however full the pod is; above
   * it, only into free capacity; the same for `model`'s own cap. The team's
   * own limits are not checked here (sharedLimits.ts did).
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
          `the model '${model.id}'${model.build === "canary" ? " (its canary build)" : ""} has ${pool.inflight} generations in flight, its limit is ${pool.cap}; this key has ${held} there, above its fair share of ${modelShare}`,
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

/** `held`: the team's generations still running upstream, a client's abandoned ones included. */
export function concurrencyLimited(held: number, maxConcurrent: number): ApiError {
  return rateLimited(
    `this key already has ${held} generation(s) in flight, its limit is ${maxConcurrent}`,
    "concurrency_limit_exceeded",
    1,
  );
}

export function isApiError(e: unknown): e is ApiError {
  return e instanceof ApiError;
}
