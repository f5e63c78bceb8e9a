/**
 * Canaries' part of the app's lifecycle: for every model with a canary, its
 * monitor (canaryMonitor.ts: samples to the store, the shared decision, the
 * rule) from the moment the app is ready until it closes, the rolled-back
 * gauge (one series per canary from start-up, 0 then 1) and the rollbacks
 * counter. `request.servedBuild` is the build a generation was sent to, for
 * the telemetry's labels; the admission plugin picks it (`model.canary.pick()`).
 */
import definePlugin from "fastify-plugin";
import type { GatewayMetrics } from "../telemetry/metrics";
import { STORE_PLUGIN } from "../store/storePlugin";
import { MODELS_PLUGIN } from "../models/modelsPlugin";
import { CanaryMonitor } from "./canaryMonitor";
import { CanaryStore } from "./canaryStore";
import type { Build } from "./weightedSplit";

declare module "fastify" {
  interface FastifyRequest {
    /** The build a generation was sent to; undefined before admission picked one. */
    servedBuild: Build | undefined;
  }
}

export const CANARY_PLUGIN = "gateway-canary";

export interface CanaryOptions {
  metrics: GatewayMetrics;
}

/** Shared with the parent (skip-override): the telemetry and admission plugins read the request's build. */
export const canary = definePlugin<CanaryOptions>(
  async (app, { metrics }) => {
    app.decorateRequest("servedBuild", undefined);
    const monitors = app.models.withCanary.map((m) => {
      const id = m.config.id;
      const c = m.canary;
      const labels = { model: id, canary: c.config.id };
      metrics.canaryRolledBack.set(labels, 0);
      c.onRollback(() => metrics.canaryRolledBack.set(labels, 1));
      // A slot's samples are read for one window after the slot ends; a slot more of margin.
      const slotTtlMs = c.config.rollback.windowSeconds * 1000 + 2 * c.samples.slotMs;
      return new CanaryMonitor({
        model: id,
        route: c,
        ...(app.store ? { store: new CanaryStore(app.store, id, c.config.id, slotTtlMs) } : {}),
        log: app.log,
        onDecided: (d) => metrics.canaryRollbacks.inc({ ...labels, reason: d.reason }),
        ...(app.store ? { podId: app.store.podId } : {}),
      });
    });
    app.addHook("onReady", async () => {
      for (const m of monitors) m.start();
    });
    app.addHook("onClose", async () => {
      for (const m of monitors) m.stop();
    });
  },
  {
    name: CANARY_PLUGIN,
    fastify: "5.x",
    dependencies: [STORE_PLUGIN, MODELS_PLUGIN],
    decorators: { fastify: ["store", "models"] },
  },
);
