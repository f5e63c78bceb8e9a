/**
 * The gateway's shared store as the plan describes it: which kind, what it is
 * called in the cluster, and the `store` section of the gateway's config
 * (images/gateway/src/store/storeConfig.ts). Pure: the managed cache's endpoint is
 * known only after it is created, so its config carries MANAGED_HOST_PLACEHOLDER
 * until the GatewayService component renders the real one.
 */
import { DEFAULT_STORE_STORAGE_GIB, storeMode } from "../config/store";
import type { ResolvedStack } from "../config/stack";

import {
  MANAGED_HOST_PLACEHOLDER,
  MANAGED_USER,
  STORE_CA_DIR,
  STORE_CA_FILE,
  STORE_COMMAND_TIMEOUT_MS,
  STORE_PASSWORD_ENV,
  STORE_PORT,
} from "../conventions/store";
import type { StorePlan } from "./types";
import type { GatewayStoreConfig } from "./types";
export type { StorePlan };

/**
 * The store of the stack, or undefined with serving.store.mode none (limits and usage per gateway pod).
 * `assumedPods`: gateway pods a pod assumes before it has counted any (it started while the store was
 * unreachable): the most there can be (plan/gateway.ts), so per-pod limits never add up to more than a
 * team's limit.
 */
export function storePlan(stack: ResolvedStack, workload: string, assumedPods: number): StorePlan | undefined {
  const mode = storeMode(stack.config);
  if (mode === "none") return undefined;
  const s = stack.config.serving;
  const name = `${workload}-store`;
  const common = {
    port: STORE_PORT,
    keyPrefix: "triton-ft:",
    passwordEnv: STORE_PASSWORD_ENV,
    assumedPods,
    commandTimeoutMs: STORE_COMMAND_TIMEOUT_MS,
  };
  const gateway: GatewayStoreConfig =
    mode === "managed"
      ? // ElastiCache Serverless speaks cluster mode only, TLS always on; AUTH as the stack's ElastiCache user.
        { ...common, host: MANAGED_HOST_PLACEHOLDER, mode: "cluster", tls: true, username: MANAGED_USER }
      : {
          ...common,
          host: `${name}.${s.namespace}.svc.cluster.local`,
          mode: "standalone",
          tls: true,
          caFile: `${STORE_CA_DIR}/${STORE_CA_FILE}`,
          username: "default",
        };
  return {
    mode,
    name,
    namespace: s.namespace,
    passwordSecret: `${name}-auth`,
    tlsSecret: `${name}-tls`,
    caConfigMap: `${name}-ca`,
    ...(mode === "managed" && stack.config.network.mode === "create"
      ? { egressCidr: stack.config.network.vpcCidr }
      : {}),
    storageGiB: s.store.storageGiB ?? DEFAULT_STORE_STORAGE_GIB,
    ...(s.store.storageClassName ? { storageClassName: s.store.storageClassName } : {}),
    gateway,
  };
}
