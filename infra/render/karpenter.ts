/**
 * Karpenter objects that give the Triton pods their GPU nodes: one NodePool
 * (serving instance type, GPU taint, capacity type, limits from
 * serving.autoscaling.max, empty-node consolidation) and its EC2NodeClass
 * (EKS AL2023 AMI, whose alias resolves to the NVIDIA variant for GPU
 * instances; the derived root volume; IMDSv2 with hop limit 1; capacity
 * reservations). Validated against Karpenter's CRDs (test/data/crds/).
 * Pure: the cluster-specific references (node role, subnets, security groups)
 * come in as values, which the component passes as Pulumi Outputs.
 */
import { GPU_NODE_AMI } from "../catalog/amis";
import { GPU_MODELS, type GpuInstance } from "../catalog/gpus";
import type { CapacityType } from "../config/autoscaling";
import type { AutoscalingPlan } from "../resolve/scaling";

/** Nodes live at most 30 days, so they pick up a new pinned AMI and kernel patches even without a change here. */
export const NODE_EXPIRE_AFTER = "720h";
/** The root device of the AL2023 AMIs. */
export const ROOT_DEVICE = "/dev/xvda";
/**
 * gp3 root volume throughput and IOPS: image extraction and the weight read at
 * load are disk-bound, and nodeadm's FastImagePull needs at least 600 MiB/s (its
 * docs suggest up to 1000 MiB/s and 16k IOPS, gp3's maxima for throughput).
 */
export const ROOT_VOLUME_THROUGHPUT_MIBPS = 1000;
export const ROOT_VOLUME_IOPS = 16000;

/** nodeadm NodeConfig turning on parallel pull and unpack (amazon-eks-ami nodeadm feature gate FastImagePull). */
export const FAST_IMAGE_PULL_USER_DATA = [
  "apiVersion: node.eks.aws/v1alpha1",
  "kind: NodeConfig",
  "spec:",
  "  featureGates:",
  "    FastImagePull: true",
  "",
].join("\n");

export interface NodeRequirement {
  key: string;
  operator: "In";
  values: string[];
}

export interface NodePool {
  apiVersion: "karpenter.sh/v1";
  kind: "NodePool";
  metadata: { name: string; labels: Record<string, string> };
  spec: {
    template: {
      metadata: { labels: Record<string, string> };
      spec: {
        nodeClassRef: { group: "karpenter.k8s.aws"; kind: "EC2NodeClass"; name: string };
        requirements: NodeRequirement[];
        taints: Array<{ key: string; value: string; effect: "NoSchedule" }>;
        expireAfter: string;
      };
    };
    limits: Record<string, string>;
    disruption: {
      consolidationPolicy: "WhenEmpty";
      consolidateAfter: string;
      budgets: Array<{ nodes: string }>;
    };
  };
}

export interface EC2NodeClass {
  apiVersion: "karpenter.k8s.aws/v1";
  kind: "EC2NodeClass";
  metadata: { name: string; labels: Record<string, string> };
  spec: {
    amiSelectorTerms: Array<{ alias: string }>;
    role: string;
    subnetSelectorTerms: Array<{ id: string }>;
    securityGroupSelectorTerms: Array<{ id: string }>;
    capacityReservationSelectorTerms?: Array<{ id: string }>;
    blockDeviceMappings: Array<{
      deviceName: string;
      rootVolume: boolean;
      ebs: {
        volumeSize: string;
        volumeType: "gp3";
        iops: number;
        throughput: number;
        encrypted: boolean;
        deleteOnTermination: boolean;
      };
    }>;
    metadataOptions: {
      httpEndpoint: "enabled";
      httpProtocolIPv6: "disabled";
      httpPutResponseHopLimit: number;
      httpTokens: "required";
    };
    tags: Record<string, string>;
    userData?: string;
  };
}

/** Where the nodes go and who they are: cluster-specific, resolved by the component. */
export interface NodeClassRefs {
  /** IAM role name of the nodes (Karpenter creates the instance profile). */
  role: string;
  subnetIds: string[];
  securityGroupIds: string[];
  tags: Record<string, string>;
}

export interface KarpenterInput {
  name: string;
  labels: Record<string, string>;
  instance: GpuInstance;
  plan: AutoscalingPlan;
  capacityType: CapacityType;
  capacityReservationIds: string[];
  fastImagePull: boolean;
  rootVolumeGiB: number;
  taint: { key: string; value: string; effect: "NoSchedule" };
  /** Labels every GPU node carries (the workload and the DCGM exporter select on them). */
  nodeLabels: Record<string, string>;
  refs: NodeClassRefs;
}

