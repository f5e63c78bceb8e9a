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
  /** Unset: the gateway's own default (GatewayConfigSchema, images/gateway/src/config.ts), the one place it is written. */
  requestsPerMinute?: number;
  maxConcurrent: number;
  maxInflight: number;
  requestTimeoutSeconds: number;
  maxStop: number;
  maxStopBytes: number;
}

/** The gateway's shared store (StoreConfigSchema in the gateway package, images/gateway/src/store/storeConfig.ts). */
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

/** A served model and where it runs: its Triton's gRPC address and its in-flight cap. */
export interface GatewayRoute extends GatewayModel {
  /** host:port of the model's Triton gRPC Service. */
  tritonGrpc: string;
  /** Generations in flight to this model's Triton before the gateway answers 503 (its queue stays short). */
  maxInflight: number;
}

/** One entry of the config's `models` (ModelConfigSchema in the gateway package). */
export interface GatewayModelFile extends GatewayModel {
  created: number;
  maxPromptBytes: number;
  triton: { grpc: string; ensemble: string };
  maxInflight: number;
}

/** The JSON the gateway loads (GATEWAY_CONFIG); the schema is GatewayConfigSchema in the gateway package. */
export interface GatewayConfigFile {
  models: GatewayModelFile[];
  limits: GatewayLimits;
  listen: { host: string; port: number; metricsPort: number };
  logText: boolean;
  store?: GatewayStoreConfig;
}

export const GATEWAY_PORTS = { http: 8080, metrics: 9090 } as const;

/**
 * Default limits, for the largest of the models. The body cap leaves room for
 * the largest prompt (maxPromptBytes) with JSON escaping (up to 6 bytes per
 * byte for \uXXXX) plus the other fields, for a full batch. The gateway-wide
 * in-flight cap is the sum of the models' own: each model's Triton queues its share.
 */
export function defaultLimits(models: readonly GatewayRoute[]): GatewayLimits {
  const largest = (f: (m: GatewayRoute) => number): number => Math.max(...models.map(f));
  return {
    bodyBytes: Math.max(
      65_536,
      largest((m) => 6 * maxPromptBytes(m.maxInputLen) * m.maxBatchSize + 65_536),
    ),
    maxConcurrent: Math.max(
      2,
      largest((m) => m.maxBatchSize),
    ),
    maxInflight: models.reduce((sum, m) => sum + m.maxInflight, 0),
    requestTimeoutSeconds: 300,
    maxStop: 4,
    maxStopBytes: 256,
  };
}

/** The gateway's config for `models` (at least one), each routed by its id to its own Triton's ensemble. */
export function renderGatewayConfig(
  models: readonly GatewayRoute[],
  overrides: Partial<GatewayLimits> = {},
  created = 0,
): GatewayConfigFile {
  if (models.length === 0) throw new Error("renderGatewayConfig: the gateway needs at least one model");
  return {
    models: models.map(({ tritonGrpc, maxInflight, ...model }) => ({
      ...model,
      created,
      maxPromptBytes: maxPromptBytes(model.maxInputLen),
      triton: { grpc: tritonGrpc, ensemble: ENSEMBLE_MODEL },
      maxInflight,
    })),
    limits: { ...defaultLimits(models), ...overrides },
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
  /** The model ids the team may use; absent: every model. */
  models?: string[];
}

/**
 * The gateway's keys file (GATEWAY_KEYS_FILE; KeysFileSchema in the gateway
 * package): one consumer per team with the SHA-256 of each of its entries'
 * keys (`team:v2` is a second key of `team`), and the team's own limits when
 * it sets any, and the models it is scoped to. A team without own limits or
 * scope is `{name, keySha256}` only.
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
