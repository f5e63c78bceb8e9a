/**
 * The numbers behind the Kubernetes workload, derived from the resolved stack:
 * pods per node, node count, CPU/memory requests, /dev/shm, probe budgets,
 * drain and rollout timing (the plan's `kubernetes` section). Pure (no Pulumi)
 * so `synth`, the renderer and the Pulumi components share one source, and
 * every formula is unit-testable.
 * README "What happens during a model load" and "Rollout behaviour" document
 * each formula; keep both in step.
 */

import { GPU_MODELS } from "../catalog/gpus";
import {
  DECODE_BANDWIDTH_EFFICIENCY,
  NLB_DEREGISTRATION_PROPAGATION_SECONDS,
  NLB_PROVISION_SECONDS,
  NLB_TARGET_REGISTRATION_SECONDS,
  PULL_BYTES_PER_SECOND,
  SERVER_FIXED_START_SECONDS,
  VLLM_ASSUMED,
  WEIGHT_READ_BYTES_PER_SECOND,
} from "../catalog/timings";
import { parameterCount } from "../model/catalog";
import { GiB, TRITON_WITH_FT_IMAGE_BYTES, fp16WeightBytes } from "../model/sizing";
import { vllmDtypeBytes, vllmMemory } from "../model/vllmSizing";

import type { ResolvedStack } from "../config/stack";

import { NLB_HEALTH_CHECK, DCGM_EXPORTER_REQUESTS, PRE_PULL_REQUESTS } from "../conventions/workload";
const MiB = 1024 ** 2;

/** The startup budget is this multiple of the estimated load, so a slow disk does not trigger a restart loop. */
export const STARTUP_SAFETY_FACTOR = 2;

/** kubelet's pod cap used by the EKS AMIs' memory reservation formula on instances under 30 vCPUs, 250 above. */
export function eksMaxPods(vcpus: number): number {
  return vcpus > 30 ? 250 : 110;
}
/** kube-reserved CPU as the EKS AMIs compute it: 6 % of the first core, 1 % of the second, 0.5 % of the next two, 0.25 % of the rest. */
export function eksReservedCpuMillis(vcpus: number): number {
  const tiers: Array<[number, number]> = [
    [1, 0.06],
    [1, 0.01],
    [2, 0.005],
    [Infinity, 0.0025],
  ];
  let left = vcpus;
  let reserved = 0;
  for (const [cores, share] of tiers) {
    const n = Math.min(left, cores);
    reserved += n * 1000 * share;
    left -= n;
  }
  return Math.ceil(reserved);
}
/** kube-reserved memory as the EKS AMIs compute it (255 MiB + 11 MiB per pod), plus kubelet's 100 MiB hard-eviction threshold. */
export function eksReservedMemoryBytes(vcpus: number): number {
  return (255 + 11 * eksMaxPods(vcpus) + 100) * MiB;
}
/** Requests of the per-node DaemonSets on a GPU node: aws-node (VPC CNI), kube-proxy, the NVIDIA device plugin. */
export const DAEMONSET_CPU_MILLIS = 250;
export const DAEMONSET_MEMORY_BYTES = 512 * MiB;
/** ...plus the stack's own DaemonSet on every serving node, the DCGM exporter (render/observability.ts). */
export const GPU_NODE_DAEMONSET_CPU_MILLIS = DAEMONSET_CPU_MILLIS + DCGM_EXPORTER_REQUESTS.cpuMillis;
export const GPU_NODE_DAEMONSET_MEMORY_BYTES = DAEMONSET_MEMORY_BYTES + DCGM_EXPORTER_REQUESTS.memoryBytes;

/**
 * Whether the model's GPU nodes run the triton_with_ft pre-pull DaemonSet
 * (render/prePull.ts): an FT model whose nodes come with the cluster (a
 * DaemonSet launches no Karpenter node), in a stack that builds (a promoted
 * stack has no compile to overlap). The program, synth and the estimate
 * create or count it by this rule; the fit rule reserves its requests by it.
 */
