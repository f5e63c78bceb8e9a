/**
 * The adapter: a resolved stack and its plan as a StackCostInput. The only
 * module of infra/cost that knows the config's and the plan's shapes: the
 * stack plan's shared parts (builders, registries, the gateway's store) and
 * one entry per model (`modelEntries`).
 *
 * Every number comes from the plan, the catalog or the one timing source
 * (catalog/timings.ts): the same step estimates the budgets are made of, the
 * workload's pull and load seconds, the scaling plan's pull with
 * FastImagePull. Pure.
 */
import { BUILDER_VOLUME } from "../cloud/builderHost";
import { KEEP_IMAGES, PROTECTED_TAGS } from "../cloud/ecr";
import { SYSTEM_NODES } from "../cloud/eks";
import { GPU_MODELS } from "../catalog/gpus";
import { eksSupport } from "../catalog/eks";
import {
  ASSUMED,
  COMPILE,
  NLB_PROVISION_SECONDS,
  NLB_TARGET_REGISTRATION_SECONDS,
  NODE_BOOT_SECONDS,
  VLLM_ASSUMED,
  VLLM_DECODE_BANDWIDTH_EFFICIENCY,
} from "../catalog/timings";
import type { ResolvedStack } from "../config/stack";
import { CANARY_SUFFIX } from "../config/models";
import { TRITON_WITH_FT_IMAGE_BYTES, fp16WeightBytes } from "../model/sizing";
import type { StackPlan } from "../plan/stack";
import { expectedSeconds, stepEstimates, vllmBakeEstimate, type StepEstimate, type StepId } from "../plan/budgets";
import { kvBytesPerToken } from "../model/vllmSizing";
import type { ResolvedVllm } from "../config/stack";
import { sha256 } from "../plan/hash";
import { natGatewayCount } from "../resolve/network";
import { prePullOnNodes } from "../resolve/workload";
import type { Plan } from "../plan";
import type { RegistryPlan } from "../plan/registry";
import { budgetInputs } from "../plan/steps";
import { runOrder } from "../plan/stepGraph";
import { GATEWAY_IMAGE_BYTES, STORE, TRAFFIC } from "./assumptions";
import type {
  BuilderCostInput,
  CapacityType,
  StepTiming,
  ModelCostInput,
  RegistryCostInput,
  StackCostInput,
  StoreCostInput,
} from "./input";
import type { StorePlan } from "../plan/store";
import type { MeasuredStep } from "../plan/measurements";
import { withMeasuredSteps } from "./measured";

export interface CostContext {
  stackName: string;
  /** aws:region of the stack file (or the provider's region under Pulumi); undefined leaves the sum unpriced. */
  region: string | undefined;
  /** ISO date the EKS support phase is read at (catalog/eks.ts). */
  today: string;
  /**
   * The stack's own measured step times (its `buildStepTimes` output): each
   * replaces the catalog's figure of the step with the same input hash.
   * @default none: every step at the catalog's figure
   */
  measured?: readonly MeasuredStep[];
}

function capacityType(s: ResolvedStack): CapacityType {
  const a = s.config.serving.autoscaling;
  if (a?.capacityType === "spot") return "spot";
  return a && a.capacityReservationIds.length > 0 ? "reserved" : "on-demand";
}

/**
 * What a vLLM decode step reads of the KV cache with the batch full at the longest
 * request: max_num_seqs sequences of maxInputLen + maxOutputLen tokens, at most the
 * cache vLLM holds (its pool is sized for the GPU, not for one batch).
 */
function vllmBatchKvBytes(s: ResolvedStack, v: ResolvedVllm): number {
  const sv = s.config.serving;
  const batch =
    v.maxNumSeqs * (sv.maxInputLen + sv.maxOutputLen) * kvBytesPerToken(s.model.arch, v.tensorParallel, v.dtype);
  return Math.min(batch, v.kvCacheGiB * 1024 ** 3);
}

