/**
 * A model's canary on the hot path: its config, its own Triton client, the
 * split, and whether it is rolled back. `pick()` is one synchronous read
 * (never a store call): a new request goes to the canary by its weight while
 * the canary serves, to the stable build for good once it is rolled back.
 * The monitor (canaryMonitor.ts) decides the rollback; this only holds it.
 */
import type { TritonClient } from "../triton/tritonClient";
import type { Canary } from "./canaryConfig";
import type { RollbackReason } from "./rollbackRule";
import { CanarySamples } from "./canarySamples";
import { type Build, WeightedSplit } from "./weightedSplit";

/**
 * `pending`: with a store, this pod has not yet read the shared decision (it
 * just started, or the store has not answered since): a canary rolled back by
 * another pod must not get requests from a new one, so new requests go to the
 * stable build until the first read.
 */
/** The response header that tells the caller which build answered: only for a model with a canary. */
export const BUILD_HEADER = "x-triton-ft-build";

export type CanaryState = "pending" | "serving" | "rolled_back";

/** What /v1/models says of a model's canary (docs/consuming.md "Models"). */
export interface CanaryCard {
  id: string;
  weight: number;
  state: CanaryState;
  reason: RollbackReason | null;
}

export class CanaryRoute {
  private readonly split: WeightedSplit;
  private rolledBack: RollbackReason | undefined;
  private known: boolean;
  private readonly listeners: Array<(reason: RollbackReason) => void> = [];
  /** Both builds' outcomes, for the rule (the monitor reads and ships them). */
  readonly samples: CanarySamples;

  constructor(
    readonly config: Canary,
    readonly triton: TritonClient,
    /** With a store: stay `pending` until confirm(). */
    awaitDecision = false,
    now: () => number = Date.now,
  ) {
    this.split = new WeightedSplit(config.weight);
    this.known = !awaitDecision;
    this.samples = new CanarySamples(config.rollback.windowSeconds, now);
  }

  get state(): CanaryState {
    if (this.rolledBack !== undefined) return "rolled_back";
    return this.known ? "serving" : "pending";
  }

  /** The shared decision was read (and there was none): the canary may take its share. */
  confirm(): void {
    this.known = true;
  }

  get reason(): RollbackReason | undefined {
    return this.rolledBack;
  }

  /** The build of the next new request. */
  pick(): Build {
    return this.state === "serving" ? this.split.next() : "stable";
  }

  /** Stop sending new requests to the canary (sticky: there is no way back for this id). Idempotent. */
  rollBack(reason: RollbackReason): boolean {
    if (this.rolledBack !== undefined) return false;
    this.rolledBack = reason;
    for (const l of this.listeners) l(reason);
    return true;
  }

  onRollback(listener: (reason: RollbackReason) => void): void {
    this.listeners.push(listener);
  }

  card(): CanaryCard {
    return { id: this.config.id, weight: this.config.weight, state: this.state, reason: this.rolledBack ?? null };
  }
}
