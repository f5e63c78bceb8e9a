/**
 * The stack's ECR repositories (infra/plan/registry.ts): `triton_with_ft` (the
 * Triton + FT backend base, rebuilt only when Triton, the pins or the recipe
 * change) and the gateway image, shared, and one repository of baked server
 * images per model, each with its own protected tags, so no model's rollout
 * moves a tag off the image another model runs. The cluster pulls by digest.
 *
 * Blob mounting (an ECR registry setting, for the account in this region) is
 * turned on, so the bake's push of a server image FROM triton_with_ft mounts
 * the base's layers from the triton_with_ft repository instead of uploading
 * them again (AWS: "Blob mounting in Amazon ECR"; the repositories share the
 * encryption type and the account's aws/ecr key, which a mount requires). The
 * setting is the registry's, not this stack's: a destroyed stack leaves it on
 * for the others (retainOnDelete), and a second stack setting it again changes nothing.
 */
import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";
import { TAG_MUTABILITY, lifecyclePolicy, type TAG_PREFIX } from "../cloud/ecr";
import type { RegistryPlan } from "../plan/registry";

export interface RegistryArgs {
  /** The repositories' names (plan/registry.ts registryPlan). */
  readonly plan: RegistryPlan;
  /** AWS tags of the shared repositories (the stack's). */
  readonly tags: Record<string, string>;
  /** AWS tags of each model's server repository (the model's), by model id. */
  readonly modelTags: Readonly<Record<string, Record<string, string>>>;
}

export class Registry extends pulumi.ComponentResource {
  readonly tritonWithFt: aws.ecr.Repository;
  /** The first model's server repository (a one-model stack's only one). */
  readonly server: aws.ecr.Repository;
  /** Every model's server repository, in the plan's order (the first is `server`). */
  readonly servers: aws.ecr.Repository[];
  readonly gateway: aws.ecr.Repository;
  /** The registry's blob-mounting setting: a push that should mount layers waits for it. */
  readonly blobMounting: aws.ecr.AccountSetting;

  constructor(name: string, args: RegistryArgs, opts?: pulumi.ComponentResourceOptions) {
    super("triton-ft:registry:Registry", name, {}, opts);
    const repo = (key: string, kind: keyof typeof TAG_PREFIX, repoName: string, tags: Record<string, string>) => {
      const r = new aws.ecr.Repository(
        `${name}-${key}`,
        {
          name: repoName,
          // Content tags are hashes: immutable, they can never point at other bytes. Only
          // the protected tags (live, previous) move, onto the images the steps output.
          ...TAG_MUTABILITY,
          imageTagMutabilityExclusionFilters: [...TAG_MUTABILITY.imageTagMutabilityExclusionFilters],
          imageScanningConfiguration: { scanOnPush: true },
          // KMS with the account's aws/ecr key: encrypted at rest with an auditable key.
          encryptionConfigurations: [{ encryptionType: "KMS" }],
          // Destroying a stack must not silently delete the images it served.
          forceDelete: false,
          tags,
        },
        { parent: this },
      );
      new aws.ecr.LifecyclePolicy(
        `${name}-${key}`,
        { repository: r.name, policy: lifecyclePolicy(kind) },
        { parent: this },
      );
      return r;
    };
    const p = args.plan;
    this.tritonWithFt = repo("tritonWithFt", "tritonWithFt", p.tritonWithFt, args.tags);
    this.servers = p.servers.map((s) => {
      const tags = args.modelTags[s.model];
      if (!tags) throw new pulumi.ResourceError(`model ${s.model} has no tags`, this);
      return repo(s.key, "server", s.name, tags);
    });
    const first = this.servers[0];
    if (!first) throw new pulumi.ResourceError("a registry holds at least one model's server repository", this);
    this.server = first;
    this.gateway = repo("gateway", "gateway", p.gateway, args.tags);
    this.blobMounting = new aws.ecr.AccountSetting(
      `${name}-blob-mounting`,
      { name: "BLOB_MOUNTING", value: "ENABLED" },
      { parent: this, retainOnDelete: true },
    );
    this.registerOutputs({
      tritonWithFtUrl: this.tritonWithFt.repositoryUrl,
      serverUrl: this.server.repositoryUrl,
      gatewayUrl: this.gateway.repositoryUrl,
    });
  }
}
