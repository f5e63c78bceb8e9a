/**
 * The plan of a whole stack: one model plan per model (infra/plan/index.ts,
 * unchanged for one model) and what the models share: the builders (one per
 * GPU model the models serve on: gpt_gemm tunes for the GPU that serves), each
 * with its own triton_with_ft (built on it, for its GPU family's SMs only: a
 * model on a new GPU family builds what it needs and changes no other model's
 * step hashes), and the gateway (plan/gateway.ts).
 *
 * The first model is the stack's "first": its plan is exactly a one-model
 * stack's (same steps, paths and hashes), its pipeline builds the gateway
 * image, and its resources keep the one-model names. Every further model's
 * steps are scoped to its id (plan/scope.ts) and run on its GPU model's builder.
 *
 * Pure: no Pulumi.
 */
import { prometheusOperatorPresent } from "../config/autoscaling";
import { compileHostFor } from "../catalog/compileHosts";
import { smList } from "../catalog/gpus";
import { cpuBuilderPlan, type CpuBuilderPlan } from "./cpuBuilder";
import { compileHostDiskGiB, compileHostFreeDiskGiB, sharedBuilderDiskGiB } from "../model/sizing";
import type { ResolvedStack } from "../config/stack";
import { buildPlan, type Plan, type PlanOptions } from "./index";
import { gatewayPlan, type GatewayPlan } from "./gateway";
import { canaryPlan, promotedPlan, promotedView, type CanaryPlanEntry, type ModelPlanner } from "./canary";
import { namePrefix } from "../naming";
import { workloadName } from "../conventions/workload";
import { registryPlan, type RegistryPlan } from "./registry";
import type { PathHasher } from "./stepGraph";
import { stackSmList } from "./steps";
import { PROJECT } from "../config/schema";
import { stackTags } from "../tags";

import type { GatewayWorkloadInput } from "./types";
export interface ModelPlanEntry {
  /** The model id clients send (the one-model form's model name). */
  id: string;
  /** The stack's first model: one-model names and paths, and the shared build steps. */
  first: boolean;
  plan: Plan;
  /** Index into StackPlan.builders. */
  builder: number;
  /**
   * The first model on its builder: its pipeline runs the builder's shared steps (host check,
   * triton_with_ft), starts and stops the builder, and the other models on it wait for it.
   */
  ownsBuilder: boolean;
}

export interface BuilderPlan {
  /** Component name: `builder` for the first model's (a one-model stack's name), `builder-<gpu>` for the others. */
  name: string;
  instanceType: string;
  gpuModel: string;
  diskGiB: number;
  /** Ids of the models converted and tuned here, first to last. */
  models: string[];
  /** CUDA archs of the triton_with_ft built for this builder: its models' serving GPUs and its own (one GPU family). */
  smList: number[];
  /** The CPU host that compiles that triton_with_ft (catalog/compileHosts.ts), picked from the SM list. */
  compileHost: CompileHostPlan;
  /**
   * A vLLM-only stack's one builder is a CPU instance (plan/cpuBuilder.ts): its vCPUs and memory.
   * It builds no triton_with_ft (`smList` empty, no compile host) and has no GPU model (`gpuModel` "").
   * @default none: a GPU builder
   */
  cpu?: { vcpus: number; memoryGiB: number };
}

export interface CompileHostPlan {
  /** Component name: `compiler` beside the first builder, `compiler-<gpu>` beside the others. */
  name: string;
  instanceType: string;
  vcpus: number;
  diskGiB: number;
  /** Free disk its readiness check requires (scripts/remote/compile-host-ready.sh). */
  requiredFreeGiB: number;
}

export interface StackPlan {
  models: ModelPlanEntry[];
  /** The one gateway in front of every model (its names are the first model's, as in a one-model stack). */
  gateway: { workload: GatewayWorkloadInput; plan: GatewayPlan };
  /** One per GPU model, each building its own triton_with_ft. */
  builders: BuilderPlan[];
  /** The ECR repositories: the shared ones and one server repository per model, then per canary (plan/registry.ts). */
  registry: RegistryPlan;
  /** The models' canary builds (plan/canary.ts), in the models' order; each on its stable model's builder. */
  canaries: CanaryPlanEntry[];
}

