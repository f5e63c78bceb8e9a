/** ECR baseline: scan on push, immutable tags, KMS encryption at rest, and a lifecycle policy per repository. */
import type { ResourceRule, StackRule } from "./types";
import { arr, obj, str } from "./values";

export const TYPES = {
  repository: "aws:ecr/repository:Repository",
  lifecyclePolicy: "aws:ecr/lifecyclePolicy:LifecyclePolicy",
} as const;

export const repositorySettings: ResourceRule = {
  kind: "resource",
  name: "ecr-repository-hardened",
  description: "ECR repositories scan on push, have immutable tags and are encrypted with KMS.",
  check(r) {
    if (r.type !== TYPES.repository) return [];
    const out: string[] = [];
    const repo = `ECR repository '${r.name}'`;
    if (obj(r.props.imageScanningConfiguration).scanOnPush !== true)
      out.push(`${repo} does not scan images on push. Fix: set imageScanningConfiguration.scanOnPush: true.`);
    // Exceptions by exact name (e.g. movable "live"/"previous" markers) keep every other tag immutable;
    // a wildcard exclusion could cover the content tags the pipeline deploys from.
    const exclusions = arr(r.props.imageTagMutabilityExclusionFilters).map((f) => String(obj(f).filter ?? ""));
    const wildExclusions = exclusions.filter((f) => f === "" || f.includes("*"));
    if (r.props.imageTagMutability === "IMMUTABLE_WITH_EXCLUSION" && exclusions.length > 0) {
      if (wildExclusions.length > 0)
        out.push(
          `${repo} exempts tags matching ${wildExclusions.map((f) => JSON.stringify(f)).join(", ")} from immutability, which can cover the content tags. Fix: exempt only exact tag names (e.g. "live"), or set imageTagMutability: "IMMUTABLE".`,
        );
    } else if (r.props.imageTagMutability !== "IMMUTABLE")
      out.push(
        `${repo} has mutable tags (imageTagMutability ${JSON.stringify(r.props.imageTagMutability ?? "MUTABLE")}), so a tag can be moved to other bytes. Fix: set imageTagMutability: "IMMUTABLE".`,
      );
    const enc = arr(r.props.encryptionConfigurations).map((e) => obj(e).encryptionType);
    if (!enc.includes("KMS"))
      out.push(`${repo} is not encrypted with KMS. Fix: set encryptionConfigurations: [{ encryptionType: "KMS" }].`);
    return out;
  },
};

/** Matches a lifecycle policy to its repository by the repository name both carry. */
export const repositoryLifecycle: StackRule = {
  kind: "stack",
  name: "ecr-lifecycle-policy",
  description: "Every ECR repository has a lifecycle policy.",
  check(resources) {
    const covered = new Set(
      resources
        .filter((r) => r.type === TYPES.lifecyclePolicy && str(r.props.policy))
        .map((r) => str(r.props.repository)),
    );
    return resources
      .filter((r) => r.type === TYPES.repository)
      .filter((r) => !covered.has(str(r.props.name) ?? r.name))
      .map((r) => ({
        resource: r,
        message: `ECR repository '${r.name}' (${str(r.props.name) ?? "unnamed"}) has no lifecycle policy, so images pile up forever. Fix: add an aws.ecr.LifecyclePolicy for it (expire untagged images, keep the newest N).`,
      }));
  },
};

export const ECR_RULES = [repositorySettings, repositoryLifecycle];
