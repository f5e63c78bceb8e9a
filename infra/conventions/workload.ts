/**
 * Names, ports and labels the resolved stack, the plan and the renderers must
 * agree on. They sit below all three (docs/architecture.md "Layers"): the rules
 * check the names' lengths, the plan routes the gateway to the ports and sizes
 * nodes for the DCGM exporter's requests, and the renderers write them into
 * the manifests. Constants only; nothing here is derived from a stack.
 */

/** Triton's ports: HTTP and gRPC (the gateway's routes, the NLB Service) and metrics (the ServiceMonitor). */
export const PORTS = { http: 8000, grpc: 8001, metrics: 8002 } as const;

/** A model's Triton workload: its Deployment, Services and the name the rules check the length of. */
export function workloadName(w: { readonly modelName: string }): string {
  return `triton-${w.modelName}`;
}

/** NLB target-group health check on /v2/health/ready (AWS limits: interval 5-300 s, thresholds 2-10). */
export const NLB_HEALTH_CHECK = {
  intervalSeconds: 10,
  timeoutSeconds: 6,
  healthyThreshold: 2,
  unhealthyThreshold: 2,
} as const;

/** The gateway's workload: `<workload>-gateway`. */
export function gatewayName(w: { readonly modelName: string }): string {
  return `${workloadName(w)}-gateway`;
}

/**
 * Label of the stack's untainted system node group (cluster mode `create`):
 * the gateway is required onto it. Existing clusters (kubeconfig,
 * stackReference) have their own pools, unknown to the stack, so there the
 * gateway only keeps off the serving GPU instance type.
 */
export const SYSTEM_NODE_LABEL = { key: "triton-ft.io/node-pool", value: "system" } as const;

/**
 * The node label of a model's own GPU nodes in a stack of several models
 * (its node group or NodePool carries it): two models on one instance type
 * still get nodes of their own, so each scales and rolls out apart.
 */
export const MODEL_NODE_LABEL_KEY = "triton-ft.io/model";

/**
 * The taint key of a canary's own GPU nodes in a one-model stack (value: the
 * canary's name, effect NoSchedule). That stack's stable pods select no model
 * label (its manifests predate several models, and labelling its nodes would
 * restart every stable pod): the taint, which only the canary's pods tolerate,
 * keeps them off the canary's nodes without touching a stable resource.
 */
export const CANARY_NODE_TAINT_KEY = "triton-ft.io/canary";

/**
 * The exporter's requests on every serving node: next to EKS's own DaemonSets, the
 * serving pods' budget leaves room for them (resolve/workload.ts GPU_NODE_DAEMONSET_*).
 */
export const DCGM_EXPORTER_REQUESTS = { cpuMillis: 100, memoryBytes: 128 * 1024 ** 2 } as const;

/**
 * The triton_with_ft pre-pull's requests (render/prePull.ts), on the GPU nodes
 * of an FT model with fixed nodes in a stack that builds: the serving pods'
 * budget and the fit rule count them there (resolve/workload.ts nodeDaemonSetRequests).
 */
export const PRE_PULL_REQUESTS = { cpuMillis: 1, memoryBytes: 16 * 1024 ** 2 } as const;

/** The gateway's ports: the OpenAI-compatible API (the NLB Service) and metrics (its ServiceMonitor). */
export const GATEWAY_PORTS = { http: 8080, metrics: 9090 } as const;

/**
 * Seconds between the SSE comments the gateway writes to a held stream while its model wakes: the
 * most its schema allows (images/gateway/src/config.ts), far inside the NLB's 350 s TCP idle timeout
 * and the idle timeouts of common HTTP clients and proxies (60 s and up).
 */
export const WAKE_KEEPALIVE_SECONDS = 10;

/**
 * The model clients call: the text-in/text-out pipeline. One name for the
 * repository's folder and config, the gateway's target, the client's default
 * and the stack output `modelName`.
 */
export const ENSEMBLE_MODEL = "ensemble";
