/**
 * One canary's samples in time slots: per slot, the canary requests finished
 * and failed and both builds' TTFT histograms, as hash fields (`f`, `e`,
 * `c<bucket>`, `s<bucket>`) so the store can add up every pod's with HINCRBY.
 * A window is the last SLOTS slots of windowSeconds / SLOTS each (the
 * current, partial one included). The pod keeps its own slots (judged alone
 * without a store, or while it is away) and the increments not yet written
 * to the store.
 */
import type { Build } from "./weightedSplit";
import { type WindowTally, ttftBucket } from "./rollbackRule";

/** Slots per window: the window slides in steps of windowSeconds / SLOTS. */
export const SLOTS = 12;

/** hash field -> count */
export type SlotFields = Map<string, number>;

/** One finished request of either build. */
export interface Sample {
  build: Build;
  /** A server-side failure (5xx answered, upstream error or timeout): counts only for the canary. */
  failed: boolean;
  /** Seconds to its first generated text; absent when none came. */
  ttftSeconds?: number;
}

export function fieldsOf(sample: Sample): Array<[string, number]> {
  const fields: Array<[string, number]> = [];
  if (sample.build === "canary") {
    fields.push(["f", 1]);
    if (sample.failed) fields.push(["e", 1]);
  }
  if (sample.ttftSeconds !== undefined) {
    fields.push([`${sample.build === "canary" ? "c" : "s"}${ttftBucket(sample.ttftSeconds)}`, 1]);
  }
  return fields;
}

/** The window's tally from its slots' fields (one pod's, or the store's sums). */
export function tallyOf(slots: Iterable<SlotFields>): WindowTally {
  const t: WindowTally = { finished: 0, errors: 0, canaryTtft: new Map(), stableTtft: new Map() };
  for (const fields of slots) {
    for (const [field, n] of fields) {
      if (field === "f") t.finished += n;
      else if (field === "e") t.errors += n;
      else {
        const bucket = Number(field.slice(1));
        if (!Number.isInteger(bucket)) continue;
        const h = field[0] === "c" ? t.canaryTtft : field[0] === "s" ? t.stableTtft : undefined;
        h?.set(bucket, (h.get(bucket) ?? 0) + n);
      }
    }
  }
  return t;
}

function add(into: Map<number, SlotFields>, slot: number, field: string, n: number): void {
  let fields = into.get(slot);
  if (!fields) {
    fields = new Map();
    into.set(slot, fields);
  }
  fields.set(field, (fields.get(field) ?? 0) + n);
}

export class CanarySamples {
  readonly slotMs: number;
  /** This pod's own slots, the window's only. */
  private readonly local = new Map<number, SlotFields>();
  /** Increments not yet in the store. */
  private pending = new Map<number, SlotFields>();

  constructor(
    windowSeconds: number,
    private readonly now: () => number = Date.now,
  ) {
    this.slotMs = (windowSeconds * 1000) / SLOTS;
  }

  /** The slot `at` (ms since the epoch) falls in. */
  slotAt(at: number): number {
    return Math.floor(at / this.slotMs);
  }

  /** The window's slots, oldest first, ending with the current one. */
  windowSlots(): number[] {
    const current = this.slotAt(this.now());
    return Array.from({ length: SLOTS }, (_, i) => current - SLOTS + 1 + i);
  }

  record(sample: Sample): void {
    const slot = this.slotAt(this.now());
    for (const [field, n] of fieldsOf(sample)) {
      add(this.local, slot, field, n);
      add(this.pending, slot, field, n);
    }
    const oldest = slot - SLOTS + 1;
    for (const s of this.local.keys()) if (s < oldest) this.local.delete(s);
  }

  /** This pod's own tally over the window. */
  localTally(): WindowTally {
    const slots = new Set(this.windowSlots());
    return tallyOf([...this.local].filter(([s]) => slots.has(s)).map(([, f]) => f));
  }

  /** Hand over what is pending for the store (within the window: older slots would be judged by no one). */
  takePending(): Map<number, SlotFields> {
    const taken = this.pending;
    this.pending = new Map();
    const oldest = this.windowSlots()[0];
    for (const s of taken.keys()) if (s < oldest) taken.delete(s);
    return taken;
  }

  /** What a failed write did not deliver: pending again, before anything recorded meanwhile. */
  putBack(taken: Map<number, SlotFields>): void {
    for (const [slot, fields] of taken) for (const [field, n] of fields) add(this.pending, slot, field, n);
  }
}
