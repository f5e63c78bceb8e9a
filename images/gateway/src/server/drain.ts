/**
 * While the gateway drains (SIGTERM: main.ts calls app.close()), requests
 * still arriving on open keep-alive connections are refused in the gateway's
 * own shape: 503 `server_shutting_down` with Retry-After and
 * `Connection: close`, so the client retries on another pod. Fastify's
 * built-in `return503OnClosing` would send its own body without Retry-After;
 * app.ts turns it off for this. In-flight requests are not touched.
 */
import { shuttingDown } from "./apiError";
import definePlugin from "fastify-plugin";
import { ERRORS_PLUGIN } from "./errorHandler";
import { TELEMETRY_PLUGIN } from "../telemetry/telemetryPlugin";

export const drain = definePlugin(
  async (app) => {
    let draining = false;
    app.addHook("preClose", async () => {
      draining = true;
    });
    // After telemetry's onRequest (request id), before auth's: a draining pod needs no key to refuse.
    app.addHook("onRequest", (_request, reply, done) => {
      if (!draining) {
        done();
        return;
      }
      reply.header("connection", "close");
      done(shuttingDown());
    });
  },
  { name: "gateway-drain", fastify: "5.x", dependencies: [ERRORS_PLUGIN, TELEMETRY_PLUGIN] },
);
