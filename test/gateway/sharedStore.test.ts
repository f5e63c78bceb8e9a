/**
 * Limits and usage shared by two gateway processes through the real store
 * (globalSetup: `podA` and `podB`, one key prefix, one keys file, as two pods
 * of one deployment), in front of the real tritonserver: a team's
 * requests/minute, tokens/minute and concurrency hold across both, tokens
 * are settled with the real usage, `GET /v1/usage` answers the same on
 * either pod; and the fair-share scenario with the store on.
 */
import { rmSync, writeFileSync } from "node:fs";
import { describe, expect, inject, it } from "vitest";
import { METRICS } from "../../images/gateway/src/telemetry/metrics";
import { reserveTokens } from "../../images/gateway/src/admission/admissionPlugin";
import type { UsageReport } from "../../images/gateway/src/usage/usageLedger";
import { StoreKeys } from "../../images/gateway/src/store/sharedStore";
import { windowOf } from "../../images/gateway/src/admission/windowRule";
import { sleep } from "../lib/net";
import { FAIR, POD_TEAMS, SHARED_PREFIX, connectTestStore } from "./globalSetup";

const h = inject("gateway");
/** A test that needs the FT stand-in (its echo, step time, hold file or FT-only refusals): skipped in vLLM mode. */
const itOnFt = it.skipIf(h.upstream === "vllm");
const MODEL = h.model.id;
const pods = [h.podA, h.podB];

