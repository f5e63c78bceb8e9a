/**
 * What the plan hands the renderers: the inputs of the Triton, gateway, store
 * and scaling renders. A leaf of the plan (docs/architecture.md "Layers"):
 * render/ names these types and the plan fills them, so neither imports the
 * other's code for them. Types only.
 */
import type { GpuInstance } from "../catalog/gpus";
import type { ChatTemplate } from "../model/catalog";
import type { Engine } from "../model/types";
import type { AutoscalingConfig } from "../config/autoscaling";
import type { AutoscalingPlan } from "../resolve/scaling";
import type { WorkloadPlan } from "../resolve/workload";

import type { LaunchPlan } from "./launch";

/** The load balancer settings of `serving` (validated: internet-facing comes with allowedCidrs). */
export interface LoadBalancerSettings {
  scheme: "internal" | "internet-facing";
  allowedCidrs: readonly string[];
  idleTimeoutSeconds: number;
}

/** Everything the manifests are rendered from, except the image (known only after the bake). */
export interface WorkloadInput {
  /** Model short name: the workload is `triton-<model>`. */
  modelName: string;
  /** Pulumi stack name: part of the instance label so two stacks in one cluster stay apart. */
  stackName: string;
  /** Triton release, the `app.kubernetes.io/version` label. */
  tritonVersion: string;
  namespace: string;
  /** Serving instance type: pods only run on it (gpt_gemm tuned on its GPU). */
  instanceType: string;
  loadBalancer: LoadBalancerSettings;
  serviceMonitor: boolean;
  launch: LaunchPlan;
  workload: WorkloadPlan;
  /**
   * The Triton backend that serves the model (ResolvedStack.engine): what the
   * Deployment's /dev/shm, the scaler's queue query and the dashboard's and
   * alerts' engine series follow. Names, ports and probes are the same for both.
   */
  engine: Engine;
  /** Set with serving.autoscaling: the HPA (KEDA) owns the replica count, from this floor. */
  autoscaling?: { minReplicas: number };
  /**
   * In a stack of several models: the label of this model's own GPU nodes
   * (conventions/workload.ts MODEL_NODE_LABEL_KEY), required by its pods and set on its node group or NodePool.
   * Unset in a one-model stack, whose manifests stay as they were.
   */
  modelNodeLabel?: { key: string; value: string };
  /**
   * A canary in a one-model stack: the taint of its own GPU nodes
   * (conventions/workload.ts CANARY_NODE_TAINT_KEY), which its pods tolerate
   * and the stable's do not. Unset for every other workload.
   */
  nodeTaint?: { key: string; value: string };
}

/** What one model's scaling objects are rendered from (plan/renderInputs.ts scalingInput builds it, buildPlan once). */
export interface ScalingInput {
  /** The Triton workload's input (its `serviceMonitor` says whether a Prometheus Operator is there). */
  workload: WorkloadInput;
  instance: GpuInstance;
  /** GPU node root volume, GiB. */
  nodeDiskGiB: number;
  autoscaling?: { config: AutoscalingConfig; plan: AutoscalingPlan };
  /** The model's live canary (plan/canary.ts): its row gets the canary panels, its alerts the rollback. */
  canary?: { deployment: string; weight: number };
}

/** What the gateway manifests are rendered from, besides the image and the keys (known at deploy time). */
export interface GatewayWorkloadInput {
  /** The Triton workload's identity: names, namespace, labels, load balancer settings. */
  triton: Pick<
    WorkloadInput,
    "modelName" | "stackName" | "tritonVersion" | "namespace" | "instanceType" | "loadBalancer"
  >;
  config: GatewayConfigFile;
  /** The fixed size, or the floor when autoscaled. */
  replicas: number;
  /** Any model autoscales: KEDA owns spec.replicas (render/scaling.ts renders the gateway's ScaledObject). */
  autoscaled: boolean;
  tlsCertificateArn?: string;
  /** The system node group's label, required of the nodes (cluster mode create); absent for existing clusters. */
  systemNodeLabel?: { key: string; value: string };
  /** The shared store (serving.store); absent with mode none. */
  store?: StorePlan;
  /** Every model's serving instance type: the gateway pods are kept off each. */
  gpuInstanceTypes: string[];
  /**
   * The stack's AWS tags (infra/tags.ts stackTags): the AWS Load Balancer
   * Controller puts them on the NLB it creates for the gateway's Service, so
   * the load balancer is found and costed with the stack like every other
   * shared resource.
   */
  awsTags: Record<string, string>;
  /** Every model's Triton workload behind the gateway, the first first: the gateway may reach each, and each admits the gateway. */
  tritons: Array<Pick<WorkloadInput, "modelName" | "stackName">>;
}

/** The store as the plan describes it (plan/store.ts storePlan). */
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

export interface GatewayModel {
  id: string;
  maxInputLen: number;
  maxOutputLen: number;
  maxBatchSize: number;
  vocab: number;
  /** n (or best_of) × max_tokens per prompt; the gateway defaults it to maxOutputLen × maxBatchSize. */
  maxChoiceTokens?: number;
  chatTemplate?: ChatTemplate;
  /** A model that sleeps (autoscaling min 0): the gateway holds its requests while it wakes. */
  wake?: GatewayWake;
  /** A second build of the model served to a weighted share of its new requests (issue 36). */
  canary?: GatewayCanary;
  /** The engine behind the model's ensemble; absent: `ft` (the gateway's default), so FT stacks render as before. */
  engine?: Engine;
  /** Most top alternatives per token a request may ask (the vLLM model's max_logprobs); absent: 0, as on FT. */
  maxLogprobs?: number;
  /** Its Triton stops a generation whose gRPC call is cancelled (the vLLM model aborts it); absent: false, as FT. */
  cancellable?: boolean;
}

/** The gateway's `canary` block of a model (ModelConfigSchema in the gateway package; /work contract of issue 36). */
export interface GatewayCanary {
  /** "c-" + the first 8 hex of the canary's bake step hash: a new id starts a fresh rollback state. */
  id: string;
  /** Percent (1..99) of the model's new requests sent to the canary. */
  weight: number;
  /** The canary's own Triton Service. */
  triton: { grpc: string; ensemble: string };
  /** The canary's own in-flight cap. */
  maxInflight: number;
  rollback: GatewayCanaryRollback;
}

/** When the gateway stops sending a canary new requests. */
export interface GatewayCanaryRollback {
  maxErrorRate: number;
  maxTtftRatio: number;
  windowSeconds: number;
  minRequests: number;
}

/** The gateway's `wake` block of a model (ModelConfigSchema in the gateway package). */
export interface GatewayWake {
  /** Requests each gateway pod holds for the model; beyond it 429 with Retry-After. */
  queueDepth: number;
  /** A held request waits this long for a ready Triton, then 503 model_unavailable. */
  activationTimeoutSeconds: number;
  /** SSE comment interval on a held stream. */
  keepaliveSeconds: number;
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
