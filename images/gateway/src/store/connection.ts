/**
 * The client to the shared store: ioredis (it speaks to Valkey and Redis
 * alike, standalone or cluster mode), set up to fail fast rather than queue:
 * a request must never wait on an unreachable store, it falls back to
 * per-pod limits instead (admission/sharedLimits.ts). Reconnection is ioredis's own,
 * bounded so the store is used again within about a second of coming back.
 */
import { readFileSync } from "node:fs";
import { Cluster, Redis, type RedisOptions } from "ioredis";
import type { StoreConfig } from "./storeConfig";

export type StoreClient = Redis | Cluster;

/**
 * ioredis's reconnect delay after `attempt` failures: 100 ms more each time,
 * at most 500 ms, so every pod is back on the store within about a second of
 * its return (and has replayed its releases: a ghost permit of a pod still
 * reconnecting could refuse the others meanwhile).
 */
export function reconnectDelay(attempt: number): number {
  return Math.min(100 * attempt, 500);
}

export function connectStore(config: StoreConfig, password: string): StoreClient {
  const options: RedisOptions = {
    username: config.username,
    password,
    // Only when connected: with a queue, a request would wait for the reconnect instead of degrading.
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: config.commandTimeoutMs,
    connectTimeout: 2000,
    // No auto-pipelining: an admission is one script call, and batching would hold it for a setImmediate.
    enableAutoPipelining: false,
    retryStrategy: reconnectDelay,
    ...(config.tls
      ? { tls: { servername: config.host, ...(config.caFile ? { ca: readFileSync(config.caFile) } : {}) } }
      : {}),
  };
  if (config.mode === "standalone") return new Redis({ host: config.host, port: config.port, ...options });
  return new Cluster([{ host: config.host, port: config.port }], {
    redisOptions: options,
    enableOfflineQueue: false,
    enableAutoPipelining: false,
    clusterRetryStrategy: reconnectDelay,
    slotsRefreshTimeout: 2000,
    // ElastiCache's certificate names the endpoint, not the node addresses it resolves to: keep the name
    // (ioredis README, "Special note: AWS ElastiCache Clusters with TLS").
    dnsLookup: (address, callback) => callback(null, address),
  });
}