/** The model's entry: its nodes, decode shape, image, build steps and serving timings. */
export function modelEntry(
  s: ResolvedStack,
  plan: Plan,
  builder: string,
  /** A canary's Triton gets no pre-pull (program.ts): false. */
  prePulled = true,
): ModelCostInput {
  const sv = s.config.serving;
  const a = sv.autoscaling;
  const k = plan.kubernetes;
  const inst = s.servingInstance;
  const inputs = budgetInputs(s, plan.build.smList);
  // A vLLM model's bake (scripts/remote/bake-vllm.sh) is its own: no conversion, gemm or compile minutes at all.
  const estimates = s.vllm ? { ...stepEstimates(inputs), bake: vllmBakeEstimate(inputs) } : stepEstimates(inputs);
  const nodes = a
    ? // Karpenter holds whole nodes for the pods that run: the floor at min, the ceiling at max.
      { min: Math.ceil(a.min / k.podsPerNode), max: Math.ceil(a.max / k.podsPerNode) }
    : // A managed node group runs its fixed size all month, the rollout's surge slot included.
      { min: k.gpuNodes, max: k.gpuNodes };
  return {
    id: plan.model.name,
    instanceType: inst.type,
    gpusPerNode: inst.gpuCount,
    podsPerNode: k.podsPerNode,
    tensorParallel: sv.tensorParallel,
    nodes,
    replicas: a ? { min: a.min, max: a.max } : { min: sv.replicas, max: sv.replicas },
    autoscaled: a !== undefined,
    ...(plan.autoscaling?.sleep
      ? {
          sleep: {
            // Awake, a model that sleeps runs one pod: the queue/compute ratio adds more from there.
            awakeNodes: Math.ceil(1 / k.podsPerNode),
            activationSeconds: plan.autoscaling.sleep.activationSeconds,
            idleMinutes: plan.autoscaling.sleep.idleSeconds / 60,
          },
        }
      : {}),
    capacityType: capacityType(s),
    nodeDiskGiB: s.nodeDiskGiB,
    decode: {
      maxBatchSize: sv.maxBatchSize,
      maxInputLen: sv.maxInputLen,
      maxOutputLen: sv.maxOutputLen,
      layers: s.model.arch.layers,
      memoryBandwidthGBps: GPU_MODELS[inst.gpuModel].memoryBandwidthGBps,
      weightsBytesPerGpu: s.memory.weightsBytes,
      kvCacheBytesPerGpu: s.vllm ? vllmBatchKvBytes(s, s.vllm) : s.memory.kvCacheBytes,
      ...(s.vllm ? { efficiency: VLLM_DECODE_BANDWIDTH_EFFICIENCY } : {}),
    },
    image: {
      baseBytes: s.vllm ? VLLM_ASSUMED.baseImageBytes : TRITON_WITH_FT_IMAGE_BYTES,
      weightsBytes: fp16WeightBytes(s.model.family, s.model.arch),
    },
    build: {
      builder,
      steps: withCompileHost(plan.buildSteps, estimates, plan.build.tritonWithFtFrom !== undefined),
      ...(s.cpuBuilder ? { cpu: true } : {}),
    },
    serving: {
      nodeBootSeconds: NODE_BOOT_SECONDS[inst.gpuModel],
      pullSeconds: k.pullSeconds,
      expectedPullSeconds: plan.autoscaling?.expectedPullSeconds ?? k.pullSeconds,
      loadSeconds: k.loadSeconds,
      nlbRegistrationSeconds: NLB_TARGET_REGISTRATION_SECONDS,
      preStopSeconds: k.preStopSeconds,
      // Without autoscaling a managed node group boots with the cluster; Karpenter launches once pods are pending.
      nodesWithCluster: a === undefined,
      // As the program creates it (resolve/workload.ts prePullOnNodes).
      ...(prePulled && prePullOnNodes(s)
        ? {
            prePull: {
              afterStep: "triton-with-ft",
              seconds: Math.ceil(TRITON_WITH_FT_IMAGE_BYTES / ASSUMED.ecrPullBytesPerSecond),
              ownLayersPullSeconds: Math.ceil(
                fp16WeightBytes(s.model.family, s.model.arch) / ASSUMED.ecrPullBytesPerSecond,
              ),
            },
          }
        : {}),
      rolloutHash: sha256(JSON.stringify({ serving: plan.serving, kubernetes: plan.kubernetes, launch: plan.launch })),
    },
  };
}

/** The compile host's readiness, as the estimate's graph has it: not a remote step, so no input hash of its own. */
export const COMPILE_HOST_READY = "compile-host ready";

/**
 * The build steps as the estimate times them: each step at its estimate, and a
 * step that runs on the compile host (triton_with_ft) also waits for that
 * host's launch and first boot, which run beside the GPU builder's. A
 * triton_with_ft taken from another stack (build.tritonWithFtFrom) is no step:
 * it exists before the build starts, so nothing waits for it. The bake pushes
 * only its new layers when ECR mounts the base's from this stack's own
 * triton_with_ft repository (plan/budgets.ts BAKE_BASE_PUSH); a taken base may
 * live in another account's registry, where no mount applies, so it counts in full.
 * A stack that compiles its own also runs the twf-layers steps, so
 * triton_with_ft's push and gemm's pull count only the compile's layers
 * (plan/budgets.ts RECIPE_LAYERS).
 */
