/**
 * What AWS, Kubernetes and the Hugging Face Hub refuse, as data: each limit
 * carries the page it was read from and the date it was read, so a rule that
 * uses it can say where it comes from and a reader can re-check it.
 * Pure, no Pulumi.
 */

export interface Cited {
  /** The documentation page the value was read from. */
  source: string;
  /** When it was read (ISO date). */
  read: string;
}

/** AWS tag rules, the same across the services this stack tags (EC2, EKS, ECR, IAM). */
export const AWS_TAGS = {
  source: "https://docs.aws.amazon.com/tag-editor/latest/userguide/tagging.html (Tag naming limits and requirements)",
  read: "2026-11-25",
  maxPerResource: 50,
  maxKeyChars: 128,
  maxValueChars: 256,
  /** Letters, digits and spaces in UTF-8, and `_ . : / = + - @`: the set every tagging service accepts. */
  allowed: /^[\p{L}\p{Z}\p{N}_.:/=+\-@]*$/u,
  /** Reserved for AWS in keys and values, in any case; AWS's own tags do not count towards the 50. */
  reservedPrefix: "aws:",
} as const satisfies Cited & Record<string, unknown>;

/**
 * IAM compares the tag keys of users and roles without case (it keeps the
 * case written): `Team` and `team` are one key, the later replacing the
 * earlier. The stack tags its IAM roles with every tag.
 */
export const IAM_TAG_KEY_CASE = {
  source:
    "https://docs.aws.amazon.com/IAM/latest/UserGuide/id_tags.html (Rules for tagging in IAM and AWS STS: Case sensitivity)",
  read: "2026-11-27",
} as const satisfies Cited;

/**
 * gp3 volume sizes (the builder's and the GPU nodes' root volumes are gp3):
 * 1 GiB to 65,536 GiB (64 TiB). The EC2 API reference of CreateVolume and
 * ModifyVolume lists gp3 up to 65,536 GiB; older pages (the user guide's
 * volume-type table, the launch-template block-device reference) still say
 * 16 TiB, from before AWS raised the gp3 maximum in September 2025.
 */
export const EBS_GP3_GIB = {
  source: "https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CreateVolume.html (Size: gp3 1 - 65,536 GiB)",
  read: "2026-11-25",
  min: 1,
  max: 65_536,
} as const satisfies Cited & Record<string, unknown>;

/**
 * Hugging Face repo ids as huggingface_hub's `validate_repo_id` checks them
 * (src/huggingface_hub/utils/_validators.py at ee0a4510, 2026-08-20): word
 * characters, '-', '_' and '.'; the name 1 to 96 characters, not starting or
 * ending with '-' or '.'; no '--' or '..'; not ending in '.git'. The fetch
 * step downloads `<owner>/<name>`, so this stack requires the owner part too.
 */
export const HF_REPO_ID = {
  source: "https://github.com/huggingface/huggingface_hub/blob/main/src/huggingface_hub/utils/_validators.py",
  read: "2026-11-25",
  part: /^[A-Za-z0-9_](?:[A-Za-z0-9_.-]*[A-Za-z0-9_])?$/,
  maxNameChars: 96,
} as const satisfies Cited & Record<string, unknown>;

/** Kubernetes namespace names: DNS-1123 labels, and the namespaces a cluster starts with. */
export const K8S_NAMESPACES = {
  source: "https://kubernetes.io/docs/concepts/overview/working-with-objects/namespaces/",
  read: "2026-11-25",
  /** A DNS-1123 label: https://kubernetes.io/docs/concepts/overview/working-with-objects/names/#dns-label-names */
  label: /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/,
  maxChars: 63,
  /** The four initial namespaces: the stack creates its namespace, and these already exist. */
  initial: ["default", "kube-node-lease", "kube-public", "kube-system"],
  /** "Avoid creating namespaces with the prefix kube-, since it is reserved for Kubernetes system namespaces." */
  reservedPrefix: "kube-",
} as const satisfies Cited & Record<string, unknown>;

