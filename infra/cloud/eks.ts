/**
 * What a created EKS cluster runs besides the control plane: the node pools'
 * AMI types and sizes, and the pinned Helm charts (NVIDIA device plugin, AWS
 * Load Balancer Controller) with their values. Pure.
 */
import { GPU_TAINT, gpuTolerations, instanceTypeAffinity } from "../render/scheduling";

/** The system node group's label, which the gateway selects (conventions/workload.ts). */
export { SYSTEM_NODE_LABEL } from "../conventions/workload";

/** Pinned Helm charts, with where each version was checked (infra/catalog/charts.ts). */
export { CHARTS } from "../catalog/charts";

/** EKS AMI type with the NVIDIA driver; it does not advertise nvidia.com/gpu without the device plugin. */
export const GPU_AMI_TYPE = "AL2023_x86_64_NVIDIA";
/**
 * Untainted nodes for CoreDNS and the load balancer controller, which do not
 * tolerate the GPU taint. Two small nodes in different AZs keep both highly
 * available; their size does not depend on the model.
 */
export const SYSTEM_NODES = {
  instanceType: "t3.large",
  count: 2,
  amiType: "AL2023_x86_64_STANDARD",
  diskGiB: 20,
} as const;

/** Control-plane logs shipped to CloudWatch: API calls, the audit trail, and who authenticated. */
export const CONTROL_PLANE_LOG_TYPES = ["api", "audit", "authenticator"] as const;

/** Root device of the EKS AL2023 AMIs, where a node group's launch template puts the encrypted volume. */
export const NODE_ROOT_DEVICE = "/dev/xvda";

/**
 * Node launch template settings: IMDSv2 only with a hop limit of 1, so pods
 * cannot reach the node role's credentials (the load balancer controller uses
 * IRSA and is given region and VPC explicitly; the VPC CNI runs on the host
 * network), and an encrypted gp3 root volume.
 */
export function nodeLaunchTemplate(diskGiB: number): {
  metadataOptions: { httpEndpoint: "enabled"; httpTokens: "required"; httpPutResponseHopLimit: 1 };
  blockDeviceMappings: Array<{
    deviceName: string;
    ebs: { volumeSize: number; volumeType: "gp3"; encrypted: "true"; deleteOnTermination: "true" };
  }>;
} {
  return {
    metadataOptions: { httpEndpoint: "enabled", httpTokens: "required", httpPutResponseHopLimit: 1 },
    blockDeviceMappings: [
      {
        deviceName: NODE_ROOT_DEVICE,
        ebs: { volumeSize: diskGiB, volumeType: "gp3", encrypted: "true", deleteOnTermination: "true" },
      },
    ],
  };
}

/** The KMS key that envelope-encrypts Kubernetes secrets: yearly rotation; 30 days to undo a deletion. */
export const SECRETS_KEY = { enableKeyRotation: true, deletionWindowInDays: 30 } as const;
/** Node label identifying the GPU pool (also set by NVIDIA's feature discovery, which this stack does not install). */
export const GPU_NODE_LABEL = "nvidia.com/gpu.present";

/**
 * The labels of a fixed GPU node group: the GPU pool's, and in a stack of
 * several models its model's (conventions/workload.ts MODEL_NODE_LABEL_KEY),
 * which that model's pods require. One source for the node group and the
 * k8s suite's nodes.
 */
export function gpuNodeGroupLabels(modelLabel?: { key: string; value: string }): Record<string, string> {
  return { [GPU_NODE_LABEL]: "true", ...(modelLabel ? { [modelLabel.key]: modelLabel.value } : {}) };
}

/** The GPU taint as the EKS node-group API spells it. */
export const GPU_NODE_TAINT = { key: GPU_TAINT.key, value: GPU_TAINT.value, effect: "NO_SCHEDULE" } as const;

/**
 * The device plugin's values. The chart's default affinity wants NVIDIA
 * feature-discovery labels this stack does not install: select the serving
 * instance type instead, and tolerate the GPU taint like the Triton pods,
 * and any taint of a node group's own (`ownTaintKeys`, the one-model canary's),
 * so the canary's nodes advertise their GPUs too.
 */
export function devicePluginValues(
  instanceType: string | readonly string[],
  ownTaintKeys: readonly string[] = [],
): Record<string, unknown> {
  return {
    affinity: instanceTypeAffinity(instanceType),
    tolerations: [
      ...gpuTolerations(),
      ...ownTaintKeys.map((key) => ({ key, operator: "Exists" as const, effect: GPU_TAINT.effect })),
    ],
  };
}
