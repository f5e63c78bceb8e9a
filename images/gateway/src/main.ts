/**
 * Entry point: `node dist/main.js`.
 *
 * Environment:
 *   GATEWAY_CONFIG      path of the JSON config (required)
 *   GATEWAY_KEYS_FILE   path of the consumers' hashed keys (required); re-read
 *                       when it changes, so a rotated Secret takes effect
 *                       without a restart
 *   GATEWAY_READY_FILE  optional: written with {"url", "metricsUrl"} once both
 *                       listeners are up (tests and the bench use it)
 *   PORT, METRICS_PORT  optional overrides of listen.port / listen.metricsPort
 *   the variable store.passwordEnv names (GATEWAY_STORE_PASSWORD by default)
 *                       the shared store's password, required when the
 *                       config has a `store`
 * SIGTERM/SIGINT stop accepting connections and let in-flight requests finish.
 */
import { renameSync, unwatchFile, watchFile, writeFileSync } from "node:fs";
import { KeyRing } from "./auth/keyRing";
import { buildGateway, buildMetricsServer } from "./app";
import { type KeysFile, loadConfig, loadKeys } from "./config";
import { GatewayMetrics } from "./telemetry/metrics";
import { type StoreClient, connectStore } from "./store/connection";
import { TritonGateway } from "./triton/tritonClient";

function required(name: string): string {
  const value = process.env[name];
  if (!value) {
    process.stderr.write(`gateway: ${name} is not set\n`);
    process.exit(2);
  }
  return value;
}

function port(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0 || n > 65535) {
    process.stderr.write(`gateway: ${name}=${raw} is not a port\n`);
    process.exit(2);
  }
  return n;
}

async function main(): Promise<void> {
  const configFile = required("GATEWAY_CONFIG");
  const keysFile = required("GATEWAY_KEYS_FILE");
  let config;
  let keys;
  let keysFileContent: KeysFile;
  try {
    config = loadConfig(configFile);
    keysFileContent = loadKeys(keysFile);
    keys = new KeyRing(keysFileContent);
  } catch (error) {
    process.stderr.write(`gateway: ${(error as Error).message}\n`);
    process.exit(2);
  }
  let storeClient: StoreClient | undefined;
  if (config.store) {
    const password = process.env[config.store.passwordEnv];
    if (!password) {
      // Secure by default: an unauthenticated store would let anything in the network rewrite the limits.
      process.stderr.write(`gateway: the config has a store but ${config.store.passwordEnv} is empty\n`);
      process.exit(2);
    }
    storeClient = connectStore(config.store, password);
  }
  // One channel per model: each model has its own Triton (Service), reconnecting on its own.
  const tritons = new Map(config.models.map((m) => [m.id, new TritonGateway(m.triton.grpc, m.triton.ensemble)]));
  // A canary has its own Triton (Service): its own channel too.
  const canaryTritons = new Map(
    config.models.flatMap((m) =>
      m.canary ? [[m.id, new TritonGateway(m.canary.triton.grpc, m.canary.triton.ensemble)] as const] : [],
    ),
  );
  const metrics = new GatewayMetrics();
  const app = buildGateway({
    config,
    keys,
    tritons,
    canaryTritons,
    metrics,
    ...(storeClient ? { storeClient } : {}),
  });
  const metricsApp = buildMetricsServer(metrics);

  const served = config.models.map((m) => m.id);
  // A scope naming a model this gateway does not serve is a config slip (the stack validates it):
  // the key still works for its other models, so it is said, not refused.
  const warnScopes = (file: KeysFile): void => {
    const unknown = file.consumers.flatMap((c) =>
      (c.models ?? []).filter((id) => !served.includes(id)).map((id) => `${c.name}: ${id}`),
    );
    if (unknown.length > 0) app.log.warn({ unknown, served }, "keys file scopes consumers to models not served here");
  };
  const keyRing = keys;
  warnScopes(keysFileContent);
  watchFile(keysFile, { interval: 10_000 }, () => {
    try {
      const file = loadKeys(keysFile);
      keyRing.replace(file);
      warnScopes(file);
      app.log.info({ keys: keyRing.size }, "keys reloaded");
    } catch (error) {
      // Keep serving with the keys we have: a half-written Secret must not lock everyone out.
      app.log.error({ error: (error as Error).message }, "keys file unreadable; keeping the previous keys");
    }
  });

  const url = await app.listen({ host: config.listen.host, port: port("PORT", config.listen.port) });
  const metricsUrl = await metricsApp.listen({
    host: config.listen.host,
    port: port("METRICS_PORT", config.listen.metricsPort),
  });
  app.log.info(
    {
      url,
      metricsUrl,
      models: config.models.map((m) => ({
        id: m.id,
        triton: m.triton.grpc,
        ...(m.canary ? { canary: { id: m.canary.id, weight: m.canary.weight, triton: m.canary.triton.grpc } } : {}),
      })),
      keys: keys.size,
      store: config.store ? `${config.store.host}:${config.store.port}` : "none (per-pod limits)",
    },
    "gateway listening",
  );
  const readyFile = process.env.GATEWAY_READY_FILE;
  if (readyFile) {
    // Written whole, then renamed: a reader polling for the file never sees it half-written.
    writeFileSync(`${readyFile}.tmp`, JSON.stringify({ url, metricsUrl, pid: process.pid }));
    renameSync(`${readyFile}.tmp`, readyFile);
  }

  let stopping = false;
  const stop = async (signal: string): Promise<void> => {
    if (stopping) return;
    stopping = true;
    app.log.info({ signal }, "draining");
    unwatchFile(keysFile);
    await app.close();
    await metricsApp.close();
    for (const triton of tritons.values()) triton.close();
    for (const triton of canaryTritons.values()) triton.close();
    process.exit(0);
  };
  process.on("SIGTERM", () => void stop("SIGTERM"));
  process.on("SIGINT", () => void stop("SIGINT"));
}

void main();
