/**
 * The gateway's shared store as the plan describes it: which kind, what it is
 * called in the cluster, and the `store` section of the gateway's config
 * (images/gateway/src/store/config.ts). Pure: the managed cache's endpoint is
 * known only after it is created, so its config carries MANAGED_HOST_PLACEHOLDER
 * until the GatewayService component renders the real one.
 */
import { DEFAULT_STORE_STORAGE_GIB, storeMode } from "../config/store";
import type { ResolvedStack } from "../config/stack";
import type { GatewayStoreConfig } from "../render/gatewayConfig";
import { planGatewayScaling } from "./scaling";

/** Valkey's port, the same for ElastiCache and in the cluster. */
export const STORE_PORT = 6379;
/** The gateway reads the password from this variable (a secretKeyRef), never from its ConfigMap. */
export const STORE_PASSWORD_ENV = "GATEWAY_STORE_PASSWORD";
/** The key of the password in the store's Secret. */
export const STORE_PASSWORD_KEY = "password";
/** Where the in-cluster store's CA certificate is mounted in the gateway (its TLS is the stack's own CA). */
export const STORE_CA_DIR = "/etc/triton-ft-store-ca";
export const STORE_CA_FILE = "ca.crt";
/** Stands for the ElastiCache endpoint in rendered files until it exists (RFC 2606 `.invalid`: never resolves). */
export const MANAGED_HOST_PLACEHOLDER = "elasticache-endpoint.invalid";
/** The ElastiCache user the gateway authenticates as (ElastiCache user names: letters, digits, '-'). */
export const MANAGED_USER = "triton-ft-gateway";
/** A store call slower than this puts the gateway on per-pod limits until the store answers again. */
export const STORE_COMMAND_TIMEOUT_MS = 500;

export interface StorePlan {
  mode: "managed" | "inCluster";
  /** Name of the in-cluster Valkey's objects and of the password Secret: `<workload>-store`. */
  name: string;
  namespace: string;
  /** The Secret (in the namespace) with the AUTH password under STORE_PASSWORD_KEY. */
  passwordSecret: string;
  /** inCluster: the Secret with the server's TLS key and certificate, and the CA's certificate for the gateway. */
  tlsSecret: string;
  caConfigMap: string;
  /** managed: where the gateway may connect on STORE_PORT (the VPC's range; absent: any address, with an existing VPC whose range the plan does not know). */
  egressCidr?: string;
  /** inCluster: the volume of the append-only file. */
  storageGiB: number;
  storageClassName?: string;
  /** The gateway config's `store` section. */
  gateway: GatewayStoreConfig;
}

/**
 * Gateway pods a pod assumes before it has counted any (it started while the
 * store was unreachable): the most there can be, so per-pod limits never add
 * up to more than a team's limit.
 */
export function assumedGatewayPods(stack: ResolvedStack, maxInflight: number): number {
  const s = stack.config.serving;
  if (!s.autoscaling) return s.gatewayReplicas;
  return planGatewayScaling({
    replicas: s.gatewayReplicas,
    maxInflight,
    maxBatchSize: s.maxBatchSize,
    tritonMaxReplicas: s.autoscaling.max,
  }).maxReplicas;
}

/** The store of the stack, or undefined with serving.store.mode none (limits and usage per gateway pod). */
export function storePlan(stack: ResolvedStack, workload: string, maxInflight: number): StorePlan | undefined {
  const mode = storeMode(stack.config);
  if (mode === "none") return undefined;
  const s = stack.config.serving;
  const name = `${workload}-store`;
  const common = {
    port: STORE_PORT,
    keyPrefix: "triton-ft:",
    passwordEnv: STORE_PASSWORD_ENV,
    assumedPods: assumedGatewayPods(stack, maxInflight),
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
    ...(mode === "managed" && stack.config.network.mode === "create" ? { egressCidr: stack.config.network.vpcCidr } : {}),
    storageGiB: s.store.storageGiB ?? DEFAULT_STORE_STORAGE_GIB,
    ...(s.store.storageClassName ? { storageClassName: s.store.storageClassName } : {}),
    gateway,
  };
}
