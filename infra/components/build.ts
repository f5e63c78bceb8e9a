/**
 * The build side of the stack: network, ECR, the GPU builder and the remote
 * build pipeline, wired together. The serving side consumes `network` and the
 * digest-pinned `serverImage`.
 */
import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";
import { PROJECT } from "../config";
import { buildSteps } from "../plan/buildSteps";
import type { StackSecrets } from "../stackConfig";
import type { ResolvedStack } from "../validate";
import { Builder, BUILDER_SSH_USER } from "./builder";
import { BuildPipeline } from "./buildPipeline";
import { Network } from "./network";
import { Registry } from "./registry";

/** `<project>-<stack>` as AWS names accept it (ECR wants lowercase). */
export function namePrefix(stackName: string): string {
  return `${PROJECT}-${stackName}`.toLowerCase().replace(/[^a-z0-9-]+/g, "-");
}

export interface BuildSide {
  network: Network;
  registry: Registry;
  builder: Builder;
  pipeline: BuildPipeline;
  /** Stack outputs of the build side (names documented in README). */
  outputs: Record<string, pulumi.Input<unknown>>;
}

export function createBuild(stack: ResolvedStack, secrets: StackSecrets, tags: Record<string, string>): BuildSide {
  const prefix = namePrefix(pulumi.getStack());
  // Validation already refused sshPublicKey without this secret, and a bad vpcCidr.
  const providedPrivateKey = secrets.sshPrivateKey;
  const { steps, hashes } = buildSteps(stack);
  const network = new Network("network", { network: stack.config.network, tags });
  const registry = new Registry("registry", { namePrefix: prefix, tags });
  const builder = new Builder("builder", {
    stack,
    namePrefix: prefix,
    vpcId: network.vpcId,
    subnetId: network.publicSubnetIds.apply((ids) => {
      const first = ids[0];
      if (!first) throw new Error("triton-ft: the network has no public subnet for the builder");
      return first;
    }),
    repositoryArns: [registry.tritonWithFt.arn, registry.server.arn],
    providedPrivateKey,
    tags,
  });
  const pipeline = new BuildPipeline("build", {
    steps,
    hashes,
    connection: {
      host: builder.publicIp,
      user: BUILDER_SSH_USER,
      privateKey: builder.privateKey,
      // A fresh DLAMI instance takes minutes before sshd answers.
      dialErrorLimit: 60,
      perDialTimeout: 30,
    },
    instanceId: builder.instance.id,
    region: aws.getRegionOutput().region,
    ecrRegistry: registry.tritonWithFt.repositoryUrl.apply((u) => u.split("/")[0] ?? u),
    tritonWithFtRepositoryUrl: registry.tritonWithFt.repositoryUrl,
    serverRepositoryUrl: registry.server.repositoryUrl,
    secretEnv: secrets.hfToken ? { HF_TOKEN: secrets.hfToken } : {},
    stopBuilderWhenDone: stack.config.build.stopBuilderWhenDone,
  });
  const outputs: Record<string, pulumi.Input<unknown>> = {
    vpcId: network.vpcId,
    publicSubnetIds: network.publicSubnetIds,
    privateSubnetIds: network.privateSubnetIds,
    tritonWithFtRepositoryUrl: registry.tritonWithFt.repositoryUrl,
    serverRepositoryUrl: registry.server.repositoryUrl,
    tritonWithFtImage: pipeline.tritonWithFtImage,
    serverImage: pipeline.serverImage,
    builderInstanceId: builder.instance.id,
    builderPublicIp: builder.publicIp,
    builderAmiId: builder.amiId,
    buildStepHashes: hashes,
  };
  if (builder.generatedKey) outputs.builderPrivateKey = builder.privateKey;
  return { network, registry, builder, pipeline, outputs };
}
