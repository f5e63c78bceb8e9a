/**
 * One sleeping model's held requests on this pod: a bounded first-in-first-out
 * queue. A request takes a place (or is refused: the caller answers 429), then
 * ends exactly once: released when the model's Triton is ready (every held
 * request, in arrival order), timed out after the activation timeout, gone
 * when its client left (its place is free at once), or closing when the pod
 * shuts down. Only timers and promises: the HTTP side is holding.ts.
 */

/** How a held request's wait ended. */
export type HoldEnd = "released" | "timeout" | "gone" | "closing";

export interface Hold {
  /** Settles once, with how the wait ended. */
  readonly end: Promise<HoldEnd>;
  /** Give the place back (the client left, or admission refused the request); nothing once ended. */
  leave(): void;
}

interface Entry {
  readonly heldAt: number;
  readonly timer: NodeJS.Timeout;
  settle(how: HoldEnd): void;
}

export interface HoldQueueOptions {
  /** Places; one more request is refused. */
  depth: number;
  /** Longest a request waits before it ends with "timeout". */
  timeoutMs: number;
  /** Called with the number held after every change (the held-requests gauge). */
  onSize?: (size: number) => void;
  /** Milliseconds clock (Date.now), replaceable in tests. */
  now?: () => number;
}

export class HoldQueue {
  private readonly entries: Entry[] = [];
  private readonly onSize: (size: number) => void;
  private readonly now: () => number;

  constructor(private readonly options: HoldQueueOptions) {
    this.onSize = options.onSize ?? (() => undefined);
    this.now = options.now ?? Date.now;
  }

  get size(): number {
    return this.entries.length;
  }

  /** A place at the back, or undefined when every place is taken. */
  enter(): Hold | undefined {
    if (this.entries.length >= this.options.depth) return undefined;
    let settle: (how: HoldEnd) => void = () => undefined;
    const end = new Promise<HoldEnd>((resolve) => (settle = resolve));
    let settled = false;
    const entry: Entry = {
      heldAt: this.now(),
      timer: setTimeout(() => this.finish(entry, "timeout"), this.options.timeoutMs),
      settle: (how) => {
        if (settled) return;
        settled = true;
        settle(how);
      },
    };
    this.entries.push(entry);
    this.onSize(this.entries.length);
    return { end, leave: () => this.finish(entry, "gone") };
  }

  /**
   * Seconds until a place is sure to be free: when the oldest held request
   * times out (or sooner, when the model wakes). At least 1.
   */
  retryAfterSeconds(): number {
    const oldest = this.entries[0];
    if (!oldest) return 1;
    return Math.max(1, Math.ceil((oldest.heldAt + this.options.timeoutMs - this.now()) / 1000));
  }

  /** The model is ready: every held request goes, first in first out (promises settle in that order). */
  releaseAll(): void {
    this.endAll("released");
  }

  /** The pod is shutting down: every held request ends (each is answered so it retries elsewhere). */
  closeAll(): void {
    this.endAll("closing");
  }

  private endAll(how: HoldEnd): void {
    const all = this.entries.splice(0);
    if (all.length === 0) return;
    this.onSize(0);
    for (const entry of all) {
      clearTimeout(entry.timer);
      entry.settle(how);
    }
  }

  private finish(entry: Entry, how: HoldEnd): void {
    const at = this.entries.indexOf(entry);
    if (at < 0) return;
    this.entries.splice(at, 1);
    clearTimeout(entry.timer);
    this.onSize(this.entries.length);
    entry.settle(how);
  }
}
