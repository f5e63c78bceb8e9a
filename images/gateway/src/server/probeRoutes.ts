/** The kubelet's and the load balancer's probes, served without a key (paths.ts). */
import type { ServedModel } from "../models/modelRouter";
import definePlugin from "fastify-plugin";
import { MODELS_PLUGIN } from "../models/modelsPlugin";

/** How long a readiness answer is reused: probes from every node must not each cost a Triton call per model. */
const READY_CACHE_MS = 1000;

async function ready(model: ServedModel): Promise<boolean> {
  // A model that may sleep is served asleep too (its requests are held while it wakes): the pod must stay
  // in the load balancer, or nothing would ever wake it. Its watch logs its own changes.
  if (model.readiness) return true;
  try {
    return await model.triton.ready(2000);
  } catch {
    return false;
  }
}

/**
 * /readyz is ready while at least one model's Triton is, or any model may sleep: one model down must
 * not take the pod out of the load balancer for the teams of the others (a
 * request for the down model gets 503 upstream_unavailable with Retry-After).
 * The answer names no model: the probes need no key, and the models a key
 * may use are not for strangers. Which model is down is logged when it changes.
 */
export const probeRoutes = definePlugin(
  async (app) => {
    app.get("/healthz", async () => ({ status: "ok" }));
    let readyCache: { at: number; ok: boolean } | undefined;
    const last = new Map<string, boolean>();
    app.get("/readyz", async (request, reply) => {
      const now = Date.now();
      if (!readyCache || now - readyCache.at > READY_CACHE_MS) {
        const models = app.models.all;
        const answers = await Promise.all(models.map(ready));
        models.forEach((m, i) => {
          if (m.readiness || last.get(m.config.id) === answers[i]) return;
          last.set(m.config.id, answers[i]);
          const line = { model: m.config.id, ready: answers[i] };
          if (answers[i]) request.log.info(line, "model ready");
          else request.log.warn(line, "model not ready: its requests get 503 upstream_unavailable");
        });
        readyCache = { at: now, ok: answers.includes(true) };
      }
      return reply.code(readyCache.ok ? 200 : 503).send({ status: readyCache.ok ? "ready" : "triton not ready" });
    });
  },
  { name: "gateway-probe-routes", fastify: "5.x", encapsulate: true, dependencies: [MODELS_PLUGIN] },
);