function post(base: string, key: string, body: unknown): Promise<Response> {
  return fetch(`${base}/v1/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

interface Completion {
  choices: { text: string }[];
  usage: { prompt_tokens: number; completion_tokens: number };
  error?: { code: string; message: string };
}

/**
 * The text the model generates first for `prompt`, greedily: a stop sequence that cuts a request short at
 * once. The stand-in echoes the prompt, so its first word; vLLM's is asked for (through `main`, whose
 * store prefix is its own, so no pod team's window sees the request).
 */
async function firstGeneratedText(prompt: string): Promise<string> {
  if (h.upstream === "ft") return prompt.split(" ")[0];
  const r = await post(h.main.url, h.main.keys["team-a"], { model: MODEL, prompt, max_tokens: 1, temperature: 0 });
  const text = ((await r.json()) as Completion).choices[0]?.text ?? "";
  if (text.trim() === "") throw new Error(`the first greedy token of ${JSON.stringify(prompt)} has no text to stop at`);
  return text;
}

/** Sum of a metric's samples whose labels include `labels`. */
async function metric(metricsUrl: string, name: string, labels: Record<string, string> = {}): Promise<number> {
  const text = await (await fetch(`${metricsUrl}/metrics`)).text();
  let total = 0;
  for (const line of text.split("\n")) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) total += Number(line.split(" ").pop());
  }
  return total;
}

async function until(what: string, check: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

describe("limits shared by two gateway pods through the store", () => {
  it("both pods count each other in the store", async () => {
    for (const pod of pods) {
      await until("two pods counted", async () => (await metric(pod.metricsUrl, METRICS.storePods)) === 2);
      expect(await metric(pod.metricsUrl, METRICS.storeDegraded)).toBe(0);
    }
  });

  it("admits exactly 6 of a team's requests per minute across both pods; the 429s say when the window ends", async () => {
    const key = h.podA.keys[POD_TEAMS.sixPerMinute.name];
    const statuses: number[] = [];
    const retryAfter: Array<{ seconds: number; left: number }> = [];
    // Windows are the clock's minutes: start with time to spare, so all twelve fall in one window.
    if (60_000 - (Date.now() % 60_000) < 15_000) await sleep(60_000 - (Date.now() % 60_000) + 100);
    for (let i = 0; i < 12; i++) {
      const r = await post(pods[i % 2].url, key, { model: MODEL, prompt: "hi", max_tokens: 1, temperature: 0 });
      statuses.push(r.status);
      const body = (await r.json()) as Completion;
      if (r.status === 429) {
        expect(body.error?.code).toBe("rate_limit_exceeded");
        retryAfter.push({ seconds: Number(r.headers.get("retry-after")), left: 60 - (Date.now() % 60_000) / 1000 });
      }
    }
    expect(statuses.filter((s) => s === 200)).toHaveLength(POD_TEAMS.sixPerMinute.requestsPerMinute);
    expect(statuses.slice(0, 6).every((s) => s === 200)).toBe(true);
    expect(statuses.slice(6).every((s) => s === 429)).toBe(true);
    // What is left of the clock's minute, in whole seconds (up to a second of travel either side).
    for (const { seconds, left } of retryAfter) {
      expect(seconds).toBeGreaterThanOrEqual(Math.floor(left) - 1);
      expect(seconds).toBeLessThanOrEqual(Math.ceil(left) + 1);
    }
  });

  it("admits a team's tokens per minute across both pods: reserved at admission, settled with the real usage", async () => {
    const limit = POD_TEAMS.tokens.tokensPerMinute;
    const key = h.podA.keys[POD_TEAMS.tokens.name];
    const body = { model: MODEL, prompt: "hi", max_tokens: 20, temperature: 0 };
    const reserve = reserveTokens([body.prompt], body.max_tokens, 1, h.model.maxInputLen);
    let used = 0;
    const admitted: boolean[] = [];
    for (let i = 0; i < 6; i++) {
      // What the store holds before this request: every earlier request settled to its real usage.
      const expected = used + reserve <= limit;
      const r = await post(pods[i % 2].url, key, body);
      const json = (await r.json()) as Completion;
      admitted.push(r.status === 200);
      expect(r.status, `request ${i}: ${used} used + ${reserve} reserved vs ${limit}`).toBe(expected ? 200 : 429);
      if (r.status === 200) used += json.usage.prompt_tokens + json.usage.completion_tokens;
      else {
        expect(json.error?.message).toContain(`token limit of ${limit} tokens per minute`);
        expect(Number(r.headers.get("retry-after"))).toBeGreaterThan(0);
      }
      await sleep(100); // the settlement is written after the response
    }
    // 23 reserved each (3 bytes + 20), about 21 used: the fifth no longer fits under 100.
    expect(admitted.filter(Boolean).length).toBe(4);
    expect(admitted.slice(4).some(Boolean)).toBe(false);
  });

  it("gives back the unused reservation: a request cut short leaves room another pod admits", async () => {
    const limit = POD_TEAMS.settled.tokensPerMinute;
    const key = h.podA.keys[POD_TEAMS.settled.name];
    // The first generated word is a stop sequence: a few tokens used of 47 reserved.
    const prompt = "alpha beta gamma delta";
    const short = { model: MODEL, prompt, max_tokens: 24, temperature: 0, stop: [await firstGeneratedText(prompt)] };
    const r1 = await post(h.podA.url, key, short);
    expect(r1.status).toBe(200);
    const u1 = ((await r1.json()) as Completion).usage;
    const used1 = u1.prompt_tokens + u1.completion_tokens;
    const reserved1 = reserveTokens([short.prompt], short.max_tokens, 1, h.model.maxInputLen);
    await sleep(200);
    const next = { model: MODEL, prompt: "hi", max_tokens: 24, temperature: 0 };
    const reserved2 = reserveTokens([next.prompt], next.max_tokens, 1, h.model.maxInputLen);
    // Unsettled, the two reservations would not fit the limit together; settled to the real usage, they do.
    expect(reserved1 + reserved2).toBeGreaterThan(limit);
    expect(used1 + reserved2, JSON.stringify(u1)).toBeLessThanOrEqual(limit);
    const r2 = await post(h.podB.url, key, next);
    expect(r2.status, await r2.clone().text()).toBe(200);
  });

  // Holds the generations with the FT stand-in's hold file.
  itOnFt("holds a team's concurrency across both pods", async () => {
    const key = h.podA.keys[POD_TEAMS.twoAtOnce.name];
    const team = POD_TEAMS.twoAtOnce.name;
    writeFileSync(h.standinHoldFile, "");
    const long = { model: MODEL, prompt: "one two three", max_tokens: 8, temperature: 0 };
    // Both on pod A: pod B holds none of them, so only a count shared through the store refuses B's.
    const first = [post(h.podA.url, key, long), post(h.podA.url, key, long)];
    try {
      await until(
        "two generations in flight on pod A",
        async () => (await metric(h.podA.metricsUrl, METRICS.inflight, { consumer: team })) === 2,
      );
      expect(await metric(h.podB.metricsUrl, METRICS.inflight, { consumer: team })).toBe(0);
      for (const pod of [h.podB, h.podA]) {
        const third = await post(pod.url, key, long);
        expect(third.status).toBe(429);
        expect(((await third.json()) as Completion).error?.code).toBe("concurrency_limit_exceeded");
      }
    } finally {
      rmSync(h.standinHoldFile, { force: true });
    }
    for (const r of await Promise.all(first)) expect(r.status).toBe(200);
    await sleep(100); // the permits are returned after the responses
    const after = await post(h.podB.url, key, long);
    expect(after.status).toBe(200);
  });

  it("frees a finished request's slot before its response ends: back-to-back requests of a one-at-a-time team, on either pod", async () => {
    const key = h.podA.keys[POD_TEAMS.oneAtATime.name];
    const statuses: number[] = [];
    // A store that has forgotten its scripts (a restart, a failover) answers the first release with NOSCRIPT
    // and the client sends it again: two round trips, overtaken by the next request's checks.
    const admin = await connectTestStore(h.store, SHARED_PREFIX);
    await admin.script("FLUSH");
    admin.disconnect();
    for (const pod of [h.podA, h.podA, h.podB, h.podA, h.podB, h.podB, h.podA]) {
      const r = await post(pod.url, key, { model: MODEL, prompt: "next", max_tokens: 1, temperature: 0 });
      statuses.push(r.status);
      await r.text();
    }
    expect(statuses).toEqual([200, 200, 200, 200, 200, 200, 200]);
  });

  // Holds a generation with the FT stand-in's hold file, to look at the store while it runs.
  itOnFt(
    "admits a team's next request on the same pod on the spare its last one left: no take in the store",
    async () => {
      const team = POD_TEAMS.spare.name;
      const key = h.podA.keys[team];
      const admin = await connectTestStore(h.store, SHARED_PREFIX);
      const keys = new StoreKeys(SHARED_PREFIX);
      // The window must not turn during the test: start with time to spare in it.
      if (60_000 - (Date.now() % 60_000) < 10_000) await sleep(60_000 - (Date.now() % 60_000) + 100);
      const window = windowOf(Date.now());
      const state = async (): Promise<{ requests: number; permits: string[] }> => ({
        requests: Number((await admin.get(keys.window("rpm", team, window))) ?? 0),
        permits: await admin.zrange(keys.permits(team), "0", "-1"),
      });
      try {
        const first = await post(h.podA.url, key, { model: MODEL, prompt: "first", max_tokens: 1, temperature: 0 });
        expect(first.status).toBe(200);
        // Released, and one admission taken ahead in the same round trip: counted like a request.
        const spare = await state();
        expect(spare.requests).toBe(2);
        expect(spare.permits).toHaveLength(1);
        writeFileSync(h.standinHoldFile, "");
        // The same size as the first: its reservation fits the spare's (a larger one would ask the store).
        const second = post(h.podA.url, key, { model: MODEL, prompt: "again", max_tokens: 1, temperature: 0 });
        try {
          await until(
            "the second request in flight on pod A",
            async () => (await metric(h.podA.metricsUrl, METRICS.inflight, { consumer: team })) === 1,
          );
          // Running on the spare: its permit, its count; nothing taken in the store for it.
          expect(await state()).toEqual(spare);
        } finally {
          rmSync(h.standinHoldFile, { force: true });
        }
        expect((await second).status).toBe(200);
        // The spare the second one left goes back whole when no request comes within a second.
        await until("the unused spare given back", async () => (await state()).permits.length === 0, 5_000);
        expect((await state()).requests).toBe(2);
      } finally {
        admin.disconnect();
      }
    },
  );

  it("answers GET /v1/usage with the team's usage from every pod, the same on both", async () => {
    const key = h.podA.keys[POD_TEAMS.usage.name];
    let prompt = 0;
    let completion = 0;
    for (const [pod, maxTokens] of [
      [h.podA, 3],
      [h.podA, 2],
      [h.podB, 4],
    ] as const) {
      const r = await post(pod.url, key, { model: MODEL, prompt: "count my usage", max_tokens: maxTokens });
      expect(r.status).toBe(200);
      const u = ((await r.json()) as Completion).usage;
      prompt += u.prompt_tokens;
      completion += u.completion_tokens;
    }
    await sleep(200);
    const reports = await Promise.all(
      pods.map(async (pod) => {
        const r = await fetch(`${pod.url}/v1/usage`, { headers: { authorization: `Bearer ${key}` } });
        expect(r.status).toBe(200);
        return (await r.json()) as UsageReport;
      }),
    );
    const counts = {
      requests: 3,
      prompt_tokens: prompt,
      completion_tokens: completion,
      total_tokens: prompt + completion,
    };
    for (const report of reports) {
      expect(report.scope).toBe("cluster");
      expect(report.team).toBe(POD_TEAMS.usage.name);
      expect(report.today.total).toEqual(counts);
      expect(report.today.models).toEqual([{ model: MODEL, ...counts }]);
      expect(report.month.total).toEqual(counts);
    }
    expect(reports[0]).toEqual(reports[1]);
  });
});

describe("fair shares with the store", () => {
  // Holds the generations with the FT stand-in's hold file.
  itOnFt("four teams saturating the gateway do not keep an idle fifth team out", async () => {
    const keys = h.fair.keys;
    const busy = FAIR.teams.filter((t) => t !== "idle");
    const long = { model: MODEL, prompt: "one two three", max_tokens: 4, temperature: 0, stream: true };
    writeFileSync(h.standinHoldFile, "");
    const pending: Promise<Response>[] = [];
    let refused = 0;
    try {
      for (const team of busy) {
        for (let i = 0; i < 4; i++) {
          const p = post(h.fair.url, keys[team], long);
          pending.push(p);
          void p.then((r) => {
            if (r.status === 503) refused += 1;
          });
        }
      }
      // Every busy request is either in flight (held by the stand-in) or refused.
      await until("the busy teams' requests admitted or refused", async () => {
        const inflight = await metric(h.fair.metricsUrl, METRICS.inflight);
        return inflight + refused === busy.length * 4;
      });
      expect(refused).toBeGreaterThan(0);
      expect(await metric(h.fair.metricsUrl, METRICS.inflight)).toBeGreaterThanOrEqual(FAIR.maxInflight);
      // The idle team's fair share (cap 10 over five teams: 2) is admitted although the gateway is full...
      const idle = [post(h.fair.url, keys.idle, long), post(h.fair.url, keys.idle, long)];
      pending.push(...idle);
      await until(
        "the idle team's two requests in flight",
        async () => (await metric(h.fair.metricsUrl, METRICS.inflight, { consumer: "idle" })) === 2,
      );
      // ...and no more than that.
      const third = await post(h.fair.url, keys.idle, long);
      expect(third.status).toBe(503);
      expect(((await third.json()) as Completion).error?.code).toBe("overloaded");
    } finally {
      rmSync(h.standinHoldFile, { force: true });
    }
    const statuses = await Promise.all(
      pending.map(async (p) => {
        const r = await p;
        await r.text();
        return r.status;
      }),
    );
    expect(statuses.every((s) => s === 200 || s === 503)).toBe(true);
    expect(statuses.slice(-2)).toEqual([200, 200]);
  });
});
