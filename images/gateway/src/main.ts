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
import { unwatchFile, watchFile, writeFileSync } from "node:fs";
import { KeyRing } from "./auth";
import { buildGateway, buildMetricsServer } from "./app";
import { loadConfig, loadKeys } from "./config";
import { GatewayMetrics } from "./metrics";
import { type StoreClient, connectStore } from "./store/connection";
import { TritonGateway } from "./triton";

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
  try {
    config = loadConfig(configFile);
    keys = new KeyRing(loadKeys(keysFile));
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
  const triton = new TritonGateway(config.triton.grpc, config.triton.ensemble);
  const metrics = new GatewayMetrics();
  const app = buildGateway({ config, keys, triton, metrics, ...(storeClient ? { storeClient } : {}) });
  const metricsApp = buildMetricsServer(metrics);

  const keyRing = keys;
  watchFile(keysFile, { interval: 10_000 }, () => {
    try {
      keyRing.replace(loadKeys(keysFile));
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
      model: config.model.id,
      triton: config.triton.grpc,
      keys: keys.size,
      store: config.store ? `${config.store.host}:${config.store.port}` : "none (per-pod limits)",
    },
    "gateway listening",
  );
  const readyFile = process.env.GATEWAY_READY_FILE;
  if (readyFile) writeFileSync(readyFile, JSON.stringify({ url, metricsUrl, pid: process.pid }));

  let stopping = false;
  const stop = async (signal: string): Promise<void> => {
    if (stopping) return;
    stopping = true;
    app.log.info({ signal }, "draining");
    unwatchFile(keysFile);
    await app.close();
    await metricsApp.close();
    triton.close();
    process.exit(0);
  };
  process.on("SIGTERM", () => void stop("SIGTERM"));
  process.on("SIGINT", () => void stop("SIGINT"));
}

void main();
