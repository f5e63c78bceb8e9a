/** ECR retention: how many images each repository keeps, as a lifecycle policy document. Pure JSON. */

/** How many tagged images each repository keeps. */
export const KEEP_IMAGES = { tritonWithFt: 5, server: 20, gateway: 20 } as const;
/** Untagged images (interrupted pushes, superseded manifests) go after this many days. */
export const UNTAGGED_EXPIRY_DAYS = 7;

/**
 * ECR lifecycle policy: untagged images first, then all but the newest `keep`.
 * The deployed server image is the newest unless `keep` newer bakes were pushed
 * since, so the count leaves room for rollbacks.
 */
export function lifecyclePolicy(keep: number): string {
  return JSON.stringify({
    rules: [
      {
        rulePriority: 1,
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
        rulePriority: 2,
        description: `keep the newest ${keep} images`,
        selection: { tagStatus: "any", countType: "imageCountMoreThan", countNumber: keep },
        action: { type: "expire" },
      },
    ],
  });
}
