/**
 * The gateway's config file (images/gateway/src/config.ts reads it), derived
 * from the same numbers as the model repository, so the edge and the
 * preprocessing model apply one set of limits. Pure: no Pulumi.
 */
import type { ChatTemplate } from "../model/catalog";
import { ENSEMBLE_MODEL, maxPromptBytes } from "./modelRepository";

export interface GatewayModel {
  id: string;
  maxInputLen: number;
  maxOutputLen: number;
  maxBatchSize: number;
  vocab: number;
  /** n (or best_of) × max_tokens per prompt; the gateway defaults it to maxOutputLen × maxBatchSize. */
  maxChoiceTokens?: number;
  chatTemplate?: ChatTemplate;
}

export interface GatewayLimits {
  bodyBytes: number;
  requestsPerMinute: number;
  maxConcurrent: number;
  maxInflight: number;
  requestTimeoutSeconds: number;
  maxStop: number;
  maxStopBytes: number;
}

/** The gateway's shared store (StoreConfigSchema in the gateway package, images/gateway/src/store/config.ts). */
export interface GatewayStoreConfig {
  host: string;
  port: number;
  mode: "standalone" | "cluster";
  tls: boolean;
  caFile?: string;
  keyPrefix: string;
  username: string;
  /** The environment variable that carries the password (from a Secret): never the password itself. */
  passwordEnv: string;
  assumedPods: number;
  commandTimeoutMs?: number;
}

/** The JSON the gateway loads (GATEWAY_CONFIG); the schema is GatewayConfigSchema in the gateway package. */
export interface GatewayConfigFile {
  model: GatewayModel & { created: number; maxPromptBytes: number };
  triton: { grpc: string; ensemble: string };
  limits: GatewayLimits;
  listen: { host: string; port: number; metricsPort: number };
  logText: boolean;
  store?: GatewayStoreConfig;
}

export const GATEWAY_PORTS = { http: 8080, metrics: 9090 } as const;

/**
 * Default limits. The body cap leaves room for the largest prompt (maxPromptBytes)
 * with JSON escaping (up to 6 bytes per byte for \uXXXX) plus the other fields.
 */
export function defaultLimits(model: GatewayModel, maxBatchSize = model.maxBatchSize): GatewayLimits {
  const prompt = maxPromptBytes(model.maxInputLen);
  return {
    bodyBytes: Math.max(65_536, 6 * prompt * maxBatchSize + 65_536),
    requestsPerMinute: 600,
    maxConcurrent: Math.max(2, maxBatchSize),
    // Two batches per Triton replica queued at most: more only lengthens everyone's wait.
    maxInflight: 4 * maxBatchSize,
    requestTimeoutSeconds: 300,
    maxStop: 4,
    maxStopBytes: 256,
  };
}

export function renderGatewayConfig(
  model: GatewayModel,
  tritonGrpc: string,
  overrides: Partial<GatewayLimits> = {},
  created = 0,
): GatewayConfigFile {
  return {
    model: { ...model, created, maxPromptBytes: maxPromptBytes(model.maxInputLen) },
    triton: { grpc: tritonGrpc, ensemble: ENSEMBLE_MODEL },
    limits: { ...defaultLimits(model), ...overrides },
    listen: { host: "0.0.0.0", port: GATEWAY_PORTS.http, metricsPort: GATEWAY_PORTS.metrics },
    logText: false,
  };
}

/** A team's own limits as the gateway's keys file carries them (unset: the gateway's defaults). */
export interface TeamLimitsFile {
  requestsPerMinute?: number;
  tokensPerMinute?: number;
  maxConcurrent?: number;
  share?: number;
}

/**
 * The gateway's keys file (GATEWAY_KEYS_FILE; KeysFileSchema in the gateway
 * package): one consumer per team with the SHA-256 of each of its entries'
 * keys (`team:v2` is a second key of `team`), and the team's own limits when
 * it sets any. A team without own limits is `{name, keySha256}` only.
 */
export function renderKeysFile(
  keys: readonly { entry: string; keySha256: string }[],
  teams: Readonly<Record<string, TeamLimitsFile>> = {},
): string {
  const byTeam = new Map<string, string[]>();
  for (const k of keys) {
    const team = k.entry.split(":")[0] ?? k.entry;
    byTeam.set(team, [...(byTeam.get(team) ?? []), k.keySha256]);
  }
  return JSON.stringify({
    consumers: [...byTeam].map(([name, keySha256]) => ({ name, keySha256, ...teams[name] })),
  });
}
