/**
 * A model's canary watched: every TICK_MS the pod ships its samples to the
 * store, reads the shared decision (adopting one another pod made), and
 * otherwise judges the window every pod has added to, writing the decision
 * once (SET NX) when the rule is broken. So every pod stops picking the
 * canary within one tick of the decision (TICK_MS, well inside the issue's
 * 60 s). In-flight canary requests are never touched: only new requests see
 * the decision.
 *
 * Without a store each pod judges its own samples alone. With a store that
 * is away (any call failed), the pod keeps what it decided or adopted so far
 * (a rolled-back canary stays rolled back), judges its own samples alone
 * meanwhile, and writes a decision it made alone once the store answers
 * (NX: a decision already there wins). The samples it could not ship are
 * shipped then, those of slots still in the window.
 */
import type { FastifyBaseLogger } from "fastify";
import type { CanaryRoute } from "./canaryRoute";
import type { CanaryStore, Decision } from "./canaryStore";
import { tallyOf } from "./canarySamples";
import { type Verdict, judge } from "./rollbackRule";

/** Between two ticks: ship, read the decision, judge. At most 5 s (the contract). */
export const TICK_MS = 2000;

export interface MonitorOptions {
  model: string;
  route: CanaryRoute;
  /** Absent: no store, the pod judges alone. */
  store?: CanaryStore;
  log: FastifyBaseLogger;
  /** Called once by the pod that makes a decision (the rollbacks counter). */
  onDecided: (decision: Decision) => void;
  now?: () => number;
  podId?: string;
}

export class CanaryMonitor {
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<void> | undefined;
  /** A decision this pod made alone while the store was away: written once it answers. */
  private unwritten: Decision | undefined;
  private readonly now: () => number;

  constructor(private readonly o: MonitorOptions) {
    this.now = o.now ?? Date.now;
  }

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.tick(), TICK_MS);
    this.timer.unref();
    void this.tick();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** One round; never throws, never two at once. */
  tick(): Promise<void> {
    this.ticking ??= this.tickOnce().finally(() => (this.ticking = undefined));
    return this.ticking;
  }

  private async tickOnce(): Promise<void> {
    const { store, route } = this.o;
    if (!store || !store.reachable) return this.judgeAlone();
    const pending = route.samples.takePending();
    try {
      await store.add(pending);
    } catch (error) {
      route.samples.putBack(pending);
      store.failed(error);
      return this.judgeAlone();
    }
    try {
      if (this.unwritten) {
        await store.decide(this.unwritten);
        this.unwritten = undefined;
      }
      const stored = await store.decision();
      route.confirm();
      if (stored) return this.adopt(stored);
      if (route.state === "rolled_back") return;
      const verdict = judge(tallyOf(await store.window(route.samples.windowSlots())), route.config.rollback);
      if (!verdict) return;
      const mine = this.decision(verdict, store.podId);
      if (await store.decide(mine)) {
        this.o.onDecided(mine);
        this.adopt(mine);
      } else {
        const theirs = await store.decision();
        if (theirs) this.adopt(theirs);
      }
    } catch (error) {
      store.failed(error);
      this.judgeAlone();
    }
  }

  private judgeAlone(): void {
    const { route } = this.o;
    if (route.state === "rolled_back") return;
    const verdict = judge(route.samples.localTally(), route.config.rollback);
    if (!verdict) return;
    const mine = this.decision(verdict, this.o.podId ?? "this pod");
    this.o.onDecided(mine);
    if (this.o.store) this.unwritten = mine;
    this.adopt(mine);
  }

  private decision(verdict: Verdict, pod: string): Decision {
    return { ...verdict, at: this.now(), pod };
  }

  private adopt(decision: Decision): void {
    const { route, model } = this.o;
    if (!route.rollBack(decision.reason)) return;
    this.o.log.warn(
      {
        model,
        canary: route.config.id,
        reason: decision.reason,
        detail: decision.detail,
        decidedBy: decision.pod,
        decidedAt: new Date(decision.at).toISOString(),
      },
      "canary rolled back: new requests go to the stable build, requests in flight on the canary finish there",
    );
  }
}
