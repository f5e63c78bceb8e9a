/**
 * The two ECR repositories the build pipeline pushes to: `triton_with_ft` (the
 * Triton + FT backend base, rebuilt only when Triton, the pins or the recipe
 * change) and the baked server image the cluster pulls by digest.
 */
import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";

export interface RegistryArgs {
  /** `<project>-<stack>`, already lowercased; repository names derive from it. */
  namePrefix: string;
  tags: Record<string, string>;
}

/** How many tagged images each repository keeps. */
export const KEEP_IMAGES = { tritonWithFt: 5, server: 20 } as const;
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

/** ECR names: lowercase, may contain '/', '-', '_'. The stack namespace keeps stacks apart. */
export function repositoryNames(namePrefix: string): { tritonWithFt: string; server: string } {
  return { tritonWithFt: `${namePrefix}/triton_with_ft`, server: `${namePrefix}/server` };
}

export class Registry extends pulumi.ComponentResource {
  readonly tritonWithFt: aws.ecr.Repository;
  readonly server: aws.ecr.Repository;

  constructor(name: string, args: RegistryArgs, opts?: pulumi.ComponentResourceOptions) {
    super("triton-ft:registry:Registry", name, {}, opts);
    const names = repositoryNames(args.namePrefix);
    const repo = (key: keyof typeof names) => {
      const r = new aws.ecr.Repository(
        `${name}-${key}`,
        {
          name: names[key],
          // Tags are content hashes; an immutable tag can never point at other bytes.
          imageTagMutability: "IMMUTABLE",
          imageScanningConfiguration: { scanOnPush: true },
          // KMS with the account's aws/ecr key: encrypted at rest with an auditable key.
          encryptionConfigurations: [{ encryptionType: "KMS" }],
          // Destroying a stack must not silently delete the images it served.
          forceDelete: false,
          tags: args.tags,
        },
        { parent: this },
      );
      new aws.ecr.LifecyclePolicy(
        `${name}-${key}`,
        { repository: r.name, policy: lifecyclePolicy(KEEP_IMAGES[key]) },
        { parent: this },
      );
      return r;
    };
    this.tritonWithFt = repo("tritonWithFt");
    this.server = repo("server");
    this.registerOutputs({ tritonWithFtUrl: this.tritonWithFt.repositoryUrl, serverUrl: this.server.repositoryUrl });
  }
}