function withCompileHost(
  steps: Plan["buildSteps"],
  estimates: Record<StepId, StepEstimate>,
  taken: boolean,
): StepTiming[] {
  const compiled = steps.some((st) => st.host === "compiler");
  return [
    ...(compiled
      ? [
          {
            id: COMPILE_HOST_READY,
            dependsOn: [],
            seconds: COMPILE.hostReadySeconds,
            inputHash: COMPILE_HOST_READY,
            basis: "assumed" as const,
          },
        ]
      : []),
    ...steps.map((step) => ({
      id: step.id,
      dependsOn: [
        ...runOrder(step).filter((d) => !(taken && d === "triton-with-ft")),
        ...(step.host === "compiler" ? [COMPILE_HOST_READY] : []),
      ],
      // Compiled here: the bake's base is mounted, and the recipe layers moved ahead (plan/steps.ts stepDefinitions).
      seconds: expectedSeconds(step.id, estimates[step.id], { baseMounted: !taken, recipeLayersAhead: !taken }),
      inputHash: step.inputHash,
      basis: estimates[step.id].basis,
    })),
  ];
}

/**
 * A stack's models, first to last. The steps a builder runs for every model
 * it hosts (its host check, its triton_with_ft and its recipe layers) run in the pipeline of the
 * first model on that builder (plan/stack.ts): another model on the same
 * builder waits for them, so its critical path starts with them.
 */
export function modelEntries(models: readonly ResolvedStack[], sp: StackPlan): ModelCostInput[] {
  const entries = sp.models.map((e, i) => {
    const m = models[i];
    if (!m) throw new Error(`model ${e.id} has no resolved config`);
    const builder = sp.builders[e.builder];
    if (!builder) throw new Error(`model ${e.id} has no builder ${e.builder}`);
    return modelEntry(m, e.plan, builder.name);
  });
  const withShared = entries.map((entry, i) => {
    const owner = sp.models.findIndex((x) => x.ownsBuilder && x.builder === sp.models[i]?.builder);
    const ownerEntry = entries[owner];
    if (owner === i || !ownerEntry) return entry;
    return withStepsOf(entry, ownerEntry);
  });
  // A live canary is priced and timed as a model of its own: its nodes, and its own steps after the ones
  // it shares with its stable build (and that build's builder's). A promoted canary has no nodes.
  const canaries = sp.canaries.flatMap((c) => {
    const i = sp.models.findIndex((x) => x.id === c.of);
    const stable = withShared[i];
    const m = models[i]?.canary;
    const builder = sp.builders[sp.models[i]?.builder ?? -1];
    if (c.promote || !stable || !m || !builder) return [];
    const entry = { ...modelEntry(m.stack, c.plan, builder.name, false), canary: { of: c.of, weight: c.weight } };
    return [withStepsOf(entry, stable)];
  });
  return [...withShared, ...canaries];
}

/** `entry` with the steps of `from` its own steps wait for (transitively) before them. */
function withStepsOf(entry: ModelCostInput, from: ModelCostInput): ModelCostInput {
  const own = new Set(entry.build.steps.map((st) => st.id));
  const needed = new Set<string>();
  const visit = (id: string) => {
    if (own.has(id) || needed.has(id)) return;
    needed.add(id);
    for (const d of from.build.steps.find((st) => st.id === id)?.dependsOn ?? []) visit(d);
  };
  for (const st of entry.build.steps) st.dependsOn.forEach(visit);
  const shared = from.build.steps.filter((st) => needed.has(st.id));
  return { ...entry, build: { ...entry.build, steps: [...shared, ...entry.build.steps] } };
}

/**
 * The hosts the stack builds on: each GPU builder, and the CPU compile host
 * beside it when that builder's triton_with_ft is compiled by this stack.
 * A promoted stack builds nothing.
 */
function buildHosts(s: ResolvedStack, sp: StackPlan, promoted: boolean): BuilderCostInput[] {
  if (promoted) return [];
  const compiles = sp.models.some((m) => m.plan.buildSteps.some((st) => st.host === "compiler"));
  const volume = {
    iops: BUILDER_VOLUME.iops,
    throughputMiBps: BUILDER_VOLUME.throughputMiBps,
    stopWhenDone: s.config.build.stopBuilderWhenDone,
  };
  return sp.builders.flatMap((b): BuilderCostInput[] => [
    { id: b.name, instanceType: b.instanceType, diskGiB: b.diskGiB, ...volume, ...(b.cpu ? { cpu: true } : {}) },
    ...(compiles && b.compileHost.name !== ""
      ? [
          {
            id: b.compileHost.name,
            instanceType: b.compileHost.instanceType,
            diskGiB: b.compileHost.diskGiB,
            ...volume,
            compilesFor: b.name,
          },
        ]
      : []),
  ]);
}