/** The component name of a further model's resource: `<base>-<id>`; the first model keeps `<base>`. */
export function modelResourceName(base: string, entry: Pick<ModelPlanEntry, "id" | "first">): string {
  return entry.first ? base : `${base}-${entry.id}`;
}

/**
 * A vLLM-only stack's builder (resolve: ResolvedStack.cpuBuilder): one CPU instance for every model,
 * named as a one-model stack's builder.
 */
function cpuBuilders(models: readonly ResolvedStack[]): { builders: BuilderPlan[]; cpu: CpuBuilderPlan } {
  const cpu = cpuBuilderPlan(models);
  const none = { name: "", instanceType: "", vcpus: 0, diskGiB: 0, requiredFreeGiB: 0 };
  const builder: BuilderPlan = {
    name: "builder",
    instanceType: cpu.instanceType,
    gpuModel: "",
    diskGiB: cpu.diskGiB,
    models: models.map((m) => m.model.name),
    smList: [],
    compileHost: none,
    cpu: { vcpus: cpu.vcpus, memoryGiB: cpu.memoryGiB },
  };
  return { builders: [builder], cpu };
}

export function buildStackPlan(models: readonly ResolvedStack[], stackName: string, hashPath: PathHasher): StackPlan {
  if (models.length === 0) throw new Error("a stack plan needs at least one model");
  const onCpu = models.every((m) => m.cpuBuilder) ? cpuBuilders(models) : undefined;
  // One builder per GPU model, in the order the models first need it; a vLLM-only stack's one CPU builder.
  const builders: BuilderPlan[] = onCpu?.builders ?? [];
  const builderOf = models.map((m) => {
    if (onCpu) return 0;
    const gpu = m.builderInstance.gpuModel;
    let i = builders.findIndex((b) => b.gpuModel === gpu);
    if (i < 0) {
      i = builders.length;
      builders.push({
        name: i === 0 ? "builder" : `builder-${gpu.toLowerCase()}`,
        instanceType: m.builderInstance.type,
        gpuModel: gpu,
        diskGiB: 0,
        models: [],
        smList: [],
        compileHost: { name: "", instanceType: "", vcpus: 0, diskGiB: 0, requiredFreeGiB: 0 },
      });
    }
    builders[i]?.models.push(m.model.name);
    return i;
  });
  for (const [i, b] of onCpu ? [] : builders.entries()) {
    const hosted = models.filter((_, j) => builderOf[j] === i);
    const explicit = hosted[0]?.config.build.builderDiskGiB;
    b.diskGiB = explicit ?? sharedBuilderDiskGiB(hosted.map((m) => m.model));
    // Every GPU that runs this builder's triton_with_ft: its models' serving GPUs and the builder's own
    // (a promoted stack has no builder: stackSmList).
    b.smList = [...new Set(hosted.flatMap((m) => stackSmList(m)))].sort((x, y) => x - y);
    const host = compileHostFor(b.smList);
    b.compileHost = {
      name: i === 0 ? "compiler" : `compiler-${b.gpuModel.toLowerCase()}`,
      instanceType: host.type,
      vcpus: host.vcpus,
      diskGiB: compileHostDiskGiB(),
      requiredFreeGiB: compileHostFreeDiskGiB(),
    };
  }
  // One Prometheus for the stack: a model that installs the operator brings it for every model.
  const operator = models.some((m) =>
    prometheusOperatorPresent(m.config.serving.serviceMonitor, m.config.serving.autoscaling),
  );
  const seenBuilder = new Set<number>();
  // The one place a model's plan is made: a model's, and its canary's (plan/canary.ts) through it.
  const planOf: ModelPlanner = (m, opts) => buildPlan(m, stackName, hashPath, opts);
  const canaries: CanaryPlanEntry[] = [];
  const entries = models.map((m, j): ModelPlanEntry => {
    const first = j === 0;
    const builder = builderOf[j] ?? 0;
    const ownHost = !seenBuilder.has(builder);
    seenBuilder.add(builder);
    const opts: PlanOptions = {
      // A promoted stack has no builder: each model's image carries its own GPU family's SMs (stackSmList).
      // A CPU builder builds no triton_with_ft: the serving GPU's SMs alone (the budgets' compile figure never runs).
      smList: onCpu
        ? smList([m.servingInstance])
        : m.config.build.promoteFrom
          ? stackSmList(m)
          : (builders[builder]?.smList ?? stackSmList(m)),
      ...(models.length > 1 ? { severalModels: true, prometheusOperator: operator } : {}),
      builderDiskGiB: builders[builder]?.diskGiB,
      ...(onCpu ? { cpuBuilder: onCpu.cpu } : {}),
      ...(first ? {} : { scope: m.model.name, steps: ownHost ? "builder-and-model" : "model" }),
    };
    const plan = planOf(m, opts);
    if (!m.canary) return { id: m.model.name, first, plan, builder, ownsBuilder: ownHost };
    const canary = canaryPlan(m, m.canary, plan, opts, planOf);
    canaries.push(canary);
    // Promoted: the model serves its canary's image and settings; its own steps stay as they are.
    if (m.canary.promote)
      return {
        id: m.model.name,
        first,
        plan: promotedPlan(m, m.canary, plan, opts, planOf),
        builder,
        ownsBuilder: ownHost,
      };
    // Live: the model's dashboard row and alerts cover its canary too.
    const scaling = {
      ...plan.renderInputs.scaling,
      canary: { deployment: workloadName(canary.plan.renderInputs.triton), weight: canary.weight },
    };
    return {
      id: m.model.name,
      first,
      plan: { ...plan, renderInputs: { ...plan.renderInputs, scaling } },
      builder,
      ownsBuilder: ownHost,
    };
  });
  const first = entries[0]?.plan.renderInputs.triton;
  const stackView = models[0];
  if (!first || !stackView) throw new Error("a stack plan needs at least one model");
  // One gateway routes to every model: its stack-wide settings are the same in every model's view
  // (config/models.ts); its routes, capacity and scaling come from all of them.
  const live = canaries.filter((c) => !c.promote);
  const routed = models.map((m) => (m.canary?.promote ? promotedView(m, m.canary) : m));
  const gatewaySide = gatewayPlan(
    stackView,
    routed,
    new Map(
      live.flatMap((c) => {
        const stack = models.find((m) => m.model.name === c.of)?.canary?.stack;
        return stack ? [[c.of, { stack, buildId: c.buildId, weight: c.weight, rollback: c.rollback }] as const] : [];
      }),
    ),
  );
  const gateway: GatewayWorkloadInput = {
    // Names the gateway: the first model's workload, so a one-model stack keeps its names.
    triton: first,
    config: gatewaySide.config,
    replicas: gatewaySide.replicas,
    autoscaled: gatewaySide.autoscaled,
    ...(gatewaySide.tlsCertificateArn ? { tlsCertificateArn: gatewaySide.tlsCertificateArn } : {}),
    ...(gatewaySide.systemNodeLabel ? { systemNodeLabel: gatewaySide.systemNodeLabel } : {}),
    ...(gatewaySide.store ? { store: gatewaySide.store } : {}),
    // What the models share carries the stack's tags: the NLB the gateway's Service brings too.
    awsTags: stackTags(PROJECT, stackName, stackView),
    // Kept off every model's GPU nodes; may reach every model's Triton, and only those.
    gpuInstanceTypes: [...new Set([...entries, ...live].map((e) => e.plan.serving.instanceType))],
    // A live canary's Triton after the models': the gateway reaches it too.
    tritons: [...entries, ...live].map((e) => ({
      modelName: e.plan.renderInputs.triton.modelName,
      stackName: e.plan.renderInputs.triton.stackName,
    })),
  };
  return {
    models: entries,
    builders,
    // A canary's images go to a repository of its own (its deployed tags are its own), kept when it is promoted.
    registry: registryPlan(namePrefix(stackName), [...entries.map((e) => e.id), ...canaries.map((c) => c.id)]),
    gateway: { workload: gateway, plan: gatewaySide },
    canaries,
  };
}
