/**
 * The gateway's link to the shared store: its key names, whether it is
 * reachable, and how many gateway pods there are. Every pod writes a
 * heartbeat into one sorted set every HEARTBEAT_MS and counts the members
 * seen within POD_TTL_MS; that count divides a team's limits while the
 * store is unreachable (the last count is kept through the outage).
 *
 * Reachability is a two-state machine logged once per transition: any failed
 * store call makes the pod degraded (per-pod limits, usage kept in memory);
 * only a successful heartbeat makes it exact again, and only once what the
 * pod did meanwhile is in the store (the `onReturn` hooks: releases of
 * permits, the requests it admitted on its own); then the pending usage is
 * written (the `afterBeat` hooks).
 */
import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import type { FastifyBaseLogger } from "fastify";
import type { StoreConfig } from "./storeConfig";
import type { StoreClient } from "./connection";

/** How often each pod proves it is alive and retries a lost store. */
export const HEARTBEAT_MS = 2000;
/** A pod not heard from for this long is no longer counted (a crashed pod drops out within 10 s). */
export const POD_TTL_MS = 10_000;

/** Key names. A team's keys share the hash tag `{team}`, so cluster mode keeps them in one slot (one MULTI each). */
export class StoreKeys {
  constructor(readonly prefix: string) {}
  get pods(): string {
    return `${this.prefix}pods`;
  }
  /** The team's requests (rpm) or tokens (tpm) counted in one window (admission/windowRule.ts windowOf). */
  window(kind: "rpm" | "tpm", team: string, window: number): string {
    return `${this.prefix}${kind}:${StoreKeys.tag(team)}:${window}`;
  }
  static tag(team: string): string {
    return `{${team}}`;
  }
  /** The team's concurrency permits: a sorted set scored by each permit's expiry. */
  permits(team: string): string {
    return `${this.prefix}conc:${StoreKeys.tag(team)}`;
  }
  /** `period` is `d:YYYY-MM-DD` or `m:YYYY-MM` (UTC). */
  usage(team: string, period: string): string {
    return `${this.prefix}usage:${StoreKeys.tag(team)}:${period}`;
  }
  /**
   * The last usage batch of the team's each pod (field: pod id) the store has applied: a batch
   * sent again after an unclear answer (a timeout, a dropped connection) is applied once.
   */
  usageApplied(team: string): string {
    return `${this.prefix}usage:${StoreKeys.tag(team)}:applied`;
  }
  /**
   * A canary's keys share the hash tag of its model and id (cluster mode keeps them in one slot):
   * its samples per time slot (canary/canarySamples.ts) and its rollback decision.
   */
  canarySlot(model: string, canary: string, slot: number): string {
    return `${this.prefix}canary:${StoreKeys.tag(`${model}|${canary}`)}:s:${slot}`;
  }
  canaryDecision(model: string, canary: string): string {
    return `${this.prefix}canary:${StoreKeys.tag(`${model}|${canary}`)}:decision`;
  }
}

export interface StoreStateListener {
  (state: { degraded: boolean; pods: number }): void;
}

export class SharedStore {
  readonly podId = `${hostname()}-${process.pid}-${randomBytes(4).toString("hex")}`;
  readonly keys: StoreKeys;
  /** Degraded until the first heartbeat succeeds: a pod never trusts a store it has not reached. */
  private degraded = true;
  /** The state last logged; undefined before the first heartbeat's outcome. */
  private logged: boolean | undefined;
  private pods: number;
  private timer: NodeJS.Timeout | undefined;
  private beating: Promise<void> | undefined;
  private readonly afterBeat: Array<() => Promise<void>> = [];
  private readonly beforeExact: Array<() => Promise<void>> = [];
  private readonly listeners: StoreStateListener[] = [];
  private stopping = false;

  constructor(
    readonly client: StoreClient,
    readonly config: StoreConfig,
    private readonly log: FastifyBaseLogger,
  ) {
    this.keys = new StoreKeys(config.keyPrefix);
    this.pods = config.assumedPods;
    // ioredis reports errors as events too; the state machine below logs them once per transition.
    client.on("error", () => undefined);
    client.on("close", () => {
      if (!this.stopping) this.unreachable(new Error("connection to the store closed"));
    });
    // Back after an outage: count the pods and leave degraded mode now, not at the next beat.
    client.on("ready", () => void this.beat());
  }

  get isDegraded(): boolean {
    return this.degraded;
  }

  /** Gateway pods alive, as last counted; `assumedPods` before any count. */
  get podCount(): number {
    return this.pods;
  }

  onState(listener: StoreStateListener): void {
    this.listeners.push(listener);
    listener({ degraded: this.degraded, pods: this.pods });
  }

  /**
   * Run when the store answers again, before the pod leaves degraded mode;
   * a hook that throws keeps it degraded until the next beat. The pod's
   * admissions switch to the store only once its releases made during the
   * outage are there: a permit whose request has ended never refuses anyone.
   */
  onReturn(hook: () => Promise<void>): void {
    this.beforeExact.push(hook);
  }

  /** Run after every successful heartbeat (flush what was kept while the store was away). */
  onBeat(hook: () => Promise<void>): void {
    this.afterBeat.push(hook);
  }

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.beat(), HEARTBEAT_MS);
    this.timer.unref();
    // Still connecting: the 'ready' event beats; a beat now would fail and log a false outage.
    if (this.client.status === "ready") void this.beat();
  }

  /** A store call failed (not a refusal): per-pod limits until a heartbeat gets through. */
  unreachable(error: unknown): void {
    this.transition(true, error);
  }

  /** One heartbeat: register this pod, drop the silent ones, count the rest. Never throws. */
  beat(): Promise<void> {
    this.beating ??= this.beatOnce().finally(() => (this.beating = undefined));
    return this.beating;
  }

  private async beatOnce(): Promise<void> {
    const now = Date.now();
    const key = this.keys.pods;
    try {
      const replies = await this.client
        .multi()
        .zadd(key, now, this.podId)
        .zremrangebyscore(key, "-inf", now - POD_TTL_MS)
        .zcard(key)
        .pexpire(key, 3 * POD_TTL_MS)
        .exec();
      const count = replies?.[2]?.[1];
      if (typeof count !== "number") throw new Error("the store's heartbeat transaction was aborted");
      this.pods = Math.max(1, count);
      if (this.degraded) for (const hook of this.beforeExact) await hook();
    } catch (error) {
      this.unreachable(error);
      return;
    }
    this.transition(false);
    for (const hook of this.afterBeat) await hook();
  }

  private transition(degraded: boolean, error?: unknown): void {
    const changed = this.degraded !== degraded;
    this.degraded = degraded;
    if (this.logged !== degraded) {
      this.logged = degraded;
      if (degraded) {
        this.log.warn(
          { store: this.config.host, pods: this.pods, error: error instanceof Error ? error.message : String(error) },
          "store unreachable: each team gets its limits divided by the gateway pod count on this pod until it answers",
        );
      } else {
        this.log.info({ store: this.config.host, pods: this.pods }, "store reachable: limits are exact across pods");
      }
    }
    if (changed || !degraded) for (const l of this.listeners) l({ degraded, pods: this.pods });
  }

  /** Leave the pod count at once (draining), stop beating and close the connection. */
  async stop(): Promise<void> {
    this.stopping = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    try {
      if (!this.degraded) await this.client.zrem(this.keys.pods, this.podId);
    } catch {
      // It drops out by itself after POD_TTL_MS.
    }
    this.client.disconnect();
  }
}