/** Content-tagged images a repository keeps, plus the protected ones that may be older (infra/cloud/ecr.ts). */
const kept = (n: number) => n + PROTECTED_TAGS.length;

/** One entry per ECR repository the stack creates (plan/registry.ts): each model's server repository, then the shared ones. */
function registries(plan: RegistryPlan, models: ModelCostInput[]): RegistryCostInput[] {
  return [
    ...plan.servers.map((repo) => {
      // A promoted canary's repository keeps the image its model serves: sized as that model's.
      const m = models.find((x) => x.id === repo.model) ?? models.find((x) => `${x.id}${CANARY_SUFFIX}` === repo.model);
      if (!m) throw new Error(`repository ${repo.name} serves ${repo.model}, which has no cost entry`);
      return {
        id: repo.name,
        label: `server (${m.id})`,
        model: m.id,
        // FROM triton_with_ft: its layers once in the repository, then one weights layer per kept image.
        sharedBytes: m.image.baseBytes,
        perImageBytes: m.image.weightsBytes,
        keptImages: kept(KEEP_IMAGES.server),
      };
    }),
    // A rebuild of triton_with_ft recompiles FT: no layer sharing is assumed between kept images.
    {
      id: plan.tritonWithFt,
      label: "triton_with_ft",
      sharedBytes: 0,
      perImageBytes: TRITON_WITH_FT_IMAGE_BYTES,
      keptImages: kept(KEEP_IMAGES.tritonWithFt),
    },
    {
      id: plan.gateway,
      label: "gateway",
      sharedBytes: 0,
      perImageBytes: GATEWAY_IMAGE_BYTES,
      keptImages: kept(KEEP_IMAGES.gateway),
    },
  ];
}

/** The gateway's store as the estimate prices it (plan/store.ts); none with serving.store.mode none. */
function storeCost(store: StorePlan | undefined): StoreCostInput | undefined {
  if (!store) return undefined;
  return store.mode === "managed"
    ? { mode: "managed", storedGiB: STORE.minimumGiB, ecpuPerRequest: STORE.ecpuPerRequest }
    : { mode: "inCluster", volumeGiB: store.storageGiB };
}

/**
 * The stack's estimate input. `s` is the stack's own view (its shared
 * settings: cluster, network, load balancer, build; the same in every
 * model's view, config/models.ts); each model's entry comes from its own
 * resolved config and plan.
 */
export function costInput(
  s: ResolvedStack,
  resolved: readonly ResolvedStack[],
  sp: StackPlan,
  ctx: CostContext,
): StackCostInput {
  const c = s.config.cluster;
  const n = s.config.network;
  const sv = s.config.serving;
  const measured = ctx.measured ?? [];
  // Each model's steps, the builder's shared ones among them, each at its measured time where its inputs match.
  const models = modelEntries(resolved, sp).map((m) =>
    measured.length ? { ...m, build: { ...m.build, steps: withMeasuredSteps(m.build.steps, measured) } } : m,
  );
  const promoted = s.config.build.promoteFrom !== undefined;
  const store = storeCost(sp.gateway.plan.store);
  const support = eksSupport(c.kubernetesVersion, ctx.today).status === "extended" ? "extended" : "standard";
  // An internet-facing NLB holds one public address per AZ it spans (the public subnets).
  const azs = n.mode === "create" ? n.availabilityZones : n.publicSubnetIds.length;
  return {
    stack: ctx.stackName,
    region: ctx.region,
    cluster:
      c.mode === "create"
        ? {
            mode: "create",
            support,
            controlPlaneSeconds: ASSUMED.eksControlPlaneSeconds,
            systemNodes: {
              instanceType: SYSTEM_NODES.instanceType,
              count: SYSTEM_NODES.count,
              diskGiB: SYSTEM_NODES.diskGiB,
            },
          }
        : { mode: "existing" },
    natGateways: natGatewayCount(n),
    loadBalancer: {
      scheme: sv.loadBalancerScheme,
      publicAddresses: sv.loadBalancerScheme === "internet-facing" ? azs : 0,
      provisionSeconds: NLB_PROVISION_SECONDS,
    },
    builders: buildHosts(s, sp, promoted),
    // A promoted stack builds nothing: no builder, no repository of its own (it pulls another stack's images).
    registries: promoted ? [] : registries(sp.registry, models),
    ...(store ? { store } : {}),
    // The EKS secrets key (components/cluster.ts): one per created cluster.
    kmsKeys: c.mode === "create" ? 1 : 0,
    traffic: { ...TRAFFIC },
    models,
  };
}
