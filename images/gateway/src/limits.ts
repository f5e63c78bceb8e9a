/**
 * Admission control, checked right after authentication and before the body is
 * read: a per-key request rate (token bucket), per-key concurrency, and a
 * gateway-wide cap on requests in flight so Triton's queue stays short. The
 * first two are the client's doing (429); the last is capacity (503). Both
 * carry Retry-After.
 */
import { ApiError, overloaded, rateLimited } from "./errors";

export interface KeyLimits {
  requestsPerMinute: number;
  maxConcurrent: number;
}

interface Bucket {
  tokens: number;
  updated: number;
  inflight: number;
}

export class Admission {
  private buckets = new Map<string, Bucket>();
  private inflight = 0;

  constructor(
    private readonly maxInflight: number,
    private readonly now: () => number = () => Date.now(),
  ) {}

  get inFlight(): number {
    return this.inflight;
  }

  /**
   * Admit one request of `consumer` taking `slots` concurrency slots (one per
   * prompt), or throw the ApiError to send. The returned function releases
   * the slots; it is safe to call more than once.
   */
  admit(consumer: string, limits: KeyLimits, slots = 1): () => void {
    const now = this.now();
    let b = this.buckets.get(consumer);
    if (!b) {
      b = { tokens: limits.requestsPerMinute, updated: now, inflight: 0 };
      this.buckets.set(consumer, b);
    }
    const perMs = limits.requestsPerMinute / 60_000;
    b.tokens = Math.min(limits.requestsPerMinute, b.tokens + (now - b.updated) * perMs);
    b.updated = now;
    if (b.tokens < 1) {
      const wait = Math.max(1, Math.ceil((1 - b.tokens) / perMs / 1000));
      throw rateLimited(
        `rate limit of ${limits.requestsPerMinute} requests per minute reached for this key; retry in ${wait} s`,
        "rate_limit_exceeded",
        wait,
      );
    }
    if (b.inflight + slots > limits.maxConcurrent) {
      throw rateLimited(
        `this key already has ${b.inflight} generation(s) in flight, its limit is ${limits.maxConcurrent}`,
        "concurrency_limit_exceeded",
        1,
      );
    }
    if (this.inflight + slots > this.maxInflight) {
      throw overloaded(`the gateway has ${this.inflight} generations in flight, its limit is ${this.maxInflight}`, 1);
    }
    b.tokens -= 1;
    b.inflight += slots;
    this.inflight += slots;
    let released = false;
    const bucket = b;
    return () => {
      if (released) return;
      released = true;
      bucket.inflight -= slots;
      this.inflight -= slots;
    };
  }
}

export function isApiError(e: unknown): e is ApiError {
  return e instanceof ApiError;
}
