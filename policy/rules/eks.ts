/**
 * EKS baseline: the API endpoint private, or public only from listed CIDRs
 * that are not the whole internet; control-plane logs for api, audit and
 * authenticator; Kubernetes secrets encrypted with a customer-managed KMS key.
 * Stack-created KMS keys rotate and have a deletion window.
 *
 * Checked on both shapes a cluster takes: `eks:index:Cluster` (the @pulumi/eks
 * component's inputs, which the mock runtime sees) and `aws:eks/cluster:Cluster`
 * (the resource the component creates, which a real preview also shows).
 */
import type { ResourceRule, ResourceView } from "./types";
import { isWholeInternet, obj, str, strings } from "./values";

export const TYPES = {
  component: "eks:index:Cluster",
  cluster: "aws:eks/cluster:Cluster",
  kmsKey: "aws:kms/key:Key",
  addon: "aws:eks/addon:Addon",
} as const;

export const REQUIRED_LOG_TYPES = ["api", "audit", "authenticator"] as const;

/**
 * The settings the rules read, from either shape, with each one's defaults
 * (public endpoint on, private off, CIDRs 0.0.0.0/0). Getters, not values: at
 * preview a property can be unknown (the KMS key's ARN before the key
 * exists), and reading it makes @pulumi/policy skip only the rule that needs it.
 */
interface ClusterSettings {
  publicAccess(): boolean;
  publicCidrs(): string[];
  logTypes(): string[];
  secretsKeyArn(): string | undefined;
}

export function clusterSettings(r: ResourceView): ClusterSettings | undefined {
  const p = r.props;
  if (r.type === TYPES.component) {
    return {
      publicAccess: () => p.endpointPublicAccess !== false,
      publicCidrs: () => (p.publicAccessCidrs === undefined ? ["0.0.0.0/0"] : strings(p.publicAccessCidrs)),
      logTypes: () => strings(p.enabledClusterLogTypes),
      secretsKeyArn: () => str(p.encryptionConfigKeyArn),
    };
  }
  if (r.type === TYPES.cluster) {
    const vpc = () => obj(p.vpcConfig);
    return {
      publicAccess: () => vpc().endpointPublicAccess !== false,
      publicCidrs: () => (vpc().publicAccessCidrs === undefined ? ["0.0.0.0/0"] : strings(vpc().publicAccessCidrs)),
      logTypes: () => strings(p.enabledClusterLogTypes),
      secretsKeyArn: () => {
        const enc = obj(p.encryptionConfig);
        return strings(enc.resources).includes("secrets") ? str(obj(enc.provider).keyArn) : undefined;
      },
    };
  }
  return undefined;
}

export const endpointAccess: ResourceRule = {
  kind: "resource",
  name: "eks-endpoint-access",
  description: "The EKS API endpoint is private, or public only from listed CIDRs that are not the whole internet.",
  check(r) {
    const s = clusterSettings(r);
    if (!s || !s.publicAccess()) return [];
    const cidrs = s.publicCidrs();
    const open = cidrs.filter(isWholeInternet);
    if (cidrs.length > 0 && open.length === 0) return [];
    return [
      `EKS cluster '${r.name}' exposes its API endpoint to ${open.length > 0 ? open.join(", ") : "the whole internet"}. Fix: set cluster.endpointPublicAccessCidrs to the deployers' CIDRs, or cluster.endpointAccess: private when pulumi up runs inside the VPC.`,
    ];
  },
};

export const controlPlaneLogging: ResourceRule = {
  kind: "resource",
  name: "eks-control-plane-logging",
  description: `EKS control-plane logging covers at least ${REQUIRED_LOG_TYPES.join(", ")}.`,
  check(r) {
    const s = clusterSettings(r);
    if (!s) return [];
    const logged = s.logTypes();
    const missing = REQUIRED_LOG_TYPES.filter((t) => !logged.includes(t));
    if (missing.length === 0) return [];
    return [
      `EKS cluster '${r.name}' does not log ${missing.join(", ")} to CloudWatch. Fix: set enabledClusterLogTypes to include ${REQUIRED_LOG_TYPES.join(", ")}.`,
    ];
  },
};

