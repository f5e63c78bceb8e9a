/**
 * How the gateway reaches the shared store: its port, where the password and
 * the CA certificate come from, the ElastiCache user and placeholder host. The
 * plan writes them into the gateway config (plan/store.ts) and the renderers
 * into the store's and the gateway's manifests (render/storeManifests.ts).
 */

/** Valkey's port, the same for ElastiCache and in the cluster. */
export const STORE_PORT = 6379;

/** The gateway reads the password from this variable (a secretKeyRef), never from its ConfigMap. */
export const STORE_PASSWORD_ENV = "GATEWAY_STORE_PASSWORD";

/** Where the in-cluster store's CA certificate is mounted in the gateway (its TLS is the stack's own CA). */
export const STORE_CA_DIR = "/etc/triton-ft-store-ca";

export const STORE_CA_FILE = "ca.crt";

/** Stands for the ElastiCache endpoint in rendered files until it exists (RFC 2606 `.invalid`: never resolves). */
export const MANAGED_HOST_PLACEHOLDER = "elasticache-endpoint.invalid";

/** The ElastiCache user the gateway authenticates as (ElastiCache user names: letters, digits, '-'). */
export const MANAGED_USER = "triton-ft-gateway";

/** A store call slower than this puts the gateway on per-pod limits until the store answers again. */
export const STORE_COMMAND_TIMEOUT_MS = 500;