/** Karpenter capacity types in preference order: reservations first, spot falls back to on-demand. */
export function capacityTypes(type: CapacityType, reservations: number): string[] {
  if (type === "spot") return ["spot", "on-demand"];
  return reservations > 0 ? ["reserved", "on-demand"] : ["on-demand"];
}

export function renderNodePool(i: KarpenterInput): NodePool {
  const l = i.plan.nodeLimits;
  return {
    apiVersion: "karpenter.sh/v1",
    kind: "NodePool",
    metadata: { name: i.name, labels: i.labels },
    spec: {
      template: {
        metadata: { labels: i.nodeLabels },
        spec: {
          nodeClassRef: { group: "karpenter.k8s.aws", kind: "EC2NodeClass", name: i.name },
          requirements: [
            // One instance type: gpt_gemm tuned the GEMMs for this GPU model, and the pod requests are sized for it.
            { key: "node.kubernetes.io/instance-type", operator: "In", values: [i.instance.type] },
            // Redundant with the type, on purpose: they say in the NodePool what the
            // plan relies on (the family's capacity rules, the GPU gpt_gemm tuned for).
            { key: "karpenter.k8s.aws/instance-family", operator: "In", values: [i.instance.family] },
            {
              key: "karpenter.k8s.aws/instance-gpu-name",
              operator: "In",
              values: [GPU_MODELS[i.instance.gpuModel].karpenterGpuName],
            },
            {
              key: "karpenter.sh/capacity-type",
              operator: "In",
              values: capacityTypes(i.capacityType, i.capacityReservationIds.length),
            },
            { key: "kubernetes.io/arch", operator: "In", values: ["amd64"] },
            { key: "kubernetes.io/os", operator: "In", values: ["linux"] },
          ],
          taints: [i.taint],
          expireAfter: NODE_EXPIRE_AFTER,
        },
      },
      // Karpenter stops launching when the pool's nodes would exceed any of these.
      limits: { cpu: String(l.cpu), memory: `${l.memoryGiB}Gi`, "nvidia.com/gpu": String(l.gpus) },
      disruption: {
        // A loaded model is expensive to move: only empty nodes are removed, and only
        // after the image-pull time, so a pod that comes back soon finds the image cached.
        consolidationPolicy: "WhenEmpty",
        consolidateAfter: `${i.plan.consolidateAfterSeconds}s`,
        // Drift and expiry replace one node at a time.
        budgets: [{ nodes: "1" }],
      },
    },
  };
}

export function renderEC2NodeClass(i: KarpenterInput): EC2NodeClass {
  const spec: EC2NodeClass["spec"] = {
    // The pinned release (infra/catalog/amis.ts): Karpenter replaces nodes one at a time when it moves (budgets above).
    amiSelectorTerms: [{ alias: GPU_NODE_AMI.alias }],
    role: i.refs.role,
    subnetSelectorTerms: i.refs.subnetIds.map((id) => ({ id })),
    securityGroupSelectorTerms: i.refs.securityGroupIds.map((id) => ({ id })),
    blockDeviceMappings: [
      {
        deviceName: ROOT_DEVICE,
        rootVolume: true,
        ebs: {
          // Two server images side by side (model/sizing.ts nodeDiskGiB, or cluster.nodeRootVolumeGiB).
          volumeSize: `${i.rootVolumeGiB}Gi`,
          volumeType: "gp3",
          iops: ROOT_VOLUME_IOPS,
          throughput: ROOT_VOLUME_THROUGHPUT_MIBPS,
          encrypted: true,
          deleteOnTermination: true,
        },
      },
    ],
    // Pods cannot reach the node's instance credentials (IMDSv2, one hop).
    metadataOptions: {
      httpEndpoint: "enabled",
      httpProtocolIPv6: "disabled",
      httpPutResponseHopLimit: 1,
      httpTokens: "required",
    },
    tags: i.refs.tags,
  };
  // Karpenter merges this NodeConfig after its own (its values win on conflicts).
  if (i.fastImagePull) spec.userData = FAST_IMAGE_PULL_USER_DATA;
  if (i.capacityReservationIds.length > 0) {
    spec.capacityReservationSelectorTerms = i.capacityReservationIds.map((id) => ({ id }));
  }
  return {
    apiVersion: "karpenter.k8s.aws/v1",
    kind: "EC2NodeClass",
    metadata: { name: i.name, labels: i.labels },
    spec,
  };
}
