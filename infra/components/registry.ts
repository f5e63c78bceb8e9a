/**
 * The three ECR repositories the build pipeline pushes to: `triton_with_ft` (the
 * Triton + FT backend base, rebuilt only when Triton, the pins or the recipe
 * change), the baked server image and the gateway image, both pulled by the
 * cluster by digest.
 */
import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";
import { TAG_MUTABILITY, lifecyclePolicy } from "../cloud/ecr";
import { repositoryNames } from "../naming";

export interface RegistryArgs {
  /** `<project>-<stack>` (naming.ts namePrefix); repository names derive from it. */
  readonly namePrefix: string;
  /** AWS tags for both repositories. */
  readonly tags: Record<string, string>;
}

export class Registry extends pulumi.ComponentResource {
  readonly tritonWithFt: aws.ecr.Repository;
  readonly server: aws.ecr.Repository;
  readonly gateway: aws.ecr.Repository;

  constructor(name: string, args: RegistryArgs, opts?: pulumi.ComponentResourceOptions) {
    super("triton-ft:registry:Registry", name, {}, opts);
    const names = repositoryNames(args.namePrefix);
    const repo = (key: keyof typeof names) => {
      const r = new aws.ecr.Repository(
        `${name}-${key}`,
        {
          name: names[key],
          // Content tags are hashes: immutable, they can never point at other bytes. Only
          // the protected tags (live, previous) move, onto the images the steps output.
          ...TAG_MUTABILITY,
          imageTagMutabilityExclusionFilters: [...TAG_MUTABILITY.imageTagMutabilityExclusionFilters],
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
        { repository: r.name, policy: lifecyclePolicy(key) },
        { parent: this },
      );
      return r;
    };
    this.tritonWithFt = repo("tritonWithFt");
    this.server = repo("server");
    this.gateway = repo("gateway");
    this.registerOutputs({
      tritonWithFtUrl: this.tritonWithFt.repositoryUrl,
      serverUrl: this.server.repositoryUrl,
      gatewayUrl: this.gateway.repositoryUrl,
    });
  }
}
