/**
 * Usage per team and model: requests, prompt tokens and completion tokens,
 * today and this month (UTC). Every pod tallies what it served in memory;
 * with a store it also adds each request to the team's hashes there (one per
 * day, one per month), so any pod can answer for the whole endpoint and the
 * figures survive gateway restarts. A write that fails stays pending on the
 * pod and is retried after the next successful heartbeat, so an outage of
 * the store loses nothing a surviving pod served. A write whose answer is
 * unclear (a timeout or a dropped connection after the store may have applied
 * it) is sent again as the same numbered batch, which the store applies once
 * (APPLY_LUA): a retry never counts a request twice.
 *
 * Hash fields are `<counter>|<model>` with counter r (requests), p (prompt
 * tokens) or c (completion tokens); the model id may contain anything after the bar.
 * A request a model's canary build served counts there too, and once more
 * under cr, cp and cc: the model's entry then says how much of it the canary
 * served (a reader that does not know these counters skips them).
 */
import { luaScript, runScript } from "../store/luaScript";
import type { SharedStore } from "../store/sharedStore";
import type { Build } from "../canary/weightedSplit";

/** A day's hash outlives its month; a month's is kept a year and a month, then expires. */
export const DAY_TTL_SECONDS = 40 * 86_400;
export const MONTH_TTL_SECONDS = 400 * 86_400;
/** Requests ending within this window share one write to the store. */
export const FLUSH_DELAY_MS = 50;

/**
 * One team's batch from one pod, applied at most once. KEYS[1]: the team's
 * applied-batch hash (StoreKeys.usageApplied); KEYS[2..]: its usage hashes.
 * ARGV[1]: the pod id, ARGV[2]: the batch's number, ARGV[3]: the applied
 * hash's TTL (s); then per usage hash, in KEYS order: its TTL (s), its field
 * count n, and n field/amount pairs. A pod numbers its batches in order and
 * sends a team's next one only after the store has answered the last, so a
 * number at or below the last applied one is a batch already counted.
 * Returns 1 applied, 0 already applied.
 */
const APPLY_LUA = `
local last = tonumber(redis.call('hget', KEYS[1], ARGV[1]) or '0')
if tonumber(ARGV[2]) <= last then return 0 end
redis.call('hset', KEYS[1], ARGV[1], ARGV[2])
redis.call('expire', KEYS[1], ARGV[3])
local a = 4
for k = 2, #KEYS do
  local ttl = ARGV[a]
  local n = tonumber(ARGV[a + 1])
  a = a + 2
  for i = 1, n do
    redis.call('hincrby', KEYS[k], ARGV[a], ARGV[a + 1])
    a = a + 2
  end
  redis.call('expire', KEYS[k], ttl)
end
return 1
`;
const APPLY = luaScript(APPLY_LUA);

/** A team's batch sent to the store: kept, with its number, until the store has answered for it. */
interface Batch {
  seq: number;
  periods: Periods;
}

type Counter = "r" | "p" | "c" | "cr" | "cp" | "cc";
/** field -> count */
type Tally = Map<string, number>;
/** period (d:YYYY-MM-DD, m:YYYY-MM) -> tally */
type Periods = Map<string, Tally>;