/** Amazon EKS service quotas that a config value can exceed. */
export const EKS_QUOTAS = {
  source: "https://docs.aws.amazon.com/eks/latest/userguide/service-quotas.html",
  read: "2026-11-25",
  /** "Nodes per managed node group", default 450 (adjustable through Service Quotas). */
  nodesPerManagedNodeGroup: 450,
  /** "Public endpoint access CIDR ranges per cluster", 40, not adjustable. */
  publicAccessCidrsPerCluster: 40,
} as const satisfies Cited & Record<string, unknown>;

/** "Inbound rules per security group", 60 for IPv4 by default: each CIDR is one rule per port. */
export const VPC_QUOTAS = {
  source: "https://docs.aws.amazon.com/vpc/latest/userguide/amazon-vpc-limits.html (Security groups)",
  read: "2026-11-25",
  inboundRulesPerSecurityGroup: 60,
} as const satisfies Cited & Record<string, unknown>;

/** EC2 key pairs: ImportKeyPair takes RSA and ED25519 public keys only (OpenSSH format). */
export const EC2_KEY_PAIRS = {
  source: "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/create-key-pairs.html",
  read: "2026-11-25",
  types: ["ssh-rsa", "ssh-ed25519"],
} as const satisfies Cited & Record<string, unknown>;

/** Private address space: RFC 1918 and RFC 6598 (shared address space), the ranges AWS recommends for a VPC. */
export const PRIVATE_RANGES = {
  source: "https://docs.aws.amazon.com/vpc/latest/userguide/vpc-cidr-blocks.html (IPv4 VPC CIDR blocks)",
  read: "2026-11-25",
  ranges: ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10"],
} as const satisfies Cited & Record<string, unknown>;

/**
 * ECR repository names (CreateRepository's repositoryName): 2 to 256
 * characters; lowercase letters and digits in groups joined by one of `.`
 * `_` `-`, optionally namespaced with `/`. A group cannot start or end with a
 * separator, and two separators cannot follow each other.
 */
export const ECR_REPOSITORY_NAME = {
  source: "https://docs.aws.amazon.com/AmazonECR/latest/APIReference/API_CreateRepository.html (repositoryName)",
  read: "2026-11-25",
  minChars: 2,
  maxChars: 256,
  pattern: /^(?:[a-z0-9]+(?:[._-][a-z0-9]+)*\/)*[a-z0-9]+(?:[._-][a-z0-9]+)*$/,
} as const satisfies Cited & Record<string, unknown>;

/**
 * Kubernetes object names the stack builds from model.name: Services need a
 * DNS-1035 label (at most 63 characters, lowercase alphanumerics and '-',
 * starting with a letter, ending alphanumeric); Deployments and the rest a
 * DNS-1123 subdomain (at most 253), which every such label also is.
 */
export const K8S_NAMES = {
  source: "https://kubernetes.io/docs/concepts/overview/working-with-objects/names/ (RFC 1035 Label Names)",
  read: "2026-11-25",
  dns1035Label: /^[a-z]([-a-z0-9]*[a-z0-9])?$/,
  maxLabelChars: 63,
} as const satisfies Cited & Record<string, unknown>;

/**
 * Pulumi stack references: `<stack>`, `<org>/<stack>` or `<org>/<project>/<stack>`,
 * each part alphanumerics, '-', '_' or '.', at most 100 characters (the Pulumi
 * CLI's ParseStackReference for the Cloud backend; DIY backends take the
 * same shape with org `organization`).
 */
export const PULUMI_STACK_REFERENCE = {
  source:
    "https://www.pulumi.com/docs/reference/pkg/nodejs/pulumi/pulumi/functions/automation.fullyQualifiedStackName.html and github.com/pulumi/pulumi pkg/backend/diy (ParseReference: 1 to 3 '/'-separated parts)",
  read: "2026-11-25",
  part: /^[A-Za-z0-9_.-]+$/,
  maxPartChars: 100,
  maxParts: 3,
} as const satisfies Cited & Record<string, unknown>;
