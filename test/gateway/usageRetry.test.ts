/**
 * A usage write whose answer is lost after the store applied it (a command
 * timeout, a dropped connection) is sent again when the store answers, and
 * counts once: the ledger numbers each team's batch and the store's script
 * applies a number once per pod (usage/usageLedger.ts APPLY_LUA), on a real
 * Valkey/Redis. Without it the retry counted the requests twice (the gateway
 * suite's store outage test saw 4 requests for 3 under load).
 */
import { mkdtempSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { FastifyBaseLogger } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { StoreClient } from "../../images/gateway/src/store/connection";
import { SharedStore } from "../../images/gateway/src/store/sharedStore";
import { UsageLedger } from "../../images/gateway/src/usage/usageLedger";
import { StoreServer } from "../lib/storeServer";
import { connectTestStore, testStoreConfig } from "./globalSetup";

const work = mkdtempSync(path.join(os.tmpdir(), "triton-ft-usage-retry-"));
const server = new StoreServer(path.join(work, "store"));
let client: StoreClient;
let store: SharedStore;

const silent: FastifyBaseLogger = {
  level: "silent",
  fatal: () => undefined,
  error: () => undefined,
  warn: () => undefined,
  info: () => undefined,
  debug: () => undefined,
  trace: () => undefined,
  silent: () => undefined,
  child: () => silent,
};

/** The next `n` script calls reach the store and run there, then fail as a timed-out command does. */
let answersToLose = 0;

beforeAll(async () => {
  const info = await server.start();
  const config = testStoreConfig(info, "retry:");
  client = await connectTestStore(info, config.keyPrefix);
  // The store runs the script (EVALSHA, or EVAL the first time); only its answer is lost on the way back.
  for (const name of ["evalsha", "eval"] as const) {
    const real = client[name].bind(client) as (...args: Array<string | number>) => Promise<unknown>;
    Object.assign(client, {
      [name]: async (...args: Array<string | number>) => {
        const reply = await real(...args);
        if (answersToLose > 0) {
          answersToLose -= 1;
          throw new Error("Command timed out");
        }
        return reply;
      },
    });
  }
  store = new SharedStore(client, config, silent);
  store.start();
  await until(() => !store.isDegraded);
}, 60_000);

afterAll(async () => {
  await store?.stop();
  client?.disconnect();
  await server.stop();
});

async function until(ok: () => boolean, timeoutMs = 15_000): Promise<void> {
  const start = Date.now();
  while (!ok()) {
    if (Date.now() - start > timeoutMs) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe("a usage write whose answer was lost", () => {
  it("is applied once when sent again, and the report counts it once before and after", async () => {
    const ledger = new UsageLedger(store);
    answersToLose = 1;
    ledger.record("team-r", "m", 5, 7);
    ledger.record("team-r", "m", 3, 4);
    // The batch reached the store, its answer did not: the pod counts the store lost until a heartbeat.
    await until(() => store.isDegraded);
    // Degraded: the pod answers for itself.
    expect((await ledger.report("team-r")).today.total.requests).toBe(2);
    // The next heartbeat finds the store, the ledger sends the same batch again.
    await until(() => !store.isDegraded);
    await ledger.flush();
    let report = await ledger.report("team-r");
    expect(report.scope).toBe("cluster");
    expect([report.today.total.requests, report.today.total.total_tokens]).toEqual([2, 19]);
    expect([report.month.total.requests, report.month.total.total_tokens]).toEqual([2, 19]);
    // Later batches still count.
    ledger.record("team-r", "m", 1, 1);
    await ledger.flush();
    report = await ledger.report("team-r");
    expect([report.today.total.requests, report.today.total.total_tokens]).toEqual([3, 21]);
  }, 60_000);
});
