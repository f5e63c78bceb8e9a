/**
 * What an EKS node of a given instance type offers to pods: capacity as the
 * kubelet reports it and allocatable after kube-reserved and the hard-eviction
 * threshold, computed the way the EKS AMIs' bootstrap does. Pure, so the
 * validation rule ("a pod must fit a node") and the test cluster's fake nodes
 * (test/k8s) use one definition.
 */
import { GPU_RESOURCE } from "../catalog/gpus";
import {
  DAEMONSET_CPU_MILLIS,
  DAEMONSET_MEMORY_BYTES,
  GPU_NODE_DAEMONSET_CPU_MILLIS,
  GPU_NODE_DAEMONSET_MEMORY_BYTES,
  eksMaxPods,
  eksReservedCpuMillis,
  eksReservedMemoryBytes,
} from "./workload";

const MiB = 1024 ** 2;
const GiB = 1024 ** 3;

/**
 * The kernel reports less memory than the RAM AWS lists (firmware, the
 * kernel's own reservations and page tables): about 95-97 % on g5/p4 nodes.
 * The low end, so a pod that fits here fits the real node.
 */
export const KERNEL_VISIBLE_MEMORY_FRACTION = 0.95;

/** The facts about an instance type that shape a node; the GPU catalog and SYSTEM_NODE_INSTANCES provide them. */
export interface InstanceFacts {
  type: string;
  vcpus: number;
  ramGiB: number;
  gpuCount: number;
}

/** Non-GPU instance types the stack uses for its system node group. AWS's published vCPU/RAM. */
export const SYSTEM_NODE_INSTANCES: readonly InstanceFacts[] = [
  { type: "t3.large", vcpus: 2, ramGiB: 8, gpuCount: 0 },
  { type: "t3.xlarge", vcpus: 4, ramGiB: 16, gpuCount: 0 },
  { type: "m5.large", vcpus: 2, ramGiB: 8, gpuCount: 0 },
  { type: "m5.xlarge", vcpus: 4, ramGiB: 16, gpuCount: 0 },
];

export interface NodeResources {
  cpuMillis: number;
  memoryBytes: number;
  gpus: number;
  pods: number;
}

export interface NodeShape {
  instanceType: string;
  capacity: NodeResources;
  allocatable: NodeResources;
}

export function eksNodeShape(inst: InstanceFacts): NodeShape {
  // Whole MiB, as the kubelet rounds its reports.
  const memoryBytes = Math.floor((inst.ramGiB * GiB * KERNEL_VISIBLE_MEMORY_FRACTION) / MiB) * MiB;
  const capacity: NodeResources = {
    cpuMillis: inst.vcpus * 1000,
    memoryBytes,
    gpus: inst.gpuCount,
    pods: eksMaxPods(inst.vcpus),
  };
  return {
    instanceType: inst.type,
    capacity,
    allocatable: {
      cpuMillis: capacity.cpuMillis - eksReservedCpuMillis(inst.vcpus),
      memoryBytes: capacity.memoryBytes - eksReservedMemoryBytes(inst.vcpus),
      gpus: capacity.gpus,
      pods: capacity.pods,
    },
  };
}

/** Per-node DaemonSets every EKS GPU node runs (aws-node, kube-proxy, the NVIDIA device plugin). */
export const NODE_DAEMONSET_REQUESTS = {
  cpuMillis: DAEMONSET_CPU_MILLIS,
  memoryBytes: DAEMONSET_MEMORY_BYTES,
} as const;

/**
 * Everything per-node on every serving node: EKS's DaemonSets and the stack's DCGM
 * exporter. The nodes of an FT model with the pre-pull carry its requests too
 * (resolve/workload.ts nodeDaemonSetRequests).
 */
export const GPU_NODE_DAEMONSET_REQUESTS = {
  cpuMillis: GPU_NODE_DAEMONSET_CPU_MILLIS,
  memoryBytes: GPU_NODE_DAEMONSET_MEMORY_BYTES,
} as const;

export interface PodRequests {
  cpuMillis: number;
  memoryBytes: number;
  gpus: number;
}

export interface FitProblem {
  resource: "cpu" | "memory" | typeof GPU_RESOURCE;
  requested: number;
  allocatable: number;
  unit: "m" | "MiB" | "GPU";
}

/**
 * `podsPerNode` pods with these requests, next to the per-node DaemonSets
 * (`daemonSets`: resolve/workload.ts nodeDaemonSetRequests, which counts the
 * pre-pull where it runs), on one node of this shape: every resource that
 * does not fit. The scheduler refuses such a pod ("Insufficient <resource>")
 * and it stays Pending forever.
 */
export function podFitProblems(
  shape: NodeShape,
  pod: PodRequests,
  podsPerNode: number,
  daemonSets: { cpuMillis: number; memoryBytes: number },
): FitProblem[] {
  const a = shape.allocatable;
  const problems: FitProblem[] = [];
  const cpu = podsPerNode * pod.cpuMillis + daemonSets.cpuMillis;
  if (cpu > a.cpuMillis) problems.push({ resource: "cpu", requested: cpu, allocatable: a.cpuMillis, unit: "m" });
  const mem = podsPerNode * pod.memoryBytes + daemonSets.memoryBytes;
  if (mem > a.memoryBytes)
    problems.push({
      resource: "memory",
      requested: Math.ceil(mem / MiB),
      allocatable: Math.floor(a.memoryBytes / MiB),
      unit: "MiB",
    });
  const gpus = podsPerNode * pod.gpus;
  if (gpus > a.gpus) problems.push({ resource: GPU_RESOURCE, requested: gpus, allocatable: a.gpus, unit: "GPU" });
  return problems;
}

/**
 * The validation rule "the serving pods must fit a serving node", as one
 * message and fix (undefined when they fit). Requests above allocatable leave
 * a pod Pending forever, which a rollout only reports at its deadline.
 */
export function servingFitProblem(
  instance: InstanceFacts,
  pod: PodRequests,
  podsPerNode: number,
  daemonSets: { cpuMillis: number; memoryBytes: number },
): { message: string; fix: string } | undefined {
  const problems = podFitProblems(eksNodeShape(instance), pod, podsPerNode, daemonSets);
  if (problems.length === 0) return undefined;
  const what = problems
    .map(
      (p) =>
        `${p.resource} ${p.requested}${p.unit === "GPU" ? "" : p.unit} > allocatable ${p.allocatable}${p.unit === "GPU" ? "" : p.unit}`,
    )
    .join(", ");
  return {
    message: `${podsPerNode} serving pod(s) per ${instance.type} plus the node DaemonSets request more than the node offers (${what}), so a pod would stay Pending`,
    fix: "pick a larger serving.instanceType, or lower serving.tensorParallel / the batch and length limits that size the pod",
  };
}
