/** The kubelet's and the load balancer's probes, served without a key (paths.ts). */
import type { TritonClient } from "../triton";
import definePlugin from "fastify-plugin";

export interface ProbeRoutesOptions {
  triton: TritonClient;
}

/** How long a readiness answer is reused: probes from every node must not each cost a Triton call. */
const READY_CACHE_MS = 1000;

export const probeRoutes = definePlugin<ProbeRoutesOptions>(
  async (app, { triton }) => {
    app.get("/healthz", async () => ({ status: "ok" }));
    let readyCache: { at: number; ok: boolean } | undefined;
    app.get("/readyz", async (_request, reply) => {
      const now = Date.now();
      if (!readyCache || now - readyCache.at > READY_CACHE_MS) {
        let ok: boolean;
        try {
          ok = await triton.ready(2000);
        } catch {
          ok = false;
        }
        readyCache = { at: now, ok };
      }
      return reply.code(readyCache.ok ? 200 : 503).send({ status: readyCache.ok ? "ready" : "triton not ready" });
    });
  },
  { name: "gateway-probe-routes", fastify: "5.x", encapsulate: true },
);
