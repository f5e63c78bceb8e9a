/**
 * GET /v1/usage: the calling team's own usage, today and this month (UTC),
 * per model and in total. The team is the key's: there is no parameter to
 * ask for another team's. From the store (scope `cluster`), or from this
 * pod's memory without one or while it is unreachable (scope `pod`).
 */
import type { Consumer } from "../config";
import definePlugin from "fastify-plugin";
import { STORE_PLUGIN } from "../store/storePlugin";

export const usageRoutes = definePlugin(
  async (app) => {
    app.get("/v1/usage", async (request) => app.usage.report((request.consumer as Consumer).name));
  },
  {
    name: "gateway-usage-routes",
    fastify: "5.x",
    encapsulate: true,
    dependencies: [STORE_PLUGIN],
    decorators: { fastify: ["usage"], request: ["consumer"] },
  },
);
