/**
 * The shared store's part of the app's lifecycle: `app.store` (the link, or
 * undefined without one) and `app.usage` (the usage ledger every admitted
 * generation is recorded in). Heartbeats start once the app is ready and stop
 * when it closes (the pod leaves the count at once); the store's state goes to
 * the `store_degraded` and `store_pods` gauges.
 */
import definePlugin from "fastify-plugin";
import type { GatewayMetrics } from "../telemetry/metrics";
import type { StoreConfig } from "./storeConfig";
import type { StoreClient } from "./connection";
import { SharedStore } from "./sharedStore";
import { UsageLedger } from "../usage/usageLedger";

declare module "fastify" {
  interface FastifyInstance {
    /** The shared store; undefined when the config has none (limits and usage per pod). */
    store: SharedStore | undefined;
    usage: UsageLedger;
  }
}

export const STORE_PLUGIN = "gateway-store";

export interface StoreOptions {
  /** The connected client and its config section; absent: no store. */
  connection?: { client: StoreClient; config: StoreConfig };
  metrics: GatewayMetrics;
}

/** Shared with the parent (skip-override): the limits plugin and the usage route use both decorators. */
export const store = definePlugin<StoreOptions>(
  async (app, { connection, metrics }) => {
    const store = connection ? new SharedStore(connection.client, connection.config, app.log) : undefined;
    app.decorate("store", store);
    app.decorate("usage", new UsageLedger(store));
    if (!store) return;
    const gauges = metrics.withStore();
    store.onState(({ degraded, pods }) => {
      gauges.degraded.set(degraded ? 1 : 0);
      gauges.pods.set(pods);
    });
    app.addHook("onReady", async () => store.start());
    // Last writes of usage before the connection goes (a drained pod has served its requests).
    app.addHook("onClose", async () => {
      await app.usage.flush();
      await store.stop();
    });
  },
  { name: STORE_PLUGIN, fastify: "5.x" },
);
