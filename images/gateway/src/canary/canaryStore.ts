/**
 * A canary's part of the shared store: every pod adds its samples to the
 * slot hashes (HINCRBY, expiring a window after the slot), reads the whole
 * window back to judge it, and reads the rollback decision, written once by
 * whichever pod first finds the rule broken (SET NX, with the reason). The
 * decision has no fixed end: each read renews it for DECISION_TTL_SECONDS, so
 * it stays while any pod still serves that canary id and goes a month after.
 * Every call may throw (the store is away): the caller degrades.
 */
import type { SharedStore } from "../store/sharedStore";
import type { RollbackReason } from "./rollbackRule";
import type { SlotFields } from "./canarySamples";

export const DECISION_TTL_SECONDS = 30 * 86_400;

/** The stored decision (JSON). */
export interface Decision {
  reason: RollbackReason;
  detail: string;
  /** ms since the epoch, when it was written. */
  at: number;
  /** The pod that wrote it. */
  pod: string;
}

function parseDecision(raw: unknown): Decision | undefined {
  if (typeof raw !== "string") return undefined;
  try {
    const d = JSON.parse(raw) as Partial<Decision>;
    if (d.reason !== "error_rate" && d.reason !== "ttft") return undefined;
    return { reason: d.reason, detail: String(d.detail ?? ""), at: Number(d.at ?? 0), pod: String(d.pod ?? "") };
  } catch {
    return undefined;
  }
}

/** One MULTI's replies, each checked: an error inside the transaction is the store failing. */
function replies(result: Array<[Error | null, unknown]> | null): unknown[] {
  if (!result) throw new Error("the store aborted the canary transaction");
  return result.map(([error, value]) => {
    if (error) throw error;
    return value;
  });
}

export class CanaryStore {
  constructor(
    private readonly store: SharedStore,
    private readonly model: string,
    private readonly canary: string,
    /** A slot's hash outlives the window it can be part of. */
    private readonly slotTtlMs: number,
  ) {}

  get reachable(): boolean {
    return !this.store.isDegraded;
  }

  /** Mark the store unreachable (the pod's limits and usage degrade with it). */
  failed(error: unknown): void {
    this.store.unreachable(error);
  }

  get podId(): string {
    return this.store.podId;
  }

  async add(pending: Map<number, SlotFields>): Promise<void> {
    if (pending.size === 0) return;
    const tx = this.store.client.multi();
    for (const [slot, fields] of pending) {
      const key = this.store.keys.canarySlot(this.model, this.canary, slot);
      for (const [field, n] of fields) tx.hincrby(key, field, n);
      tx.pexpire(key, this.slotTtlMs);
    }
    replies(await tx.exec());
  }

  /** The slots' sums over every pod. */
  async window(slots: readonly number[]): Promise<SlotFields[]> {
    const tx = this.store.client.multi();
    for (const slot of slots) tx.hgetall(this.store.keys.canarySlot(this.model, this.canary, slot));
    return replies(await tx.exec()).map(
      (value) => new Map(Object.entries((value ?? {}) as Record<string, string>).map(([f, n]) => [f, Number(n)])),
    );
  }

  /** The decision, if any pod made one; renewed as it is read. */
  async decision(): Promise<Decision | undefined> {
    const key = this.store.keys.canaryDecision(this.model, this.canary);
    const [raw] = replies(await this.store.client.multi().get(key).expire(key, DECISION_TTL_SECONDS).exec());
    return parseDecision(raw);
  }

  /** Write `decision` unless one is there; true when this pod's was written. */
  async decide(decision: Decision): Promise<boolean> {
    const key = this.store.keys.canaryDecision(this.model, this.canary);
    const written = await this.store.client.set(key, JSON.stringify(decision), "EX", DECISION_TTL_SECONDS, "NX");
    return written === "OK";
  }
}
