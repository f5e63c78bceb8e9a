/**
 * ECR retention that never expires what is deployed. "Keep the newest N" is
 * not enough: ECR orders images by push date, and a bake that is skipped
 * (its content tag already in ECR) keeps the old push date, so the deployed
 * image can be the oldest one and the first to go.
 *
 * So: every image the build steps output also carries a protected tag,
 * `live` (the image of the latest successful step) and `previous` (the one
 * before it, still serving while a rollout runs), and the image a workload
 * runs carries `deployed` once its rollout succeeded (`deployed-previous`:
 * the one it replaced). These four tags are the only
 * mutable ones in otherwise immutable repositories (IMMUTABLE_WITH_EXCLUSION),
 * and they are matched by the lifecycle policy's first rule, which never
 * expires anything: in ECR an image matched by a rule cannot be expired by a
 * lower-priority rule. Count-based expiry then applies only to the content
 * tags of each repository (prefix `bake-` for server images, `twf-` for
 * triton_with_ft, `gateway-` for the gateway), and untagged images go after a week.
 *
 * Pure: JSON documents for the component.
 */

/** Tags moved onto each output image by the build steps (scripts/remote/lib/ecr.sh ecr_protect). */
export const BUILT_TAGS = ["live", "previous"] as const;

/**
 * Tags moved onto the image a workload runs once its rollout succeeded
 * (scripts/remote/tag-deployed.sh, run by BuildPipeline.markDeployed after
 * the Deployment's await): what is deployed, and what was deployed before it
 * (the rollback target). Unlike `live`, which marks the newest build even
 * when its rollout failed, these name what actually ran.
 */
export const DEPLOYED_TAGS = ["deployed", "deployed-previous"] as const;

/** Every tag that keeps an image from expiry, and the only mutable ones. */
export const PROTECTED_TAGS = [...BUILT_TAGS, ...DEPLOYED_TAGS] as const;

/** Content-tag prefixes of the repositories; the step scripts tag with them. */
export const TAG_PREFIX = { tritonWithFt: "twf-", server: "bake-", gateway: "gateway-" } as const;

/** How many content-tagged images each repository keeps besides the protected ones. */
export const KEEP_IMAGES = { tritonWithFt: 5, server: 20, gateway: 20 } as const;

/**
 * triton_with_ft's recipe layers (scripts/remote/build-twf-layers.sh), in its
 * repository under a prefix of their own: not `twf-`, so a layers image never
 * counts among the newest KEEP_IMAGES.tritonWithFt and never pushes a
 * deployed image out of them. Their own rule keeps the newest few; an expired
 * one takes only its manifest, as its layers stay while a kept image (the full
 * triton_with_ft built beside it) references them. scripts/remote/twf/tags.sh
 * holds the same prefix (test/unit/ecrRetention.test.ts).
 */
export const LAYERS_TAG_PREFIX = "twflayers-";
/** How many layers images triton_with_ft's repository keeps: they serve one first build each. */
export const KEEP_LAYERS_IMAGES = 2;

/** Untagged images (interrupted pushes, superseded manifests) go after this many days. */
export const UNTAGGED_EXPIRY_DAYS = 7;

/** Above any count a repository reaches: the protecting rule selects images, it never expires them. */
export const NEVER = 10_000;

export interface LifecycleRule {
  rulePriority: number;
  description: string;
  selection: {
    tagStatus: "tagged" | "untagged" | "any";
    tagPrefixList?: string[];
    tagPatternList?: string[];
    countType: "imageCountMoreThan" | "sinceImagePushed";
    countUnit?: "days";
    countNumber: number;
  };
  action: { type: "expire" };
}

/**
 * One protecting rule per protected tag: a rule's tag list is an AND (an image
 * must carry every listed tag), so `["live", "previous"]` in one rule would
 * protect neither.
 */
export function lifecycleRules(repo: keyof typeof TAG_PREFIX): LifecycleRule[] {
  const protect = PROTECTED_TAGS.map((tag, i): LifecycleRule => ({
    rulePriority: i + 1,
    description: `protect the image tagged ${tag}: matched here, no later rule can expire it`,
    selection: { tagStatus: "tagged", tagPatternList: [tag], countType: "imageCountMoreThan", countNumber: NEVER },
    action: { type: "expire" },
  }));
  const next = protect.length + 1;
  return [
    ...protect,
    {
      rulePriority: next,
      description: `expire untagged images after ${UNTAGGED_EXPIRY_DAYS} days`,
      selection: {
        tagStatus: "untagged",
        countType: "sinceImagePushed",
        countUnit: "days",
        countNumber: UNTAGGED_EXPIRY_DAYS,
      },
      action: { type: "expire" },
    },
    {
      rulePriority: next + 1,
      description: `keep the newest ${KEEP_IMAGES[repo]} images tagged ${TAG_PREFIX[repo]}*`,
      selection: {
        tagStatus: "tagged",
        tagPrefixList: [TAG_PREFIX[repo]],
        countType: "imageCountMoreThan",
        countNumber: KEEP_IMAGES[repo],
      },
      action: { type: "expire" },
    },
    ...(repo === "tritonWithFt"
      ? [
          {
            rulePriority: next + 2,
            description: `keep the newest ${KEEP_LAYERS_IMAGES} recipe-layers images tagged ${LAYERS_TAG_PREFIX}*`,
            selection: {
              tagStatus: "tagged" as const,
              tagPrefixList: [LAYERS_TAG_PREFIX],
              countType: "imageCountMoreThan" as const,
              countNumber: KEEP_LAYERS_IMAGES,
            },
            action: { type: "expire" as const },
          },
        ]
      : []),
  ];
}

export function lifecyclePolicy(repo: keyof typeof TAG_PREFIX): string {
  return JSON.stringify({ rules: lifecycleRules(repo) });
}

/** Tag mutability: content tags immutable (they are content hashes), the protected tags movable. */
export const TAG_MUTABILITY = {
  imageTagMutability: "IMMUTABLE_WITH_EXCLUSION",
  imageTagMutabilityExclusionFilters: PROTECTED_TAGS.map((filter) => ({ filter, filterType: "WILDCARD" })),
} as const;
