/**
 * What the cost and time estimate is computed from: a stack-wide part and a
 * LIST of per-model entries, so a stack that serves several models in
 * parallel is one more entry, not a new estimator. Every field is a plain
 * number or name; cost/fromStack.ts fills them from a resolved stack and its
 * plan (the only place that knows the config's shape), and the tests build
 * them by hand.
 */
import type { UnitKey } from "../catalog/prices";
import type { TimeBasis } from "../plan/budgets";

/** How a model's GPU nodes are bought (serving.autoscaling.capacityType; reservations when capacityReservationIds are set). */
export type CapacityType = "on-demand" | "spot" | "reserved";

/** One remote build step: its estimated duration, the steps it waits for, and its input hash. */
export interface StepTiming {
  id: string;
  dependsOn: string[];
  seconds: number;
  inputHash: string;
  /** Whether `seconds` comes from measured rates (catalog/timings.ts); absent in an older cost.json. */
  basis?: TimeBasis;
  /**
   * Set when `seconds` is this stack's own measurement of the step with the
   * same input hash (cost/measured.ts): the UTC time of that run.
   * @default none: the catalog's estimate
   */
  measuredAt?: string;
}

export type { TimeBasis } from "../plan/budgets";

export interface ModelCostInput {
  /** The model's name (plan.model.name). */
  id: string;
  instanceType: string;
  gpusPerNode: number;
  podsPerNode: number;
  tensorParallel: number;
  /**
   * GPU nodes paid for at the low and high end: a fixed size runs min = max
   * nodes all month (with the rollout's surge slot); an autoscaled model
   * pays for its floor at `min` and for its ceiling at `max`.
   */
  nodes: { min: number; max: number };
  replicas: { min: number; max: number };
  autoscaled: boolean;
  /**
   * A model that sleeps (autoscaling min 0): `nodes.min` is 0 (asleep), and
   * awake it holds `awakeNodes` (one pod's). `activationSeconds`: a held
   * request to KEDA scaling it to 1 (resolve/scaling.ts planSleep).
   */
  sleep?: { awakeNodes: number; activationSeconds: number; idleMinutes: number };
  /**
   * A model's canary build (issue 36): `of` is the stable model, `weight` the percent of its requests
   * the canary takes. Its build steps include the stable's it shares (same hashes: run once, by the stable).
   */
  canary?: { of: string; weight: number };
  capacityType: CapacityType;
  /** GPU node root volume (gp3, baseline IOPS and throughput), GiB. */
  nodeDiskGiB: number;
  /** The decode shape: one token per sequence per step, `maxBatchSize` sequences. */
  decode: {
    maxBatchSize: number;
    maxInputLen: number;
    maxOutputLen: number;
    /** Transformer layers: a step never takes less than a fixed launch cost per layer. */
    layers: number;
    /** Peak memory bandwidth of one GPU, GB/s (catalog/gpus.ts). */
    memoryBandwidthGBps: number;
    /** fp16 weights one GPU holds and streams every step (its tensor-parallel shard plus the replicated embeddings). */
    weightsBytesPerGpu: number;
    /** One GPU's K and V cache at the longest request for the whole batch (model/sizing.ts). */
    kvCacheBytesPerGpu: number;
    /**
     * The engine's share of peak bandwidth a decode step reaches, low and high
     * (catalog/timings.ts VLLM_DECODE_BANDWIDTH_EFFICIENCY for a vLLM model).
     * @default FT's: DECODE_BANDWIDTH_EFFICIENCY to DECODE_BANDWIDTH_EFFICIENCY_HIGH
     */
    efficiency?: { low: number; high: number };
  };
  /** The server image: triton_with_ft plus this model's fp16 weights layer. */
  image: { baseBytes: number; weightsBytes: number };
  /**
   * The build steps that produce this model's image, and the builder that runs them;
   * `cpu`: that builder is a vLLM-only stack's CPU instance (plan/cpuBuilder.ts), absent for a GPU builder.
   */
  build: { builder: string; steps: StepTiming[]; cpu?: boolean };
  /** The serving side's timings (catalog/timings.ts rates applied by the adapter). */
  serving: {
    nodeBootSeconds: number;
    /** Serial pull on a fresh node (the budgets' rate). */
    pullSeconds: number;
    /** Pull with FastImagePull when enabled, else the serial pull. */
    expectedPullSeconds: number;
    loadSeconds: number;
    nlbRegistrationSeconds: number;
    /** Pod termination before its slot frees in a rolling update: preStop (deregistration). */
    preStopSeconds: number;
    /** GPU nodes come up with the cluster (managed node group), not on demand after the image exists (Karpenter). */
    nodesWithCluster: boolean;
    /**
     * The triton_with_ft pre-pull (render/prePull.ts): the nodes pull it from
     * the end of `afterStep` (or once they are up, if later), and the pods then
     * pull only the bake's own layers. Absent where the program makes none.
     */
    prePull?: { afterStep: string; seconds: number; ownLayersPullSeconds: number };
    /** Hash of what a rollout depends on besides the image (instance type, shape, launch): a change rolls the pods. */
    rolloutHash: string;
  };
}

