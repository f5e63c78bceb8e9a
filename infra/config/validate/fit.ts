/**
 * Whether the model fits the hardware: the catalog knows the instance types,
 * the model's numbers agree with the requested lengths, tensor parallelism
 * splits the heads over the serving GPUs, weights and KV cache fit a GPU, the
 * builder can convert and tune for the serving GPU, and the planned pods fit
 * a serving node.
 */
import { findGpuInstance, gpuInstanceTypes, type GpuInstance } from "../../catalog/gpus";
import {
  USABLE_GPU_FRACTION,
  builderDiskGiB,
  conversionRamBytes,
  estimateGpuMemory,
  toGiB,
  type GpuMemoryEstimate,
} from "../../model/sizing";
import { servingFitProblem } from "../../plan/nodeShape";
import { planWorkload } from "../../plan/workload";
import type { WorkloadPlan } from "../../plan/workload";
import type { StackConfig } from "../schema";
import type { GemmShape, ResolvedModel, ResolvedStack } from "../stack";
import type { Add } from "./report";

/** The catalog's instance of this type, or undefined after reporting the known ones. */
export function knownInstance(type: string, key: string, add: Add): GpuInstance | undefined {
  const found = findGpuInstance(type);
  if (!found)
    add(key, type, "is not a GPU instance type this stack knows", `use one of: ${gpuInstanceTypes().join(", ")}`);
  return found;
}

/** The model's own numbers and the requested lengths agree. */
export function checkArchitecture(config: StackConfig, model: ResolvedModel, gemm: GemmShape, add: Add): void {
  const s = config.serving;
  const a = model.arch;
  if (s.maxInputLen + s.maxOutputLen > a.maxPositions) {
    add(
      "serving.maxInputLen",
      s.maxInputLen,
      `plus serving.maxOutputLen (${s.maxOutputLen}) exceeds the model's ${a.maxPositions} positions`,
      `keep maxInputLen + maxOutputLen <= ${a.maxPositions}`,
    );
  }
  if (gemm.maxInputLen > a.maxPositions) {
    add(
      "gemm.maxInputLen",
      gemm.maxInputLen,
      `exceeds the model's ${a.maxPositions} positions`,
      `use at most ${a.maxPositions}`,
    );
  }
  if (a.hidden % a.heads !== 0) {
    add(
      "model.arch.hidden",
      a.hidden,
      `is not a multiple of model.arch.heads (${a.heads})`,
      "copy hidden and heads from the model's config.json",
    );
  }
  if (a.rotaryDims > a.hidden / a.heads) {
    add(
      "model.arch.rotaryDims",
      a.rotaryDims,
      `exceeds the head size ${a.hidden / a.heads}`,
      "use rotary_dim (or rotary_pct × head size) from config.json",
    );
  }
}

/** The tensor-parallel size splits the heads and fits the serving instance. */
export function checkTensorParallel(
  config: StackConfig,
  model: ResolvedModel,
  servingInstance: GpuInstance | undefined,
  add: Add,
): void {
  const a = model.arch;
  const tp = config.serving.tensorParallel;
  if (a.heads % tp !== 0) {
    add(
      "serving.tensorParallel",
      tp,
      `does not divide the model's ${a.heads} attention heads`,
      `use one of: ${divisors(a.heads)
        .filter((d) => !servingInstance || d <= servingInstance.gpuCount)
        .join(", ")}`,
    );
  }
  if (servingInstance && tp > servingInstance.gpuCount) {
    add(
      "serving.tensorParallel",
      tp,
      `exceeds the ${servingInstance.gpuCount} GPU(s) of ${servingInstance.type}`,
      `use at most ${servingInstance.gpuCount}, or an instance type with at least ${tp} GPUs`,
    );
  }
}

