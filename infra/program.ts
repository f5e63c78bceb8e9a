/**
 * The composition root's body: config in, one plan, components wired, outputs out.
 *
 *   Pulumi config -> resolved stack (loadStack) -> plan (buildPlan, once)
 *     -> build side: Network, Registry, Builder, BuildPipeline (plan.buildSteps)
 *     -> serving side: Cluster, TritonService (plan.kubernetes, plan.launch, the baked image)
 *     -> stack outputs (infra/outputs.ts)
 *
 * Components receive slices of the plan and of the config (plus secrets and
 * provider inputs), never the whole stack. `index.ts` hands this function to
 * the Pulumi runtime; tests call it directly under mocks.
 */
import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";
import { BUILDER_SSH_USER } from "./cloud/builderHost";
import { Builder } from "./components/builder";
import { BuildPipeline } from "./components/buildPipeline";
import { Cluster, type ClusterArgs, type ClusterNetwork } from "./components/cluster";
import { Network } from "./components/network";
import { Registry } from "./components/registry";
import { GatewayService } from "./components/gatewayService";
import { sharedStoreOf } from "./components/sharedStore";
import { Scaling } from "./components/scaling";
import { TritonService } from "./components/tritonService";
import { installsMonitoring } from "./config/autoscaling";
import { ENSEMBLE_MODEL } from "./render/modelRepository";
import { renderScaling, type ScalingManifests } from "./render/scaling";
import { PROJECT } from "./config";
import { namePrefix } from "./naming";
import { modelSourceUri, type ContractOutputs } from "./outputs";
import { buildPlan, type Plan } from "./plan";
import { endpointAccess } from "./plan/clusterAccess";
import { REPO_ROOT, repoPathHasher, stageTree } from "./repoFiles";
import type { ResolvedStack } from "./config/stack";
import { loadStack, validatedSecret, type StackSecrets } from "./config/loader";
import { stackTags } from "./tags";

/**
 * The stack-output contract other teams consume (infra/outputs.ts: documented
 * in README, pinned by test/unit/serving.test.ts), plus the build side's extras.
 */
export interface StackOutputs extends ContractOutputs {
  [key: string]: unknown;
}

/** What the serving side takes from the build side. */
interface BuildSide {
  network: ClusterNetwork;
  serverImage: pulumi.Output<string>;
  tritonWithFtImage: pulumi.Output<string>;
  gatewayImage: pulumi.Output<string>;
  /** Stack outputs of the build side (names documented in README). */
  outputs: Record<string, pulumi.Input<unknown>>;
  /** Tags the deployed images once the workloads rolled out (markDeployed). */
  pipeline: BuildPipeline;
}

/** Network, ECR, the GPU builder and the remote build pipeline. */
function buildSide(
  stack: ResolvedStack,
  plan: Plan,
  secrets: StackSecrets,
  prefix: string,
  tags: Record<string, string>,
): BuildSide {
  const b = stack.config.build;
  const network = new Network("network", { network: stack.config.network, tags });
  const registry = new Registry("registry", { namePrefix: prefix, tags });
  const builder = new Builder("builder", {
    instanceType: plan.build.builderInstanceType,
    diskGiB: plan.build.builderDiskGiB,
    amiId: b.builderAmiId,
    sshAllowedCidrs: b.sshAllowedCidrs,
    // Validation refused sshPublicKey without the sshPrivateKey secret.
    sshKey: b.sshPublicKey
      ? { publicKey: b.sshPublicKey, privateKey: validatedSecret(secrets, "sshPrivateKey") }
      : undefined,
    namePrefix: prefix,
    vpcId: network.vpcId,
    subnetId: network.publicSubnetIds.apply((ids) => {
      const first = ids[0];
      if (!first) throw new pulumi.ResourceError("the network has no public subnet for the builder", network);
      return first;
    }),
    repositoryArns: [registry.tritonWithFt.arn, registry.server.arn, registry.gateway.arn],
    tags,
  });
  const pipeline = new BuildPipeline("build", {
    steps: plan.buildSteps,
    connection: {
      host: builder.publicIp,
      user: BUILDER_SSH_USER,
      privateKey: builder.privateKey,
      // Only the builder's own (generated, pinned) host key is accepted.
      hostKey: builder.hostPublicKey,
      // A fresh DLAMI instance takes minutes before sshd answers with the pinned key.
      dialErrorLimit: 60,
      perDialTimeout: 30,
    },
    instanceId: builder.instance.id,
    region: aws.getRegionOutput().region,
    ecrRegistry: registry.tritonWithFt.repositoryUrl.apply((u) => u.split("/")[0] ?? u),
    tritonWithFtRepositoryUrl: registry.tritonWithFt.repositoryUrl,
    serverRepositoryUrl: registry.server.repositoryUrl,
    gatewayRepositoryUrl: registry.gateway.repositoryUrl,
    secretEnv: secrets.hfToken ? { HF_TOKEN: secrets.hfToken } : {},
    stopBuilderWhenDone: b.stopBuilderWhenDone,
    stageTree: (tree) => stageTree(REPO_ROOT, tree),
  });
  const outputs: Record<string, pulumi.Input<unknown>> = {
    vpcId: network.vpcId,
    publicSubnetIds: network.publicSubnetIds,
    privateSubnetIds: network.privateSubnetIds,
    tritonWithFtRepositoryUrl: registry.tritonWithFt.repositoryUrl,
    serverRepositoryUrl: registry.server.repositoryUrl,
    gatewayRepositoryUrl: registry.gateway.repositoryUrl,
    tritonWithFtImage: pipeline.tritonWithFtImage,
    serverImage: pipeline.serverImage,
    builderInstanceId: builder.instance.id,
    builderPublicIp: builder.publicIp,
    builderAmiId: builder.amiId,
    buildStepHashes: Object.fromEntries(plan.buildSteps.map((s) => [s.id, s.inputHash])),
  };
  if (builder.generatedKey) outputs.builderPrivateKey = builder.privateKey;
  return {
    network,
    serverImage: pipeline.serverImage,
    tritonWithFtImage: pipeline.tritonWithFtImage,
    gatewayImage: pipeline.gatewayImage,
    outputs,
    pipeline,
  };
}