/** AWS-managed key aliases (`alias/aws/...`) are not customer keys: their policy and rotation are not ours. */
function isCustomerKey(arn: string): boolean {
  return /^arn:aws[\w-]*:kms:[^:]+:\d{12}:key\/[\w-]+$/.test(arn);
}

export const secretsEncryption: ResourceRule = {
  kind: "resource",
  name: "eks-secrets-encryption",
  description: "Kubernetes secrets are envelope-encrypted with a customer-managed KMS key.",
  check(r) {
    const s = clusterSettings(r);
    if (!s) return [];
    const arn = s.secretsKeyArn();
    if (arn && isCustomerKey(arn)) return [];
    const what = arn ? `with ${arn}, which is not a customer-managed key ARN` : "with no KMS key";
    return [
      `EKS cluster '${r.name}' stores Kubernetes secrets ${what}. Fix: create an aws.kms.Key (rotation on) and pass its ARN as encryptionConfigKeyArn.`,
    ];
  },
};

/** AWS allows 7-30 days; a key deleted by mistake is recoverable within the window. */
export const KMS_DELETION_WINDOW = { min: 7, max: 30 } as const;

export const kmsKeyHygiene: ResourceRule = {
  kind: "resource",
  name: "kms-key-rotation-and-deletion-window",
  description: "Stack-created symmetric KMS keys rotate yearly and have an explicit deletion window.",
  check(r) {
    if (r.type !== TYPES.kmsKey) return [];
    const out: string[] = [];
    const spec = str(r.props.customerMasterKeySpec) ?? str(r.props.keySpec) ?? "SYMMETRIC_DEFAULT";
    if (spec === "SYMMETRIC_DEFAULT" && r.props.enableKeyRotation !== true)
      out.push(`KMS key '${r.name}' does not rotate. Fix: set enableKeyRotation: true.`);
    const window = r.props.deletionWindowInDays;
    if (typeof window !== "number" || window < KMS_DELETION_WINDOW.min || window > KMS_DELETION_WINDOW.max)
      out.push(
        `KMS key '${r.name}' has deletion window ${JSON.stringify(window ?? "unset")}. Fix: set deletionWindowInDays between ${KMS_DELETION_WINDOW.min} and ${KMS_DELETION_WINDOW.max}.`,
      );
    return out;
  },
};

/**
 * NetworkPolicies are inert unless something enforces them: on EKS, the VPC
 * CNI's network policy agent, off by default. A cluster the stack creates
 * turns it on (`vpcCniOptions.enableNetworkPolicy`, or the vpc-cni add-on's
 * `enableNetworkPolicy: "true"` configuration value).
 */
export const networkPolicyEnforcement: ResourceRule = {
  kind: "resource",
  name: "eks-network-policy-enforced",
  description: "Clusters the stack creates enforce Kubernetes NetworkPolicies (VPC CNI network policy agent on).",
  check(r) {
    if (r.type === TYPES.component) {
      const cni = obj(r.props.vpcCniOptions);
      if (cni.enableNetworkPolicy === true) return [];
      return [
        `EKS cluster '${r.name}' does not enforce NetworkPolicies (the VPC CNI's network policy agent is off), so the namespace's default-deny is inert. Fix: set vpcCniOptions: { enableNetworkPolicy: true }.`,
      ];
    }
    if (r.type === TYPES.addon && r.props.addonName === "vpc-cni") {
      const raw = r.props.configurationValues;
      let values: Record<string, unknown> = {};
      if (typeof raw === "string") {
        try {
          values = obj(JSON.parse(raw));
        } catch {
          values = {};
        }
      }
      if (String(values.enableNetworkPolicy) === "true") return [];
      return [
        `EKS add-on '${r.name}' (vpc-cni) does not enforce NetworkPolicies. Fix: set configurationValues to include "enableNetworkPolicy": "true".`,
      ];
    }
    return [];
  },
};

export const EKS_RULES = [
  endpointAccess,
  controlPlaneLogging,
  secretsEncryption,
  kmsKeyHygiene,
  networkPolicyEnforcement,
];
