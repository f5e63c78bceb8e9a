/**
 * Where GPU pods may run: the taint the GPU nodes carry, the toleration that
 * lets a pod onto them, and the affinity that pins it to the serving instance
 * type. One source for the Triton pods, the GPU node group and the NVIDIA
 * device plugin, so the three cannot disagree.
 */
import type { IToleration } from "kubernetes-models/v1/Toleration";
import type { IAffinity } from "kubernetes-models/v1/Affinity";
import type { ITopologySpreadConstraint } from "kubernetes-models/v1/TopologySpreadConstraint";
import { GPU_RESOURCE } from "../catalog/gpus";

/** The taint the GPU node group carries; only pods that tolerate it land on the expensive nodes. */
export const GPU_TAINT = { key: GPU_RESOURCE, value: "true", effect: "NoSchedule" } as const;
/** Well-known node label every kubelet on EC2 sets: pins pods to the GPU model gpt_gemm was tuned on, in any cluster. */
export const INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type";

/** Tolerates the GPU taint (any value), and nothing else. */
export function gpuTolerations(): IToleration[] {
  return [{ key: GPU_TAINT.key, operator: "Exists", effect: GPU_TAINT.effect }];
}

/** A taint of a node group of its own (the one-model canary's), as a pod and a node spell it. */
export interface NodeTaint {
  key: string;
  value: string;
}

/** Tolerates exactly this taint (its key and value), with the NoSchedule effect every taint here has. */
export function ownNodesToleration(t: NodeTaint): IToleration {
  return { key: t.key, operator: "Equal", value: t.value, effect: "NoSchedule" };
}

/**
 * Requires a node of exactly these instance types (the GPU pods; systemNodeAffinity keeps others off it),
 * and with `modelLabel`, that model's own nodes.
 */
export function instanceTypeAffinity(
  instanceType: string | readonly string[],
  modelLabel?: { key: string; value: string },
): IAffinity {
  const types = typeof instanceType === "string" ? [instanceType] : [...instanceType];
  return {
    nodeAffinity: {
      requiredDuringSchedulingIgnoredDuringExecution: {
        nodeSelectorTerms: [
          {
            matchExpressions: [
              { key: INSTANCE_TYPE_LABEL, operator: "In", values: types },
              ...(modelLabel ? [{ key: modelLabel.key, operator: "In" as const, values: [modelLabel.value] }] : []),
            ],
          },
        ],
      },
    },
  };
}

/**
 * Pods of the system nodes (the gateway): never the serving GPU instance type,
 * and, when the stack labels its own system node group, only that group.
 */
export function systemNodeAffinity(
  gpuInstanceType: string | readonly string[],
  systemNodeLabel?: { key: string; value: string },
): IAffinity {
  return {
    nodeAffinity: {
      requiredDuringSchedulingIgnoredDuringExecution: {
        nodeSelectorTerms: [
          {
            matchExpressions: [
              ...(systemNodeLabel
                ? [{ key: systemNodeLabel.key, operator: "In" as const, values: [systemNodeLabel.value] }]
                : []),
              {
                key: INSTANCE_TYPE_LABEL,
                operator: "NotIn" as const,
                values: typeof gpuInstanceType === "string" ? [gpuInstanceType] : [...gpuInstanceType],
              },
            ],
          },
        ],
      },
    },
  };
}

/**
 * Replicas spread over zones, then nodes, as a preference only: a rollout or a
 * single-zone node group must still schedule (Triton and the gateway alike).
 */
export function spreadAcrossZonesAndNodes(selector: Record<string, string>): ITopologySpreadConstraint[] {
  return ["topology.kubernetes.io/zone", "kubernetes.io/hostname"].map((topologyKey) => ({
    maxSkew: 1,
    topologyKey,
    whenUnsatisfiable: "ScheduleAnyway",
    labelSelector: { matchLabels: selector },
  }));
}
