/**
 * The shared store's own cost per request, without HTTP or Triton around it:
 * the gateway's admission (requests/minute, tokens/minute and a concurrency
 * permit: one script in the store, one round trip) against a real
 * Valkey/Redis, timed call by call, next to the same rule on the pod's own
 * memory. The bench (`--local --store`) reports both.
 */
import Fastify from "fastify";
import { Admission } from "../../images/gateway/src/admission/podAdmission";
import { StoreConfigSchema } from "../../images/gateway/src/store/storeConfig";
import { connectStore } from "../../images/gateway/src/store/connection";
import { LocalLimits, SharedLimits, type TeamLimiter } from "../../images/gateway/src/admission/sharedLimits";
import { RedisAdmissionStore } from "../../images/gateway/src/admission/storeScripts";
import { SharedStore } from "../../images/gateway/src/store/sharedStore";
import type { StoreServerInfo } from "../../test/lib/storeServer";
import { percentile } from "./loadgen";

export interface AdmissionCost {
  samples: number;
  /** Milliseconds from admit() called to admitted, per request. */
  storeMs: { p50: number; p99: number };
  localMs: { p50: number; p99: number };
}

const LIMITS = { requestsPerMinute: 1_000_000_000, tokensPerMinute: 1_000_000_000, maxConcurrent: 1_000_000 };

async function time(limiter: TeamLimiter, samples: number): Promise<{ p50: number; p99: number }> {
  const ms: number[] = [];
  for (let i = 0; i < samples; i++) {
    const started = performance.now();
    const admitted = await limiter.admit("bench", LIMITS, 1, 120);
    ms.push(performance.now() - started);
    // Released as a response's end releases it: without waiting for the store.
    void admitted.release(80);
  }
  const r = (v: number): number => Math.round(v * 1000) / 1000;
  return { p50: r(percentile(ms, 50)), p99: r(percentile(ms, 99)) };
}

export async function measureAdmission(info: StoreServerInfo, samples = 2000): Promise<AdmissionCost> {
  const config = StoreConfigSchema.parse({
    host: info.host,
    port: info.port,
    tls: true,
    caFile: info.caFile,
    keyPrefix: "bench-admission:",
  });
  const log = Fastify({ logger: false }).log;
  const store = new SharedStore(connectStore(config, info.password), config, log);
  store.start();
  const deadline = Date.now() + 10_000;
  while (store.isDegraded) {
    if (Date.now() > deadline) throw new Error("the bench's store connection never became ready");
    await new Promise((r) => setTimeout(r, 20));
  }
  try {
    const shared = new SharedLimits(
      store,
      new RedisAdmissionStore(store.client, store.keys),
      new Admission(1_000_000),
      store.podId,
    );
    const local = new LocalLimits(new Admission(1_000_000));
    await time(shared, 200); // warm-up: connection, scripts loaded
    await time(local, 200);
    return { samples, storeMs: await time(shared, samples), localMs: await time(local, samples) };
  } finally {
    await store.stop();
  }
}
