/**
 * The gateway's config file (images/gateway/src/config.ts reads it), derived
 * from the same numbers as the model repository, so the edge and the
 * preprocessing model apply one set of limits. Pure: no Pulumi.
 */
import { ENSEMBLE_MODEL, GATEWAY_PORTS } from "../conventions/workload";
import { maxPromptBytes } from "./modelRepository";
import type { GatewayConfigFile, GatewayLimits, GatewayRoute } from "./types";

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
    // A canary's Triton queues its own share beside its model's.
    maxInflight: models.reduce((sum, m) => sum + m.maxInflight + (m.canary?.maxInflight ?? 0), 0),
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