export function prePullOnNodes(s: Pick<ResolvedStack, "vllm" | "config">): boolean {
  return !s.vllm && s.config.serving.autoscaling === undefined && !s.config.build.promoteFrom;
}

/** Requests of everything per-node on the model's GPU nodes: EKS's DaemonSets, the DCGM exporter, the pre-pull where it runs. */
export function nodeDaemonSetRequests(prePull: boolean): { cpuMillis: number; memoryBytes: number } {
  return {
    cpuMillis: GPU_NODE_DAEMONSET_CPU_MILLIS + (prePull ? PRE_PULL_REQUESTS.cpuMillis : 0),
    memoryBytes: GPU_NODE_DAEMONSET_MEMORY_BYTES + (prePull ? PRE_PULL_REQUESTS.memoryBytes : 0),
  };
}
/**
 * The nominal RAM AWS lists is more than the kernel reports (firmware and
 * kernel reservations take a few percent). Requests use this share of the
 * estimate so the pod always fits the node's real allocatable memory.
 */
export const ALLOCATABLE_MEMORY_FRACTION = 0.9;
/** Memory the Triton processes need besides /dev/shm: tritonserver, mpirun, two Python stubs with tokenizers, FT's host staging buffers. */
export const MIN_PROCESS_MEMORY_BYTES = 4 * GiB;

/** Python backend: per Python model, a shared-memory arena floor plus room for four batches of token tensors in flight. */
export const PYTHON_SHM_ARENA_BYTES = 64 * MiB;
export const PYTHON_MODELS = 2;
/** NCCL's per-channel buffer (NCCL_BUFFSIZE default) and channel cap; ring all-reduce talks to two neighbours per rank. */
export const NCCL_BUFFER_BYTES = 4 * MiB;
export const NCCL_MAX_CHANNELS = 32;

/** Fixed time mpirun and tritonserver take to tear down after the last request, before the kubelet's SIGKILL. */
export const SHUTDOWN_SECONDS = 15;

/** The workload's numbers, as planWorkload derives them (plan.json `kubernetes`). */
export interface WorkloadPlan {
  tensorParallel: number;
  replicas: number;
  podsPerNode: number;
  /** GPU nodes: room for every replica plus the one surge pod a rolling update adds. */
  gpuNodes: number;
  cpuRequestMillis: number;
  memoryRequestBytes: number;
  shmBytes: number;
  imageBytes: number;
  pullSeconds: number;
  loadSeconds: number;
  /** startupProbe budget: load only (the kubelet probes a container only after its image is pulled). */
  startupBudgetSeconds: number;
  /** One pod from scheduling to serving through the NLB: pull + startup budget + NLB registration. */
  podRolloutSeconds: number;
  /** Longest a request admitted before SIGTERM can take: one running batch plus one queued batch. */
  drainSeconds: number;
  preStopSeconds: number;
  terminationGracePeriodSeconds: number;
  /** NLB keeps flows to a draining target this long: as long as the pod still serves. */
  deregistrationDelaySeconds: number;
  timeouts: { deploymentCreateSeconds: number; deploymentUpdateSeconds: number; serviceSeconds: number };
}

