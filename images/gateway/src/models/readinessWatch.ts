/**
 * Whether a model that may sleep (its config has `wake`) has a ready Triton,
 * known before a request needs it: a background poll of its Triton's
 * readiness, so a request to an awake model pays nothing (one boolean read)
 * and a request to a sleeping one is held (admission/holding.ts). Models
 * without `wake` have no watch and are served as always.
 */
import type { TritonClient } from "../triton/tritonClient";

/**
 * What /v1/models says of a model: `ready` (its Triton serves), `waking` (its
 * Triton answers but is still loading the model, or requests are held for it
 * here), `sleeping` (no Triton, nothing held here: the next request wakes it).
 */
export type ModelStatus = "ready" | "waking" | "sleeping";

/** What the last poll saw: the ensemble ready, the server answering without it, or no server. */
export type Seen = "ready" | "loading" | "down";

/**
 * Between polls while the model is not ready. The wake's own latency is
 * dominated by the gRPC channel's reconnect backoff (at most 5 s,
 * triton/tritonClient.ts), so polling faster buys little.
 */
export const POLL_MS = 500;
/**
 * Between polls while it is ready: only to notice it went to sleep. A request
 * that finds it gone first marks it down itself (markDown) and is held again
 * (admission/admissionPlugin.ts), so a slow poll here never costs a request.
 */
export const READY_POLL_MS = 5000;
/** A poll's own deadline: an unreachable Triton must not delay the next poll. */
const POLL_TIMEOUT_MS = 1000;

export class ReadinessWatch {
  private seenNow: Seen = "down";
  private timer: NodeJS.Timeout | undefined;
  private stopped = true;
  private polling = false;
  private readonly listeners: Array<(seen: Seen, before: Seen) => void> = [];

  constructor(
    private readonly triton: TritonClient,
    private readonly pollMs = POLL_MS,
    private readonly readyPollMs = READY_POLL_MS,
  ) {}

  get seen(): Seen {
    return this.seenNow;
  }

  /** The hot path's only question. */
  get ready(): boolean {
    return this.seenNow === "ready";
  }

  /** Called with every change of what the polls see. */
  onChange(listener: (seen: Seen, before: Seen) => void): void {
    this.listeners.push(listener);
  }

  /** Polls now, then every pollMs (readyPollMs while ready) until stop(). */
  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    void this.poll();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  /**
   * A request found this model's Triton unreachable between two polls (it
   * was scaled to zero): the next requests are held until a poll sees it ready.
   */
  markDown(): void {
    this.set("down");
    // The next poll soon, not after the ready state's long interval (one in flight schedules its own).
    if (!this.polling) this.schedule(this.pollMs);
  }

  /** One poll, then the next one scheduled (never two at once). */
  async poll(): Promise<void> {
    this.polling = true;
    let seen: Seen;
    try {
      seen = (await this.triton.ready(POLL_TIMEOUT_MS)) ? "ready" : "loading";
    } catch {
      seen = "down";
    } finally {
      this.polling = false;
    }
    this.set(seen);
    this.schedule(seen === "ready" ? this.readyPollMs : this.pollMs);
  }

  private schedule(ms: number): void {
    clearTimeout(this.timer);
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.poll(), ms);
    this.timer.unref();
  }

  private set(seen: Seen): void {
    const before = this.seenNow;
    if (seen === before) return;
    this.seenNow = seen;
    for (const listener of this.listeners) listener(seen, before);
  }
}

/** A sleeping model's status from what its watch sees and how many requests it holds here. */
export function statusOf(seen: Seen, held: number): ModelStatus {
  if (seen === "ready") return "ready";
  if (seen === "loading" || held > 0) return "waking";
  return "sleeping";
}