export interface BuilderCostInput {
  /** The builder's name (one per GPU model the stack builds for). */
  id: string;
  instanceType: string;
  diskGiB: number;
  /** Provisioned gp3 IOPS and throughput (above the free 3,000 IOPS / 125 MB/s they are billed). */
  iops: number;
  throughputMiBps: number;
  /** build.stopBuilderWhenDone: stopped, only its volume and address are billed between builds. */
  stopWhenDone: boolean;
  /**
   * A CPU compile host (catalog/compileHosts.ts): the id of the GPU builder whose
   * triton_with_ft it compiles. It runs from its launch until that step ends.
   */
  compilesFor?: string;
  /**
   * A vLLM-only stack's CPU builder (plan/cpuBuilder.ts): no GPU, priced at its own instance type.
   * @default false: a GPU builder (or a compile host)
   */
  cpu?: boolean;
}

/** A repository the stack keeps images in: a base stored once, and one layer set per kept image. */
export interface RegistryCostInput {
  /** The ECR repository's name (plan/registry.ts): one entry, and one line, per repository. */
  id: string;
  /** How the line names it ("server (gpt2)", "triton_with_ft"). */
  label: string;
  /** The model it serves, or undefined for a repository the stack shares. */
  model?: string;
  /** Layers every kept image shares (stored once per repository). */
  sharedBytes: number;
  /** Layers each kept image adds. */
  perImageBytes: number;
  /** Images the lifecycle policy keeps at most (infra/cloud/ecr.ts): content-tagged plus protected. */
  keptImages: number;
}

/**
 * The gateway's shared store (serving.store), when the stack has one: an
 * ElastiCache Serverless cache for Valkey (managed), metered by data stored
 * and by ECPUs per request; or a Valkey pod whose data sits on a volume
 * (inCluster), the pod itself on the system nodes already priced.
 */
export type StoreCostInput =
  | {
      mode: "managed";
      /** Data stored, GiB (the metered minimum when the counters are smaller). */
      storedGiB: number;
      /** ECPUs one request costs (its counters, permit and usage entry). */
      ecpuPerRequest: number;
    }
  | { mode: "inCluster"; volumeGiB: number };

export interface StackCostInput {
  stack: string;
  region: string | undefined;
  /** cluster.mode create: the stack pays for an EKS control plane and its system nodes. */
  cluster:
    | {
        mode: "create";
        /** The Kubernetes version's support phase today (catalog/eks.ts): extended support bills more per hour. */
        support: "standard" | "extended";
        controlPlaneSeconds: number;
        systemNodes: { instanceType: string; count: number; diskGiB: number };
      }
    | { mode: "existing" };
  /** NAT gateways the stack creates (network.mode create). */
  natGateways: number;
  loadBalancer: {
    scheme: "internal" | "internet-facing";
    /** Public IPv4 addresses an internet-facing NLB holds (one per AZ); 0 when internal. */
    publicAddresses: number;
    provisionSeconds: number;
  };
  builders: BuilderCostInput[];
  registries: RegistryCostInput[];
  store?: StoreCostInput;
  /** KMS customer managed keys the stack creates (the EKS secrets key with cluster.mode create). */
  kmsKeys: number;
  /** The stated traffic assumptions every usage-priced line uses (cost/assumptions.ts). */
  traffic: {
    /** Share of full-batch throughput served on average. */
    utilisation: number;
    /** Bytes the NLB carries per generated token (streamed chunks and request bodies). */
    nlbBytesPerToken: number;
    /** Server-image pulls per GPU node per month (each goes through the NAT gateway). */
    pullsPerNodePerMonth: number;
  };
  models: ModelCostInput[];
}

/** One priced line of the monthly sum. */
export interface LineItem {
  id: string;
  /** "stack" for shared lines, else the model id. */
  scope: string;
  label: string;
  /** Quantity per month at the low and high end, in `unit`. */
  quantity: { min: number; max: number };
  unit: string;
  /** Price per unit, and the table key and source it came from; undefined when unpriced. */
  price?: { usd: number; key: UnitKey | "ec2"; source: string };
  monthlyUsd: { min: number; max: number };
  /** The arithmetic, for people: "2 × 730 h × $0.0832". */
  basis: string;
  note?: string;
  /**
   * Why the line prices something the stack uses but does not create (an
   * existing cluster's GPU nodes): its owner pays it, and a cost report by
   * this stack's tags cannot show it.
   */
  outsideStack?: string;
}