export function planWorkload(s: ResolvedStack): WorkloadPlan {
  const sv = s.config.serving;
  const inst = s.servingInstance;
  const tp = sv.tensorParallel;
  // Validation guarantees tp <= the instance's GPU count, so at least one pod fits.
  const podsPerNode = Math.floor(inst.gpuCount / tp);
  // maxSurge 1 / maxUnavailable 0 needs one free GPU slot, or the rollout waits forever. A model that
  // sleeps (autoscaling min 0) rolls when awake, at one pod: its floor here is one.
  const gpuNodes = Math.ceil((Math.max(1, sv.autoscaling?.min ?? sv.replicas) + 1) / podsPerNode);

  const perNode = nodeDaemonSetRequests(prePullOnNodes(s));
  const cpuFree = inst.vcpus * 1000 - eksReservedCpuMillis(inst.vcpus) - perNode.cpuMillis;
  const cpuRequestMillis = Math.floor(cpuFree / podsPerNode / 100) * 100 - 100;
  const memFree =
    (inst.ramGiB * GiB - eksReservedMemoryBytes(inst.vcpus) - perNode.memoryBytes) * ALLOCATABLE_MEMORY_FRACTION;
  const memoryRequestBytes = Math.floor(memFree / podsPerNode / (256 * MiB)) * 256 * MiB;

  const shmBytes = shmSize(s);
  if (memoryRequestBytes < shmBytes + MIN_PROCESS_MEMORY_BYTES) {
    throw new Error(
      `${inst.type} leaves ${(memoryRequestBytes / GiB).toFixed(1)} GiB per pod, below /dev/shm (${(shmBytes / GiB).toFixed(1)} GiB) plus ${MIN_PROCESS_MEMORY_BYTES / GiB} GiB for the server processes`,
    );
  }

  const weights = servedWeightBytes(s);
  // A vLLM model's image is NGC's Triton with vLLM plus the checkpoint, and vLLM profiles
  // memory and captures CUDA graphs before the model is ready (catalog/timings.ts VLLM_ASSUMED).
  const vllm = s.engine === "vllm";
  const imageBytes = (vllm ? VLLM_ASSUMED.baseImageBytes : TRITON_WITH_FT_IMAGE_BYTES) + weights;
  const pullSeconds = Math.ceil(imageBytes / PULL_BYTES_PER_SECOND);
  const loadSeconds = Math.ceil(
    weights / WEIGHT_READ_BYTES_PER_SECOND + SERVER_FIXED_START_SECONDS + (vllm ? VLLM_ASSUMED.startupSeconds : 0),
  );
  const startupBudgetSeconds = Math.ceil(loadSeconds * STARTUP_SAFETY_FACTOR);
  const podRolloutSeconds = pullSeconds + startupBudgetSeconds + NLB_TARGET_REGISTRATION_SECONDS;

  const drainSeconds = drainTime(s);
  const preStopSeconds =
    NLB_HEALTH_CHECK.intervalSeconds * NLB_HEALTH_CHECK.unhealthyThreshold + NLB_DEREGISTRATION_PROPAGATION_SECONDS;
  const terminationGracePeriodSeconds = preStopSeconds + drainSeconds + SHUTDOWN_SECONDS;

  return {
    tensorParallel: tp,
    // With autoscaling the HPA owns the count; the plan sizes for its floor.
    replicas: sv.autoscaling?.min ?? sv.replicas,
    podsPerNode,
    gpuNodes,
    cpuRequestMillis,
    memoryRequestBytes,
    shmBytes,
    imageBytes,
    pullSeconds,
    loadSeconds,
    startupBudgetSeconds,
    podRolloutSeconds,
    drainSeconds,
    preStopSeconds,
    terminationGracePeriodSeconds,
    deregistrationDelaySeconds: terminationGracePeriodSeconds,
    timeouts: {
      // New pods start in parallel, each on its own node's pull.
      deploymentCreateSeconds: podRolloutSeconds,
      // maxSurge 1 replaces one pod at a time, and the old pod drains before its slot frees.
      deploymentUpdateSeconds: sv.replicas * (podRolloutSeconds + terminationGracePeriodSeconds),
      // The Service is created after the Deployment is ready; it waits for the NLB and its first healthy targets.
      serviceSeconds: NLB_PROVISION_SECONDS + NLB_TARGET_REGISTRATION_SECONDS,
    },
  };
}