export interface UsageCounts {
  requests: number;
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

export interface UsagePeriod {
  /** ISO 8601, UTC: the period is [start, end). */
  start: string;
  end: string;
  total: UsageCounts;
  /** One entry per model used in the period, by model id; `canary`: the part its canary build served, when it served any. */
  models: Array<{ model: string; canary?: UsageCounts } & UsageCounts>;
}

/** GET /v1/usage's body (docs/consuming.md "Usage"). */
export interface UsageReport {
  object: "usage";
  team: string;
  /** `cluster`: every gateway pod's requests (from the store); `pod`: only this pod's, since `since`. */
  scope: "cluster" | "pod";
  /** Present with scope `pod`: when this pod started counting. */
  since?: string;
  /** True when a store is configured but unreachable, so the answer is this pod's own count. */
  degraded?: boolean;
  today: UsagePeriod;
  month: UsagePeriod;
}

export function dayPeriod(at: Date): string {
  return `d:${at.toISOString().slice(0, 10)}`;
}
export function monthPeriod(at: Date): string {
  return `m:${at.toISOString().slice(0, 7)}`;
}

function add(periods: Periods, period: string, field: string, n: number): void {
  let tally = periods.get(period);
  if (!tally) {
    tally = new Map();
    periods.set(period, tally);
  }
  tally.set(field, (tally.get(field) ?? 0) + n);
}

function merge(into: Periods, from: Periods): void {
  for (const [period, tally] of from) for (const [field, n] of tally) add(into, period, field, n);
}

const zero = (): UsageCounts => ({ requests: 0, prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 });

function count(c: UsageCounts, counter: "r" | "p" | "c", n: number): void {
  if (counter === "r") c.requests += n;
  else if (counter === "p") c.prompt_tokens += n;
  else c.completion_tokens += n;
  c.total_tokens = c.prompt_tokens + c.completion_tokens;
}

function summarize(tally: Tally, start: Date, end: Date): UsagePeriod {
  const byModel = new Map<string, UsageCounts>();
  const canaryOf = new Map<string, UsageCounts>();
  const total = zero();
  for (const [field, n] of tally) {
    const bar = field.indexOf("|");
    if (bar < 0) continue;
    const counter = field.slice(0, bar) as Counter;
    const model = field.slice(bar + 1);
    if (counter === "cr" || counter === "cp" || counter === "cc") {
      const c = canaryOf.get(model) ?? zero();
      canaryOf.set(model, c);
      count(c, counter[1] as "r" | "p" | "c", n);
      continue;
    }
    if (counter !== "r" && counter !== "p" && counter !== "c") continue;
    let counts = byModel.get(model);
    if (!counts) {
      counts = zero();
      byModel.set(model, counts);
    }
    for (const c of [counts, total]) count(c, counter, n);
  }
  return {
    start: start.toISOString(),
    end: end.toISOString(),
    total,
    models: [...byModel]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([model, counts]) => {
        const canary = canaryOf.get(model);
        return { model, ...counts, ...(canary ? { canary } : {}) };
      }),
  };
}

function bounds(at: Date): { day: [Date, Date]; month: [Date, Date] } {
  const y = at.getUTCFullYear();
  const m = at.getUTCMonth();
  const d = at.getUTCDate();
  return {
    day: [new Date(Date.UTC(y, m, d)), new Date(Date.UTC(y, m, d + 1))],
    month: [new Date(Date.UTC(y, m, 1)), new Date(Date.UTC(y, m + 1, 1))],
  };
}

export class UsageLedger {
  /** team -> periods: everything this pod served, for the current day and month only. */
  private readonly local = new Map<string, Periods>();
  /** team -> periods: not yet in the store. */
  private pending = new Map<string, Periods>();
  /** team -> the batch sent without a clear answer: sent again, under its number, before anything newer. */
  private readonly unsure = new Map<string, Batch>();
  /** The number of this pod's last batch (the store keeps the last it applied per pod and team). */
  private seq = 0;
  private flushing: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly since: Date;
  /** The current day's and month's period names, and the day they hold for: formatted once a day, not per request. */
  private periods: { from: number; to: number; names: [string, string] } | undefined;

  constructor(
    private readonly store: SharedStore | undefined,
    private readonly now: () => Date = () => new Date(),
  ) {
    this.since = now();
    store?.onBeat(() => this.flush());
  }

  /** [day, month] period names of `at`. */
  private periodsOf(at: Date): [string, string] {
    const t = at.getTime();
    const cached = this.periods;
    if (cached && t >= cached.from && t < cached.to) return cached.names;
    const [from, to] = bounds(at).day;
    this.periods = { from: from.getTime(), to: to.getTime(), names: [dayPeriod(at), monthPeriod(at)] };
    return this.periods.names;
  }

  /** One request's usage (tokens 0 when it failed before Triton reported them), and the build that served it. */
  record(team: string, model: string, promptTokens: number, completionTokens: number, build: Build = "stable"): void {
    const periods = this.periodsOf(this.now());
    const fields: Array<[string, number]> = [
      [`r|${model}`, 1],
      [`p|${model}`, promptTokens],
      [`c|${model}`, completionTokens],
    ];
    if (build === "canary") {
      fields.push([`cr|${model}`, 1], [`cp|${model}`, promptTokens], [`cc|${model}`, completionTokens]);
    }
    const mine = this.local.get(team) ?? new Map<string, Tally>();
    this.local.set(team, mine);
    // Earlier days and months are only in the store now: the pod keeps the current ones.
    for (const period of mine.keys()) if (!periods.includes(period)) mine.delete(period);
    for (const period of periods) for (const [field, n] of fields) add(mine, period, field, n);
    if (!this.store) return;
    const queued = this.pending.get(team) ?? new Map<string, Tally>();
    this.pending.set(team, queued);
    for (const period of periods) for (const [field, n] of fields) add(queued, period, field, n);
    if (!this.store.isDegraded) this.flushSoon();
  }