/** The cluster argument of the configured mode. */
function clusterSource(
  stack: ResolvedStack,
  plan: Plan,
  scaling: ScalingManifests,
  secrets: StackSecrets,
  network: ClusterNetwork,
) {
  const c = stack.config.cluster;
  const source: ClusterArgs["cluster"] =
    c.mode === "create"
      ? {
          mode: "create",
          network,
          kubernetesVersion: c.kubernetesVersion,
          gpuInstanceType: plan.serving.instanceType,
          gpuNodes: plan.kubernetes.gpuNodes,
          gpuNodeDiskGiB: stack.nodeDiskGiB,
          endpoint: endpointAccess({
            access: c.endpointAccess,
            publicAccessCidrs: c.endpointPublicAccessCidrs,
            deployerCidrs: stack.config.build.sshAllowedCidrs,
          }),
          // serving.autoscaling: Karpenter launches the GPU nodes; without a Prometheus given, the stack installs one.
          ...(scaling.nodePool && scaling.ec2NodeClass
            ? { gpuNodePool: { nodePool: scaling.nodePool, ec2NodeClass: scaling.ec2NodeClass } }
            : {}),
          installMonitoring: installsMonitoring(stack.config.serving.autoscaling),
        }
      : c.mode === "kubeconfig"
        ? { mode: "kubeconfig", kubeconfig: validatedSecret(secrets, "kubeconfig") }
        : {
            mode: "stackReference",
            // Validation refused mode stackReference without it.
            stackReference: c.stackReference ?? "",
            kubeconfigOutput: c.kubeconfigOutput,
            clusterNameOutput: c.clusterNameOutput,
          };
  return source;
}

export function program(): StackOutputs {
  const { stack, secrets } = loadStack();
  const stackName = pulumi.getStack();
  const plan = buildPlan(stack, stackName, repoPathHasher(REPO_ROOT));
  const tags = stackTags(PROJECT, stackName, stack);
  const build = buildSide(stack, plan, secrets, namePrefix(stackName), tags);
  const scaling = renderScaling(plan.renderInputs.scaling);
  const cluster = new Cluster("cluster", {
    cluster: clusterSource(stack, plan, scaling, secrets, build.network),
    tags,
  });
  const triton = new TritonService("triton", {
    workload: plan.renderInputs.triton,
    image: build.serverImage,
    provider: cluster.provider,
    gpuReady: cluster.gpuReady,
    monitoringReady: cluster.monitoringReady,
  });
  // The gateway's shared store (serving.store): team limits across its pods, usage per team.
  const store = sharedStoreOf(plan, { cluster, network: build.network, namespace: triton.namespaceResource, tags });
  // The only thing behind the load balancer: keys, limits, OpenAI API, streaming.
  const gateway = new GatewayService("gateway", {
    workload: plan.renderInputs.gateway,
    consumers: plan.gateway.consumers,
    teams: plan.gateway.teams,
    image: build.gatewayImage,
    provider: cluster.provider,
    dependsOn: [triton],
    loadBalancerReady: cluster.loadBalancerReady,
    ...(store ? { store: { host: store.host, ready: store.ready } } : {}),
  });
  // Tag what is deployed once its rollout succeeded, so ECR never expires the running images.
  build.pipeline.markDeployed([
    { id: "server", image: build.serverImage, rollout: triton.deploymentResource },
    { id: "gateway", image: build.gatewayImage, rollout: gateway.deployment },
  ]);
  // Autoscaling (KEDA: Triton and the gateway) and observability (DCGM exporter, ServiceMonitors, dashboard, alerts).
  new Scaling("scaling", {
    manifests: scaling,
    provider: cluster.provider,
    systemNodes: cluster.systemNodes,
    monitoringReady: cluster.monitoringReady,
    namespace: triton.namespaceResource,
    deployment: triton.deploymentResource,
    gateway,
  });
  return {
    ...build.outputs,
    modelName: ENSEMBLE_MODEL,
    modelFamily: plan.model.family,
    modelSource: modelSourceUri(plan.model.source),
    tensorParallel: plan.serving.tensorParallel,
    serverImage: build.serverImage,
    tritonWithFtImage: build.tritonWithFtImage,
    httpEndpoint: gateway.baseUrl,
    openaiBaseUrl: pulumi.interpolate`${gateway.baseUrl}/v1`,
    modelIds: [plan.gateway.config.model.id],
    apiKeys: gateway.apiKeys,
    gatewayImage: build.gatewayImage,
    clusterName: cluster.clusterName,
    namespace: triton.namespace,
    kubeconfig: cluster.kubeconfig,
  };
}