/** The weights in the image, read once at load: FT's fp16 conversion, or the checkpoint in vLLM's dtype. */
export function servedWeightBytes(s: ResolvedStack): number {
  if (s.engine === "vllm" && s.vllm) return parameterCount(s.model.family, s.model.arch) * vllmDtypeBytes(s.vllm.dtype);
  return fp16WeightBytes(s.model.family, s.model.arch);
}

/**
 * vLLM's shared-memory message queues with tensor parallel > 1 (vLLM 0.32,
 * vllm/v1/executor/multiproc_executor.py and
 * vllm/distributed/device_communicators/shm_broadcast.py): the scheduler's
 * broadcast to the workers (VLLM_MQ_MAX_CHUNK_BYTES_MB, 16 MiB, × 10 chunks)
 * and one response queue per worker (24 MiB × 10 chunks, MessageQueue's defaults).
 */
export const VLLM_BROADCAST_QUEUE_BYTES = 16 * MiB * 10;
export const VLLM_WORKER_QUEUE_BYTES = 24 * MiB * 10;

/**
 * /dev/shm of a vLLM model: the one Python model's arena (a floor plus four
 * rounds of uint32-sized tensors for every sequence in flight at the longest
 * context) and, with TP > 1, vLLM's message queues and NCCL's shared-memory
 * transport (as FT's). Rounded up to 256 MiB.
 */
export function vllmShmSize(s: ResolvedStack): number {
  const v = s.vllm;
  if (!v) throw new Error("vllmShmSize: not a vLLM model");
  const python = PYTHON_SHM_ARENA_BYTES + 4 * v.maxNumSeqs * v.maxModelLen * 4;
  const tp = v.tensorParallel;
  const queues = tp > 1 ? VLLM_BROADCAST_QUEUE_BYTES + tp * VLLM_WORKER_QUEUE_BYTES : 0;
  const nccl = tp > 1 ? tp * 2 * NCCL_MAX_CHANNELS * NCCL_BUFFER_BYTES : 0;
  const unit = 256 * MiB;
  return Math.ceil((python + queues + nccl) / unit) * unit;
}

/**
 * /dev/shm: the Python backend's arenas (two Python models, each with a floor
 * plus four batches of uint32 token tensors at the longest sequence) and, with
 * TP > 1, NCCL's shared-memory transport (each rank's buffers to its two ring
 * neighbours on every channel). Rounded up to 256 MiB.
 */
export function shmSize(s: ResolvedStack): number {
  if (s.engine === "vllm") return vllmShmSize(s);
  const sv = s.config.serving;
  const tokens = sv.maxBatchSize * s.gemm.beamWidth * (sv.maxInputLen + sv.maxOutputLen);
  const python = PYTHON_MODELS * (PYTHON_SHM_ARENA_BYTES + 4 * tokens * 4);
  const tp = sv.tensorParallel;
  const nccl = tp > 1 ? tp * 2 * NCCL_MAX_CHANNELS * NCCL_BUFFER_BYTES : 0;
  const unit = 256 * MiB;
  return Math.ceil((python + nccl) / unit) * unit;
}

/**
 * A decode step streams this GPU's weights and KV cache once; the longest
 * admitted work is one running batch of maxOutputLen steps plus one queued
 * batch. Rounded up to whole seconds, at least 10 s.
 */
export function drainTime(s: ResolvedStack): number {
  // vLLM: its weights on one GPU and the KV cache it was given (resolve/vllm.ts).
  const bytesPerStep =
    s.engine === "vllm" && s.vllm
      ? vllmMemory(s.model.family, s.model.arch, s.vllm).weightsBytes + s.vllm.kvCacheGiB * GiB
      : s.memory.weightsBytes + s.memory.kvCacheBytes;
  const bandwidth = GPU_MODELS[s.servingInstance.gpuModel].memoryBandwidthGBps * 1e9 * DECODE_BANDWIDTH_EFFICIENCY;
  const stepSeconds = bytesPerStep / bandwidth;
  return Math.max(10, Math.ceil(2 * s.config.serving.maxOutputLen * stepSeconds));
}