/** Weights, KV cache and headroom fit one GPU of the serving instance; returns the estimate. */
export function checkGpuMemory(
  config: StackConfig,
  model: ResolvedModel,
  gemm: GemmShape,
  servingInstance: GpuInstance,
  add: Add,
): GpuMemoryEstimate {
  const s = config.serving;
  const tp = s.tensorParallel;
  const memory = estimateGpuMemory(model.family, model.arch, { ...s, tensorParallel: tp, beamWidth: gemm.beamWidth });
  const usable = servingInstance.gpuMemoryGiB * USABLE_GPU_FRACTION;
  if (toGiB(memory.totalBytes) > usable) {
    add(
      "serving.tensorParallel",
      tp,
      `leaves ${toGiB(memory.totalBytes)} GiB per GPU (weights ${toGiB(memory.weightsBytes)} GiB + KV cache ${toGiB(memory.kvCacheBytes)} GiB + headroom ${toGiB(memory.headroomBytes)} GiB) but ${servingInstance.type} has ${usable.toFixed(1)} GiB usable per GPU`,
      "raise serving.tensorParallel, lower serving.maxBatchSize / maxInputLen / maxOutputLen, or pick a GPU with more memory",
    );
  }
  return memory;
}

/** The builder has the RAM to convert in fp32 and the disk the model needs. */
export function checkBuilder(
  config: StackConfig,
  model: ResolvedModel,
  builderInstance: GpuInstance,
  servingInstance: GpuInstance | undefined,
  add: Add,
): void {
  const a = model.arch;
  const need = toGiB(conversionRamBytes(model.family, a));
  if (need > builderInstance.ramGiB) {
    add(
      "build.builderInstanceType",
      builderInstance.type,
      `has ${builderInstance.ramGiB} GiB RAM but converting this model needs about ${need} GiB (fp32 on the CPU)`,
      `use a ${servingInstance?.gpuModel ?? builderInstance.gpuModel} instance with at least ${Math.ceil(need)} GiB RAM`,
    );
  }
  const disk = config.build.builderDiskGiB;
  const needDisk = builderDiskGiB(model.family, a);
  if (disk !== undefined && disk < needDisk) {
    add(
      "build.builderDiskGiB",
      disk,
      `is below the ${needDisk} GiB this model needs on the builder`,
      `use at least ${needDisk}, or unset it`,
    );
  }
}

/** gpt_gemm tunes for the GPU it runs on: the builder must have the serving GPU model. */
export function checkSameGpu(servingInstance: GpuInstance, builderInstance: GpuInstance, add: Add): void {
  if (servingInstance.gpuModel === builderInstance.gpuModel) return;
  add(
    "build.builderInstanceType",
    builderInstance.type,
    `has ${builderInstance.gpuModel} GPUs but serving uses ${servingInstance.gpuModel}; gpt_gemm tuning is only valid on the serving GPU model`,
    `use an instance type with ${servingInstance.gpuModel} GPUs (${sameGpu(servingInstance).join(", ")})`,
  );
}

/**
 * The serving pods as the plan sizes them, next to the node DaemonSets, must
 * fit the serving node's EKS allocatable (infra/plan/nodeShape.ts): a pod that
 * does not stays Pending, and a rollout reports it only at its deadline.
 */
export function checkServingFits(stack: ResolvedStack, add: Add): void {
  let w: WorkloadPlan;
  try {
    w = planWorkload(stack);
  } catch (err) {
    add(
      "serving.instanceType",
      stack.servingInstance.type,
      (err as Error).message,
      "pick a serving.instanceType with more memory per GPU, or lower serving.maxBatchSize / maxInputLen / maxOutputLen",
    );
    return;
  }
  const pod = { cpuMillis: w.cpuRequestMillis, memoryBytes: w.memoryRequestBytes, gpus: w.tensorParallel };
  const problem = servingFitProblem(stack.servingInstance, pod, w.podsPerNode);
  if (problem) add("serving.instanceType", stack.servingInstance.type, problem.message, problem.fix);
}

function sameGpu(i: GpuInstance): string[] {
  return gpuInstanceTypes().filter((t) => findGpuInstance(t)?.gpuModel === i.gpuModel);
}

function divisors(n: number): number[] {
  return Array.from({ length: n }, (_, i) => i + 1).filter((d) => n % d === 0);
}
