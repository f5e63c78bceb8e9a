/**
 * Pinned machine images: the EKS-optimized AL2023 AMI release Karpenter gives the GPU nodes
 * (render/karpenter.ts). `al2023@latest` would drift every node, and reload every model, on each
 * AMI release; raise the pin deliberately and Karpenter replaces nodes one at a time (the
 * NodePool's disruption budget). The builder host is not pinned here: build.builderAmiId pins it
 * per stack, unset it takes the newest Deep Learning AMI (components/builder.ts).
 */

/** A Karpenter AMI alias pin with where and when it was checked. */
export interface AmiAliasPin {
  /** The EC2NodeClass `amiSelectorTerms` alias, `<family>@<release>`. */
  alias: string;
  /** Where the release was checked: the upstream tag. */
  source: string;
  /** When it was last checked against upstream (ISO date). */
  checked: string;
}

/** awslabs/amazon-eks-ami tag v20260724 (2026-07-23); Karpenter resolves the NVIDIA variant for GPU instance types. */
export const GPU_NODE_AMI: AmiAliasPin = {
  alias: "al2023@v20260724",
  source: "https://github.com/awslabs/amazon-eks-ami/releases/tag/v20260724",
  checked: "2026-11-23",
};
