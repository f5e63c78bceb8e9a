/**
 * The admission rule's two implementations agree: the shared store's
 * scripts (admission/storeScripts.ts, on a real Valkey/Redis) and the
 * in-memory rule (admission/windowRule.ts, what a pod runs alone and what
 * the limiter's unit suite stands on) are fed one seeded random sequence of
 * takes, releases, renewals and carries, with the clock moving across
 * windows and past leases, and must answer the same verdicts and counts at
 * every step.
 */
import { mkdtempSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RedisAdmissionStore } from "../../images/gateway/src/admission/storeScripts";
import {
  LEASE_TIMEOUT_MS,
  MemoryAdmissionStore,
  type TakeRequest,
  WINDOW_MS,
  windowOf,
} from "../../images/gateway/src/admission/windowRule";
import type { StoreClient } from "../../images/gateway/src/store/connection";
import { StoreKeys } from "../../images/gateway/src/store/sharedStore";
import { StoreServer } from "../lib/storeServer";
import { connectTestStore } from "./globalSetup";

const work = mkdtempSync(path.join(os.tmpdir(), "triton-ft-store-agreement-"));
const server = new StoreServer(path.join(work, "store"));
let client: StoreClient;

beforeAll(async () => {
  const info = await server.start();
  client = await connectTestStore(info, "agree:");
}, 60_000);

afterAll(async () => {
  client?.disconnect();
  await server.stop();
});

/** A small deterministic generator (mulberry32), so a failure replays. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe("the store's scripts and the in-memory rule", () => {
  it("answer every step of a random sequence alike", async () => {
    const redis = new RedisAdmissionStore(client, new StoreKeys("agree:"));
    const memory = new MemoryAdmissionStore();
    const rand = random(33);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)];
    const teams = ["a", "b"];
    let now = 29_000_000 * WINDOW_MS + 1000;
    const held: Array<{ team: string; window: number; permits: string[]; tokens: number }> = [];
    let n = 0;
    for (let step = 0; step < 400; step++) {
      const op = rand();
      const team = pick(teams);
      if (op < 0.5) {
        const slots = 1 + Math.floor(rand() * 2);
        const take: TakeRequest = {
          team,
          window: windowOf(now),
          now,
          requestsPerMinute: pick([3, 5, 20]),
          ...(rand() < 0.7 ? { tokensPerMinute: pick([50, 200]) } : {}),
          tokens: Math.floor(rand() * 60),
          maxConcurrent: pick([1, 2, 4]),
          permits: Array.from({ length: slots }, (_, i) => `p${++n}:${i}`),
          expiresAt: now + LEASE_TIMEOUT_MS,
        };
        const [fromStore, fromMemory] = [await redis.take(take), await memory.take(take)];
        expect(fromStore, `step ${step}: take ${JSON.stringify(take)}`).toEqual(fromMemory);
        if (fromMemory.admitted)
          held.push({ team, window: take.window, permits: [...take.permits], tokens: take.tokens });
      } else if (op < 0.75 && held.length > 0) {
        const [h] = held.splice(Math.floor(rand() * held.length), 1);
        const release = {
          team: h.team,
          window: h.window,
          permits: h.permits,
          refundTokens: Math.floor(rand() * (h.tokens + 5)),
          refundRequests: rand() < 0.2 ? 1 : 0,
        };
        await redis.release(release);
        await memory.release(release);
      } else if (op < 0.85 && held.length > 0) {
        const h = pick(held);
        await redis.renew(h.team, h.permits, now + LEASE_TIMEOUT_MS);
        await memory.renew(h.team, h.permits, now + LEASE_TIMEOUT_MS);
      } else if (op < 0.9) {
        const requests = { floor: Math.floor(rand() * 6), added: Math.floor(rand() * 3) };
        const tokens = { floor: Math.floor(rand() * 100), added: Math.floor(rand() * 30) };
        await redis.carry(team, windowOf(now), requests, tokens);
        await memory.carry(team, windowOf(now), requests, tokens);
      } else {
        // Time passes: sometimes past a lease, sometimes into the next window.
        now += pick([500, 4000, LEASE_TIMEOUT_MS, 25_000]);
      }
    }
    expect(n).toBeGreaterThan(100);
  }, 120_000);
});
