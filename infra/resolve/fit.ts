/**
 * Whether the model fits the hardware: the catalog knows the instance types,
 * the model's numbers agree with the requested lengths, tensor parallelism
 * splits the heads over the serving GPUs, weights and KV cache fit a GPU, the
 * builder can convert and tune for the serving GPU, and the planned pods fit
 * a serving node.
 */
import {
  GPU_FAMILIES,
  findGpuInstance,
  gpuInstanceTypes,
  int8ModeUnsupported,
  type GpuInstance,
} from "../catalog/gpus";
import {
  USABLE_GPU_FRACTION,
  builderDiskGiB,
  vllmBuilderDiskGiB,
  nodeDiskGiB,
  conversionRamBytes,
  estimateGpuMemory,
  toGiB,
  type GpuMemoryEstimate,
} from "../model/sizing";
import { servingFitProblem } from "./nodeShape";
import { nodeDaemonSetRequests, planWorkload, prePullOnNodes } from "./workload";
import type { WorkloadPlan } from "./workload";
import type { StackConfig } from "../config/schema";
import type { GemmShape, ResolvedModel, ResolvedStack } from "../config/stack";
import type { Engine } from "../model/types";

import type { Add } from "../config/schema";
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
  engine: Engine = "ft",
  cpuBuilder = false,
): void {
  const a = model.arch;
  const need = toGiB(conversionRamBytes(model.family, a));
  // A vLLM model is not converted: its builder only fetches and bakes.
  if (engine === "ft" && need > builderInstance.ramGiB) {
    add(
      "build.builderInstanceType",
      builderInstance.type,
      `has ${builderInstance.ramGiB} GiB RAM but converting this model needs about ${need} GiB (fp32 on the CPU)`,
      `use a ${servingInstance?.gpuModel ?? builderInstance.gpuModel} instance with at least ${Math.ceil(need)} GiB RAM`,
    );
  }
  const disk = config.build.builderDiskGiB;
  const needDisk = cpuBuilder ? vllmBuilderDiskGiB([model]) : builderDiskGiB(model.family, a);
  if (disk !== undefined && disk < needDisk) {
    add(
      "build.builderDiskGiB",
      disk,
      `is below the ${needDisk} GiB this model needs on the ${cpuBuilder ? "CPU " : ""}builder`,
      `use at least ${needDisk}, or unset it`,
    );
  }
}

/**
 * The GPU nodes' root volume holds the server image (the triton_with_ft base
 * plus the fp16 weights) twice during a rollout: below the model's
 * nodeDiskGiB, the kubelet evicts pods on disk pressure or the image pull
 * fails. The serving-side mirror of the builder disk check above.
 */
export function checkNodeDisk(config: StackConfig, model: ResolvedModel, add: Add): void {
  const disk = config.cluster.nodeRootVolumeGiB;
  const needDisk = nodeDiskGiB(model.family, model.arch);
  if (disk !== undefined && disk < needDisk) {
    add(
      "cluster.nodeRootVolumeGiB",
      disk,
      `is below the ${needDisk} GiB this model needs on a GPU node (the server image, twice during a rollout)`,
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
 * fit the serving node's EKS allocatable (infra/resolve/nodeShape.ts): a pod that
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
  const problem = servingFitProblem(
    stack.servingInstance,
    pod,
    w.podsPerNode,
    nodeDaemonSetRequests(prePullOnNodes(stack)),
  );
  if (problem) add("serving.instanceType", stack.servingInstance.type, problem.message, problem.fix);
}

/**
 * FT's int8_mode: read only for model_type GPT (other families would silently
 * serve fp16), mode 2 needs SmoothQuant scales the plan's conversion does not
 * produce, and the int8 CUTLASS kernels refuse sm_90 (catalog/gpus.ts).
 */
export function checkInt8Mode(
  config: StackConfig,
  model: ResolvedModel,
  servingInstance: GpuInstance | undefined,
  add: Add,
): void {
  const mode = config.serving.int8Mode;
  if (mode === 0) return;
  if (model.family !== "gpt") {
    add(
      "serving.int8Mode",
      mode,
      `is read by FT only for model_type GPT; a ${model.family} model would silently serve fp16`,
      "remove serving.int8Mode (or set it to 0)",
    );
  }
  if (mode === 2) {
    add(
      "serving.int8Mode",
      mode,
      "is SmoothQuant int8, which needs a calibrated checkpoint (scales per layer) that this stack's conversion does not produce",
      "use 1 (weight-only int8, quantized at load) or 0",
    );
  }
  const reason = servingInstance ? int8ModeUnsupported(mode, servingInstance.sm) : undefined;
  if (servingInstance && reason) {
    add(
      "serving.int8Mode",
      mode,
      `cannot run on ${servingInstance.type} (${servingInstance.gpuModel}, sm_${servingInstance.sm}): ${reason}`,
      "set serving.int8Mode to 0 (fp16) on H100/H200, or serve int8 on an sm_80/86/89 GPU (p4d, g5, g6, g6e)",
    );
  }
}

/**
 * Families EC2 sells mainly as Capacity Blocks and reservations (catalog/gpus.ts
 * GPU_FAMILIES): without a reservation the GPU nodes may never launch. A warning,
 * not a refusal: accounts with on-demand quota for them do get instances in some
 * regions, and this stack cannot see the account's quota or the region's stock.
 */
export function checkCapacity(config: StackConfig, servingInstance: GpuInstance, warn: Add): void {
  if (GPU_FAMILIES[servingInstance.family]?.capacity !== "reservation") return;
  const a = config.serving.autoscaling;
  if (!a) {
    warn(
      "serving.instanceType",
      servingInstance.type,
      `is sold mainly through EC2 Capacity Blocks for ML and reservations; the fixed GPU node group asks for plain on-demand capacity, which often fails with InsufficientInstanceCapacity`,
      "use serving.autoscaling with capacityReservationIds (Karpenter launches into the reservation or Capacity Block), or make sure the account's on-demand quota and the region's capacity cover it",
    );
  } else if (a.capacityReservationIds.length === 0) {
    warn(
      "serving.autoscaling.capacityReservationIds",
      a.capacityReservationIds,
      `is empty, but ${servingInstance.type} is sold mainly through EC2 Capacity Blocks for ML and reservations: Karpenter's ${a.capacityType} launches may find no capacity and the pods stay Pending`,
      "add the ids (cr-...) of your Capacity Block or On-Demand Capacity Reservation for this instance type",
    );
  }
}

function sameGpu(i: GpuInstance): string[] {
  return gpuInstanceTypes().filter((t) => findGpuInstance(t)?.gpuModel === i.gpuModel);
}

function divisors(n: number): number[] {
  return Array.from({ length: n }, (_, i) => i + 1).filter((d) => n % d === 0);
}
