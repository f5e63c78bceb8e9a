/**
 * API keys on every path but the probes, checked in onRequest: before the
 * body is read, and on unmatched paths too (a 404 would tell a stranger which
 * paths exist).
 */
import type { KeyRing } from "./keyRing";
import type { Consumer } from "../config";
import { unauthorized } from "../server/apiError";
import { PUBLIC_PATHS, pathOf } from "../server/paths";
import definePlugin from "fastify-plugin";

declare module "fastify" {
  interface FastifyRequest {
    /** Who sent the request; undefined on the probes and before authentication. */
    consumer: Consumer | undefined;
  }
}

export const AUTH_PLUGIN = "gateway-auth";

export interface AuthOptions {
  keys: KeyRing;
}

/** Shared with the parent (skip-override): `request.consumer` and the hook must reach every route. */
export const auth = definePlugin<AuthOptions>(
  async (app, { keys }) => {
    app.decorateRequest("consumer", undefined);
    app.addHook("onRequest", (request, _reply, done) => {
      if (PUBLIC_PATHS.has(pathOf(request.url))) {
        done();
        return;
      }
      const consumer = keys.authenticate(request.headers.authorization);
      if (!consumer) {
        done(
          unauthorized(
            request.headers.authorization === undefined
              ? "missing API key: send 'Authorization: Bearer <key>'"
              : "invalid API key",
          ),
        );
        return;
      }
      request.consumer = consumer;
      done();
    });
  },
  { name: AUTH_PLUGIN, fastify: "5.x" },
);
