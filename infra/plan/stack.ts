/**
 * The plan of a whole stack: one model plan per model (infra/plan/index.ts,
 * unchanged for one model) and what the models share: the builders (one per
 * GPU model the models serve on: gpt_gemm tunes for the GPU that serves),
 * triton_with_ft (built once, for every GPU of the stack) and the gateway.
 *
 * The first model is the stack's "first": its plan is exactly a one-model
 * stack's (same steps, paths and hashes), its pipeline builds the shared
 * images, and its resources keep the one-model names. Every further model's
 * steps are scoped to its id (plan/scope.ts) and run on its GPU model's builder.
 *
 * Pure: no Pulumi.
 */
import { prometheusOperatorPresent } from "../config/autoscaling";
import { sharedBuilderDiskGiB } from "../model/sizing";
import type { ResolvedStack } from "../config/stack";
import { buildPlan, gatewayPlan, gatewayRoute, type GatewayPlan, type Plan, type PlanOptions } from "./index";
import { namePrefix } from "../naming";
import { registryPlan, type RegistryPlan } from "./registry";
import type { PathHasher } from "./stepGraph";
import { stackSmList } from "./steps";
import type { GatewayWorkloadInput } from "../render/gatewayManifests";

export interface ModelPlanEntry {
  /** The model id clients send (the one-model form's model name). */
  id: string;
  /** The stack's first model: one-model names and paths, and the shared build steps. */
  first: boolean;
  plan: Plan;
  /** Index into StackPlan.builders. */
  builder: number;
}

export interface BuilderPlan {
  /** Component name: `builder` for the first model's (a one-model stack's name), `builder-<gpu>` for the others. */
  name: string;
  instanceType: string;
  gpuModel: string;
  diskGiB: number;
  /** Ids of the models converted and tuned here, first to last. */
  models: string[];
}

export interface StackPlan {
  models: ModelPlanEntry[];
  /** The one gateway in front of every model (its names are the first model's, as in a one-model stack). */
  gateway: { workload: GatewayWorkloadInput; plan: GatewayPlan };
  builders: BuilderPlan[];
  /** The ECR repositories: the shared ones and one server repository per model (plan/registry.ts). */
  registry: RegistryPlan;
  /** CUDA archs of the one triton_with_ft build: every serving and builder GPU of the stack. */
  smList: number[];
}

/** The component name of a further model's resource: `<base>-<id>`; the first model keeps `<base>`. */
export function modelResourceName(base: string, entry: Pick<ModelPlanEntry, "id" | "first">): string {
  return entry.first ? base : `${base}-${entry.id}`;
}

export function buildStackPlan(models: readonly ResolvedStack[], stackName: string, hashPath: PathHasher): StackPlan {
  if (models.length === 0) throw new Error("a stack plan needs at least one model");
  // Every model's serving GPU and its builder's (a promoted stack has no builder: stackSmList).
  const sms = [...new Set(models.flatMap((m) => stackSmList(m)))].sort((a, b) => a - b);
  // One builder per GPU model, in the order the models first need it.
  const builders: BuilderPlan[] = [];
  const builderOf = models.map((m) => {
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
      });
    }
    builders[i]?.models.push(m.model.name);
    return i;
  });
  for (const [i, b] of builders.entries()) {
    const hosted = models.filter((_, j) => builderOf[j] === i);
    const explicit = hosted[0]?.config.build.builderDiskGiB;
    b.diskGiB = explicit ?? sharedBuilderDiskGiB(hosted.map((m) => m.model));
  }
  // One Prometheus for the stack: a model that installs the operator brings it for every model.
  const operator = models.some((m) =>
    prometheusOperatorPresent(m.config.serving.serviceMonitor, m.config.serving.autoscaling),
  );
  const seenBuilder = new Set<number>();
  const entries = models.map((m, j): ModelPlanEntry => {
    const first = j === 0;
    const builder = builderOf[j] ?? 0;
    const ownHost = !seenBuilder.has(builder);
    seenBuilder.add(builder);
    const opts: PlanOptions = {
      smList: sms,
      ...(models.length > 1 ? { severalModels: true, prometheusOperator: operator } : {}),
      builderDiskGiB: builders[builder]?.diskGiB,
      ...(first ? {} : { scope: m.model.name, steps: ownHost ? "model-and-host" : "model" }),
    };
    return { id: m.model.name, first, plan: buildPlan(m, stackName, hashPath, opts), builder };
  });
  const firstPlan = entries[0]?.plan;
  if (!firstPlan) throw new Error("a stack plan needs at least one model");
  const gpuTypes = [...new Set(entries.map((e) => e.plan.serving.instanceType))];
  // One gateway routes to every model; its stack-wide settings (consumers, replicas, TLS) are the same in every view.
  const firstModel = models[0];
  if (!firstModel) throw new Error("a stack plan needs at least one model");
  const gatewaySide = gatewayPlan(firstModel, models.map(gatewayRoute));
  const gateway: GatewayWorkloadInput = {
    ...firstPlan.renderInputs.gateway,
    ...gatewaySide,
    // Kept off every model's GPU nodes, not only the first's; may reach every model's Triton, and only those.
    ...(entries.length > 1
      ? {
          gpuInstanceTypes: gpuTypes,
          tritons: entries.map((e) => ({
            modelName: e.plan.renderInputs.triton.modelName,
            stackName: e.plan.renderInputs.triton.stackName,
          })),
        }
      : {}),
  };
  return {
    models: entries,
    builders,
    registry: registryPlan(
      namePrefix(stackName),
      entries.map((e) => e.id),
    ),
    smList: sms,
    gateway: { workload: gateway, plan: gatewaySide },
  };
}