  /**
   * One write for every request that ends within FLUSH_DELAY_MS: under load a
   * transaction per team per batch instead of one per request (the profile
   * showed about 0.8 ms of CPU per request in per-request writes). A report
   * flushes at once, so no reader waits for the timer.
   */
  private flushSoon(): void {
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.flush();
    }, FLUSH_DELAY_MS);
    this.timer.unref();
  }

  /** Write what is pending to the store; what fails stays pending. Never throws. */
  flush(): Promise<void> {
    this.flushing ??= this.flushOnce().finally(() => (this.flushing = undefined));
    return this.flushing;
  }

  private async flushOnce(): Promise<void> {
    const store = this.store;
    if (!store) return;
    // Records made while a batch is on the wire go out in the next round.
    while ((this.pending.size > 0 || this.unsure.size > 0) && !store.isDegraded) {
      for (const team of new Set([...this.unsure.keys(), ...this.pending.keys()])) {
        let batch = this.unsure.get(team);
        if (!batch) {
          const periods = this.pending.get(team);
          if (!periods) continue;
          this.pending.delete(team);
          batch = { seq: ++this.seq, periods };
          this.unsure.set(team, batch);
        }
        try {
          await this.apply(store, team, batch);
          this.unsure.delete(team);
        } catch (error) {
          store.unreachable(error);
          return;
        }
      }
    }
  }

  /** One team's batch in one script (its keys share a hash tag, so cluster mode keeps them in one slot). */
  private async apply(store: SharedStore, team: string, batch: Batch): Promise<void> {
    const keys = [store.keys.usageApplied(team)];
    const args: Array<string | number> = [store.podId, batch.seq, DAY_TTL_SECONDS];
    for (const [period, tally] of batch.periods) {
      const fields = [...tally].filter(([, n]) => n !== 0);
      keys.push(store.keys.usage(team, period));
      args.push(period.startsWith("d:") ? DAY_TTL_SECONDS : MONTH_TTL_SECONDS, fields.length);
      for (const [field, n] of fields) args.push(field, n);
    }
    await runScript(store.client, APPLY, keys, args);
  }

  /** The team's usage today and this month: the whole endpoint's from the store, else this pod's own. */
  async report(team: string): Promise<UsageReport> {
    const at = this.now();
    const day = dayPeriod(at);
    const month = monthPeriod(at);
    const b = bounds(at);
    const store = this.store;
    if (store && !store.isDegraded) {
      try {
        await this.flush();
        const replies = await store.client
          .multi()
          .hgetall(store.keys.usage(team, day))
          .hgetall(store.keys.usage(team, month))
          .hget(store.keys.usageApplied(team), store.podId)
          .exec();
        if (!replies) throw new Error("the store aborted the usage read");
        const read = (i: number): Tally => {
          const [error, value] = replies[i] ?? [];
          if (error) throw error;
          return new Map(Object.entries((value ?? {}) as Record<string, string>).map(([f, n]) => [f, Number(n)]));
        };
        const tallies: Periods = new Map([
          [day, read(0)],
          [month, read(1)],
        ]);
        // What this pod served but could not write yet is part of the truth too; a batch whose
        // answer was unclear counts here unless the store says it has applied it.
        const queued = this.pending.get(team);
        if (queued) merge(tallies, queued);
        const unsure = this.unsure.get(team);
        const [appliedError, applied] = replies[2] ?? [];
        if (appliedError) throw appliedError;
        if (unsure && Number(applied ?? 0) < unsure.seq) merge(tallies, unsure.periods);
        return {
          object: "usage",
          team,
          scope: "cluster",
          today: summarize(tallies.get(day) ?? new Map(), ...b.day),
          month: summarize(tallies.get(month) ?? new Map(), ...b.month),
        };
      } catch (error) {
        store.unreachable(error);
      }
    }
    const mine = this.local.get(team);
    return {
      object: "usage",
      team,
      scope: "pod",
      since: this.since.toISOString(),
      ...(store ? { degraded: true } : {}),
      today: summarize(mine?.get(day) ?? new Map(), ...b.day),
      month: summarize(mine?.get(month) ?? new Map(), ...b.month),
    };
  }
}
