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
import { forceApply } from "./forceApply";
import { Network } from "./components/network";
import { Registry } from "./components/registry";
import { GatewayService } from "./components/gatewayService";
import { sharedStoreOf } from "./components/sharedStore";
import { Scaling } from "./components/scaling";
import { TritonService } from "./components/tritonService";
import { installsMonitoring } from "./config/autoscaling";

import { renderStackScaling, sharedScalingInput, type ModelScalingManifests } from "./render/scaling";
import { PROJECT } from "./config";
import { namePrefix } from "./naming";
import { modelSourceUri, type ContractOutputs } from "./outputs";
import { buildStackPlan, modelResourceName, type ModelPlanEntry, type StackPlan } from "./plan/stack";
import { modelPlanFingerprint, modelPlanOf, serializeModelPlan } from "./promotion/modelPlan";
import { promotedSide, type PromotedSide } from "./promotion/side";
import { TritonWithFtSource, ecrRepositoryArn } from "./promotion/tritonWithFt";
import { tritonWithFtBuild, type TritonWithFtBuild } from "./plan/tritonWithFt";
import { endpointAccess } from "./resolve/clusterAccess";
import { prePullOnNodes } from "./resolve/workload";
import { REPO_ROOT, repoPathHasher, stageTree } from "./repoFiles";
import type { ResolvedStack } from "./config/stack";
import { loadStack, validatedSecret, type StackSecrets } from "./loader";
import { isoDate } from "./catalog/eks";
import { estimateCost, gpuPricing } from "./cost";
import { summaryLines } from "./cost/format";
import { costInput } from "./cost/fromStack";
import { modelTags, stackTags } from "./tags";
import { STEP_TIMES_OUTPUT } from "./plan/measurements";
import { reportMeasuredEstimate } from "./measuredPreview";
import { SECRET_FINGERPRINTS_OUTPUT, reportSecretChanges, secretFingerprints, selfReference } from "./secretChanges";

import { ENSEMBLE_MODEL } from "./conventions/workload";
/**
 * The stack-output contract other teams consume (infra/outputs.ts: documented
 * in README, pinned by test/unit/serving.test.ts), plus the build side's extras.
 */
export interface StackOutputs extends ContractOutputs {
  [key: string]: unknown;
}

/** What the serving side takes from the build side. */
interface BuildSide {
  /** Absent for a promoted stack that creates no cluster (infra/promotion/side.ts). */
  network?: ClusterNetwork;
  /** Per model, in the stack plan's order. */
  serverImages: pulumi.Output<string>[];
  /** Per builder of the stack plan: the triton_with_ft its models use. */
  builderImages: pulumi.Output<string>[];
  tritonWithFtImage: pulumi.Output<string>;
  gatewayImage: pulumi.Output<string>;
  /** Stack outputs of the build side (names documented in docs/outputs.md). */
  outputs: Record<string, pulumi.Input<unknown>>;
  /** Per model: the pipeline that baked it; none for a promoted stack. */
  pipelines: BuildPipeline[];
  /** Per canary of the stack plan: its image (the stable's when it shares every step with it). */
  canaryImages: pulumi.Output<string>[];
  /** Per canary: the pipeline of its own steps; undefined when it has none. */
  canaryPipelines: Array<BuildPipeline | undefined>;
}

/** Network, ECR, the GPU builder(s) and the remote build pipelines (one per model). */
function buildSide(
  models: readonly ResolvedStack[],
  sp: StackPlan,
  secrets: StackSecrets,
  prefix: string,
  tags: StackTags,
): BuildSide {
  const stack = first(models);
  const b = stack.config.build;
  const network = new Network("network", {
    network: stack.config.network,
    tags: tags.stack,
    eksControlPlane: stack.config.cluster.mode === "create",
  });
  // One server repository per model: each has its own deployed/previous tags (plan/registry.ts).
  const registry = new Registry("registry", { plan: sp.registry, tags: tags.stack, modelTags: tags.models });
  const subnetId = network.publicSubnetIds.apply((ids) => {
    const id = ids[0];
    if (!id) throw new pulumi.ResourceError("the network has no public subnet for the builder", network);
    return id;
  });
  // build.tritonWithFtFrom: each builder's triton_with_ft from another stack, checked at preview.
  const takenFrom = first(sp.models).plan.build.tritonWithFtFrom;
  const taken = takenFrom
    ? new TritonWithFtSource("triton-with-ft-from", {
        stackReference: takenFrom,
        wanted: sp.builders.flatMap((bp, i) => {
          const build = builderTritonWithFt(sp, i);
          return build ? [{ builder: bp.name, build }] : [];
        }),
      })
    : undefined;
  const takenImage = (i: number) => {
    const name = sp.builders[i]?.name;
    return name !== undefined ? taken?.images[name] : undefined;
  };
  // One builder per GPU model; the first keeps a one-model stack's names.
  const builders = sp.builders.map(
    (bp, i) =>
      new Builder(bp.name, {
        instanceType: bp.instanceType,
        diskGiB: bp.diskGiB,
        amiId: b.builderAmiId,
        sshAllowedCidrs: b.sshAllowedCidrs,
        // Validation refused sshPublicKey without the sshPrivateKey secret.
        sshKey: b.sshPublicKey
          ? { publicKey: b.sshPublicKey, privateKey: validatedSecret(secrets, "sshPrivateKey") }
          : undefined,
        namePrefix: i === 0 ? prefix : `${prefix}-${bp.gpuModel.toLowerCase()}`,
        vpcId: network.vpcId,
        subnetId,
        // The one-model list first (its policy unchanged), then the further models' repositories,
        // then the repository of a triton_with_ft taken from another stack (pulled by convert, gemm and bake).
        repositoryArns: [
          registry.tritonWithFt.arn,
          registry.server.arn,
          registry.gateway.arn,
          ...registry.servers.slice(1).map((r) => r.arn),
          ...(taken ? [pulumi.output(takenImage(i) ?? "").apply(ecrRepositoryArn)] : []),
        ],
        tags: tags.stack,
      }),
  );
  // Beside each builder whose triton_with_ft this stack compiles, the CPU host that compiles it
  // (catalog/compileHosts.ts); same AMI, key, network and repository, sized by the plan from the SM list.
  const compilers = sp.builders.map((bp, i) =>
    !sp.models.some((m) => m.builder === i && m.plan.buildSteps.some((s) => s.host === "compiler"))
      ? undefined
      : new Builder(bp.compileHost.name, {
          instanceType: bp.compileHost.instanceType,
          diskGiB: bp.compileHost.diskGiB,
          amiId: b.builderAmiId,
          sshAllowedCidrs: b.sshAllowedCidrs,
          sshKey: b.sshPublicKey
            ? { publicKey: b.sshPublicKey, privateKey: validatedSecret(secrets, "sshPrivateKey") }
            : undefined,
          namePrefix: i === 0 ? `${prefix}-compile` : `${prefix}-compile-${bp.gpuModel.toLowerCase()}`,
          vpcId: network.vpcId,
          subnetId,
          repositoryArns: [registry.tritonWithFt.arn],
          tags: tags.stack,
        }),
  );
  const common = {
    region: aws.getRegionOutput().region,
    ecrRegistry: registry.tritonWithFt.repositoryUrl.apply((u) => u.split("/")[0] ?? u),
    tritonWithFtRepositoryUrl: registry.tritonWithFt.repositoryUrl,
    gatewayRepositoryUrl: registry.gateway.repositoryUrl,
    secretEnv: secrets.hfToken ? { HF_TOKEN: secrets.hfToken } : {},
    stopBuilderWhenDone: b.stopBuilderWhenDone,
    // The first bake mounts triton_with_ft's layers only once the registry allows it.
    registryReady: [registry.blobMounting],
    stageTree: (tree: string) => stageTree(REPO_ROOT, tree),
  };
  const connection = (builder: Builder) => ({
    host: builder.publicIp,
    user: BUILDER_SSH_USER,
    privateKey: builder.privateKey,
    // Only the builder's own (generated, pinned) host key is accepted.
    hostKey: builder.hostPublicKey,
    // A fresh DLAMI instance takes minutes before sshd answers with the pinned key.
    dialErrorLimit: 60,
    perDialTimeout: 30,
  });
  const pipelines: BuildPipeline[] = [];
  const hostOf = new Map<number, BuildPipeline>();
  for (const [i, entry] of sp.models.entries()) {
    const builder = builders[entry.builder];
    const serverRepository = registry.servers[i];
    if (!serverRepository) throw new Error(`model ${entry.id} has no server repository`);
    if (!builder) throw new Error(`model ${entry.id} has no builder in the plan`);
    const host = hostOf.get(entry.builder);
    // Further models' hashes on this host start a stopped builder too.
    const hostedStepHashes = host
      ? undefined
      : Object.fromEntries([
          ...sp.models
            .filter((m) => m !== entry && m.builder === entry.builder)
            .flatMap((m) => m.plan.buildSteps.map((s) => [`${m.id}/${s.id}`, s.inputHash])),
          // A canary's own steps run on its stable model's builder.
          ...sp.canaries
            .filter((c) => builderOf(sp, c.of) === entry.builder)
            .flatMap((c) => c.plan.buildSteps.map((s) => [`${c.id}/${s.id}`, s.inputHash])),
        ]);
    const compiler = compilers[entry.builder];
    const bp = sp.builders[entry.builder];
    const compiles = entry.plan.buildSteps.some((s) => s.host === "compiler");
    const pipeline = new BuildPipeline(modelResourceName("build", entry), {
      ...common,
      serverRepositoryUrl: serverRepository.repositoryUrl,
      steps: entry.plan.buildSteps,
      connection: connection(builder),
      instanceId: builder.instance.id,
      ...(takenImage(entry.builder) ? { takenTritonWithFtImage: takenImage(entry.builder) } : {}),
      ...(compiles && compiler && bp
        ? {
            compileHost: {
              connection: connection(compiler),
              instanceId: compiler.instance.id,
              instanceType: bp.compileHost.instanceType,
              requiredFreeGiB: bp.compileHost.requiredFreeGiB,
            },
          }
        : {}),
      ...(pipelines[0] ? { shared: { stack: pipelines[0], ...(host ? { host } : {}) } } : {}),
      ...(hostedStepHashes && Object.keys(hostedStepHashes).length > 0 ? { hostedStepHashes } : {}),
    });
    if (!host) hostOf.set(entry.builder, pipeline);
    pipelines.push(pipeline);
  }
  // A canary's own steps (plan/canary.ts), on its stable model's builder; the steps it shares are the stable's.
  const canaryPipelines = sp.canaries.map((c, k) => {
    if (c.plan.buildSteps.length === 0) return undefined;
    const i = sp.models.findIndex((m) => m.id === c.of);
    const stable = sp.models[i];
    const stablePipeline = pipelines[i];
    const builder = stable ? builders[stable.builder] : undefined;
    const host = stable ? hostOf.get(stable.builder) : undefined;
    const repository = registry.servers[sp.models.length + k];
    if (!stable || !stablePipeline || !builder || !host || !repository)
      throw new Error(`canary ${c.id} has no stable model, builder or repository in the plan`);
    return new BuildPipeline(`build-${c.id}`, {
      ...common,
      serverRepositoryUrl: repository.repositoryUrl,
      steps: c.plan.buildSteps,
      connection: connection(builder),
      instanceId: builder.instance.id,
      ...(takenImage(stable.builder) ? { takenTritonWithFtImage: takenImage(stable.builder) } : {}),
      shared: { stack: first(pipelines), host, steps: stablePipeline },
    });
  });
  const canaryImages = sp.canaries.map((c, k) => {
    const own = canaryPipelines[k];
    if (own) return own.serverImage;
    const stable = pipelines[sp.models.findIndex((m) => m.id === c.of)];
    if (!stable) throw new Error(`canary ${c.id} has no stable pipeline`);
    return stable.serverImage;
  });
  const firstPipeline = first(pipelines);
  // Per builder, the triton_with_ft its models use: its owning pipeline's, compiled here or taken.
  const builderImages = sp.builders.map((_, i) => {
    const owner = hostOf.get(i);
    if (!owner) throw new Error(`builder ${i} has no pipeline`);
    return owner.tritonWithFtImage;
  });
  const firstBuilder = first(builders);
  const outputs: Record<string, pulumi.Input<unknown>> = {
    vpcId: network.vpcId,
    publicSubnetIds: network.publicSubnetIds,
    privateSubnetIds: network.privateSubnetIds,
    tritonWithFtRepositoryUrl: registry.tritonWithFt.repositoryUrl,
    serverRepositoryUrl: registry.server.repositoryUrl,
    gatewayRepositoryUrl: registry.gateway.repositoryUrl,
    tritonWithFtImage: firstPipeline.tritonWithFtImage,
    serverImage: firstPipeline.serverImage,
    builderInstanceId: firstBuilder.instance.id,
    builderPublicIp: firstBuilder.publicIp,
    builderAmiId: firstBuilder.amiId,
    buildStepHashes: Object.fromEntries(first(sp.models).plan.buildSteps.map((s) => [s.id, s.inputHash])),
  };
  if (sp.models.length > 1) {
    outputs.builders = Object.fromEntries(
      sp.builders.map((bp, i) => [
        bp.name,
        { instanceId: builders[i]?.instance.id, publicIp: builders[i]?.publicIp, models: bp.models },
      ]),
    );
    // Each model's own repository (plan/registry.ts): the first is serverRepositoryUrl.
    outputs.modelServerRepositoryUrls = Object.fromEntries(
      sp.models.map((m, i) => [m.id, registry.servers[i]?.repositoryUrl]),
    );
    outputs.modelBuildStepHashes = Object.fromEntries(
      sp.models.map((m) => [m.id, Object.fromEntries(m.plan.buildSteps.map((s) => [s.id, s.inputHash]))]),
    );
  }
  if (firstBuilder.generatedKey) outputs.builderPrivateKey = firstBuilder.privateKey;
  return {
    network,
    builderImages,
    serverImages: pipelines.map((p) => p.serverImage),
    tritonWithFtImage: firstPipeline.tritonWithFtImage,
    gatewayImage: firstPipeline.gatewayImage,
    outputs,
    pipelines,
    canaryImages,
    canaryPipelines,
  };
}

/** The builder of model `id` in the stack plan. */
function builderOf(sp: StackPlan, id: string): number | undefined {
  return sp.models.find((m) => m.id === id)?.builder;
}

/** The stack's tags, and each model's (infra/tags.ts): a model's own resources carry its id. */
interface StackTags {
  stack: Record<string, string>;
  models: Record<string, Record<string, string>>;
}

/** A model's tag map; the program made one for every model of the plan. */
function tagsOf(tags: StackTags, id: string): Record<string, string> {
  const t = tags.models[id];
  if (!t) throw new Error(`model ${id} has no tags`);
  return t;
}

/** The first of a list the plan guarantees non-empty. */
function first<T>(items: readonly T[]): T {
  const item = items[0];
  if (item === undefined) throw new Error("a stack has at least one model");
  return item;
}

/** A promoted stack's images as the serving side takes them: every model's, in the stack plan's order. */
function fromPromoted(side: PromotedSide, sp: StackPlan): BuildSide {
  return {
    ...(side.network ? { network: side.network } : {}),
    serverImages: sp.models.map((m) => {
      const image = side.serverImages[m.id];
      if (!image) throw new Error(`promotion returned no image for model ${m.id}`);
      return image;
    }),
    tritonWithFtImage: side.tritonWithFtImage,
    builderImages: sp.builders.map(() => side.tritonWithFtImage),
    gatewayImage: side.gatewayImage,
    outputs: side.outputs,
    pipelines: [],
    // Refused at preview: a promoted stack builds no canary (resolve/canary.ts).
    canaryImages: [],
    canaryPipelines: [],
  };
}

/** Both build sides create the network a created cluster needs. */
function withNetwork(network: ClusterNetwork | undefined): ClusterNetwork {
  if (!network) throw new Error("unreachable: cluster mode create without a network");
  return network;
}

/** The cluster argument of the configured mode. */
function clusterSource(
  stack: ResolvedStack,
  sp: StackPlan,
  scaling: readonly ModelScalingManifests[],
  models: readonly ResolvedStack[],
  secrets: StackSecrets,
  network: ClusterNetwork | undefined,
  tags: StackTags,
) {
  const c = stack.config.cluster;
  const plan = first(sp.models).plan;
  const firstScaling = first(scaling);
  const label = (entry: ModelPlanEntry) => entry.plan.renderInputs.triton.modelNodeLabel;
  const firstLabel = label(first(sp.models));
  const liveCanaries = sp.canaries.filter((c) => !c.promote);
  const source: ClusterArgs["cluster"] =
    c.mode === "create"
      ? {
          mode: "create",
          network: withNetwork(network),
          kubernetesVersion: c.kubernetesVersion,
          gpuInstanceType: plan.serving.instanceType,
          gpuNodes: plan.kubernetes.gpuNodes,
          gpuNodeDiskGiB: stack.nodeDiskGiB,
          gpuNodeTags: tagsOf(tags, first(sp.models).id),
          endpoint: endpointAccess({
            access: c.endpointAccess,
            publicAccessCidrs: c.endpointPublicAccessCidrs,
            deployerCidrs: stack.config.build.sshAllowedCidrs,
          }),
          // serving.autoscaling: Karpenter launches the GPU nodes; without a Prometheus given, the stack installs one.
          ...(firstScaling.nodePool && firstScaling.ec2NodeClass
            ? { gpuNodePool: { nodePool: firstScaling.nodePool, ec2NodeClass: firstScaling.ec2NodeClass } }
            : {}),
          installMonitoring: models.some((m) => installsMonitoring(m.config.serving.autoscaling)),
          // Several models, or a one-model stack's canary (its first model's nodes keep no label).
          ...(firstLabel || liveCanaries.length > 0
            ? {
                models: {
                  ...(firstLabel ? { firstNodeLabel: firstLabel } : {}),
                  further: [
                    ...sp.models.slice(1).map((entry, i) => {
                      const m = scaling[i + 1];
                      const nodeLabel = label(entry);
                      if (!m || !nodeLabel)
                        throw new Error(`model ${entry.id} has no node label in a stack of several`);
                      return {
                        id: entry.id,
                        instanceType: entry.plan.serving.instanceType,
                        nodes: entry.plan.kubernetes.gpuNodes,
                        diskGiB: models[i + 1]?.nodeDiskGiB ?? stack.nodeDiskGiB,
                        nodeLabel,
                        tags: tagsOf(tags, entry.id),
                        ...(m.nodePool && m.ec2NodeClass
                          ? { nodePool: { nodePool: m.nodePool, ec2NodeClass: m.ec2NodeClass } }
                          : {}),
                      };
                    }),
                    // A live canary's own GPU nodes: a fixed group (it never autoscales), labelled with its name,
                    // and in a one-model stack tainted with it (plan/types.ts nodeTaint).
                    ...liveCanaries.map((c) => {
                      const nodeLabel = c.plan.renderInputs.triton.modelNodeLabel;
                      const taint = c.plan.renderInputs.triton.nodeTaint;
                      const stable = models.find((m) => m.model.name === c.of);
                      if (!nodeLabel || !stable?.canary) throw new Error(`canary ${c.id} has no node label`);
                      return {
                        id: c.id,
                        instanceType: c.plan.serving.instanceType,
                        nodes: c.plan.kubernetes.gpuNodes,
                        diskGiB: stable.canary.stack.nodeDiskGiB,
                        nodeLabel,
                        ...(taint ? { taint } : {}),
                        tags: tagsOf(tags, c.id),
                      };
                    }),
                  ],
                },
              }
            : {}),
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
  const { stack, models, secrets } = loadStack();
  // Every Kubernetes object's fields are the stack's, also after a hand edit (infra/forceApply.ts).
  pulumi.runtime.registerResourceTransform(forceApply);
  const stackName = pulumi.getStack();
  // A changed secret is a change too: the preview says what it does (infra/secretChanges.ts).
  const fingerprints = secretFingerprints(secrets);
  const self = selfReference();
  reportSecretChanges(self, fingerprints, stack.config.build.promoteFrom !== undefined);
  const sp = buildStackPlan(models, stackName, repoPathHasher(REPO_ROOT));
  const plan = first(sp.models).plan;
  // The estimate synth writes to cost.json, as info messages in the preview: $/month, minutes to serve, $/1k tokens.
  const region = new pulumi.Config("aws").get("region");
  const costContext = { stackName, region, today: isoDate(new Date()) };
  const cost = estimateCost(costInput(stack, models, sp, costContext));
  for (const line of summaryLines(cost)) void pulumi.log.info(line);
  // And with the step times this stack measured itself, where the steps' inputs are unchanged.
  reportMeasuredEstimate(self, (measured) => estimateCost(costInput(stack, models, sp, { ...costContext, measured })));
  const shared = stackTags(PROJECT, stackName, stack);
  // triton-ft:model only on a model's own resources; what the models share carries the stack's tags.
  const tags: StackTags = {
    stack: shared,
    // A canary's own resources carry its name (`<id>-canary`): the estimate and the bill tell the builds apart.
    models: Object.fromEntries([...sp.models, ...sp.canaries].map((m) => [m.id, modelTags(shared, m.id)])),
  };
  const modelPlan = modelPlanOf(plan);
  // Promoted: the images another stack built, checked against this stack's model plan; nothing is built.
  const promoteFrom = stack.config.build.promoteFrom;
  const build: BuildSide = promoteFrom
    ? fromPromoted(
        promotedSide(
          stack,
          promoteFrom,
          sp.models.map((m) => ({ id: m.id, plan: modelPlanOf(m.plan) })),
          tags.stack,
        ),
        sp,
      )
    : buildSide(models, sp, secrets, namePrefix(stackName), tags);
  // The first model's carries what the models share: DCGM on every GPU type, a dashboard row and alerts per model;
  // each model's row prices its own GPU nodes as the estimate does.
  const scaling = renderStackScaling(
    sharedScalingInput(
      sp.gateway.plan,
      sp.models.map((m) => {
        const pricing = gpuPricing(cost, m.id);
        return { ...m.plan.renderInputs.scaling, ...(pricing ? { pricing } : {}) };
      }),
    ),
  );
  const cluster = new Cluster("cluster", {
    cluster: clusterSource(stack, sp, scaling.models, models, secrets, build.network, tags),
    tags: tags.stack,
  });
  // Promoted: the model's own Deployment rolls to its canary's image (plan/canary.ts promotedPlan has its settings).
  for (const [k, c] of sp.canaries.entries()) {
    if (!c.promote) continue;
    const i = sp.models.findIndex((m) => m.id === c.of);
    const stable = sp.models[i];
    const image = build.canaryImages[k];
    if (!stable || !image) throw new Error(`promoted canary ${c.id} has no model or image`);
    build.serverImages[i] = image;
  }
  // One Triton Deployment per model; the first creates the namespace and keeps a one-model stack's names.
  const tritons: TritonService[] = [];
  for (const [i, entry] of sp.models.entries()) {
    const image = build.serverImages[i];
    if (!image) throw new Error(`model ${entry.id} has no server image`);
    tritons.push(
      new TritonService(modelResourceName("triton", entry), {
        workload: entry.plan.renderInputs.triton,
        image,
        provider: cluster.provider,
        gpuReady: cluster.gpuReady,
        monitoringReady: cluster.monitoringReady,
        ...(tritons[0] ? { namespace: tritons[0].namespaceResource } : {}),
        // An FT model with fixed nodes in a stack that builds: its nodes pull triton_with_ft while gemm and
        // bake run (render/prePull.ts); the serving pods' budget leaves room for it by the same rule.
        ...(models[i] && prePullOnNodes(models[i]) ? { prePullImage: build.builderImages[entry.builder] } : {}),
      }),
    );
  }
  const triton = first(tritons);
  // A live canary's own Triton Deployment and Service, beside its model's.
  const canaryTritons = sp.canaries.map((c, k) => {
    const image = build.canaryImages[k];
    if (c.promote || !image) return undefined;
    return new TritonService(`triton-${c.id}`, {
      workload: c.plan.renderInputs.triton,
      image,
      provider: cluster.provider,
      gpuReady: cluster.gpuReady,
      monitoringReady: cluster.monitoringReady,
      namespace: triton.namespaceResource,
    });
  });
  // The gateway's shared store (serving.store): team limits across its pods, usage per team and model.
  const store = sharedStoreOf(sp.gateway.workload, {
    cluster,
    network: build.network,
    namespace: triton.namespaceResource,
    tags: tags.stack,
  });
  // The only thing behind the load balancer: keys, limits, OpenAI API, streaming.
  const gateway = new GatewayService("gateway", {
    workload: sp.gateway.workload,
    consumers: sp.gateway.plan.consumers,
    heldKeys: sp.gateway.plan.heldKeys,
    teams: sp.gateway.plan.teams,
    image: build.gatewayImage,
    provider: cluster.provider,
    dependsOn: [...tritons, ...canaryTritons.filter((t) => t !== undefined)],
    // The NLB Service waits for no Triton and no build: the NLB is provisioned while the images build.
    namespace: triton.namespaceResource,
    loadBalancerReady: cluster.loadBalancerReady,
    ...(store ? { store: { host: store.host, ready: store.ready } } : {}),
  });
  // Tag what is deployed once its rollout succeeded, so ECR never expires the running images.
  for (const [i, pipeline] of build.pipelines.entries()) {
    const entry = sp.models[i];
    const t = tritons[i];
    if (!entry || !t) continue;
    // A builder stops only after every model baked on it: the pipeline of the first model on it owns it
    // (plan/stack.ts), which is not the stack's first model for a builder a further model opened.
    const hostedBakes = entry.ownsBuilder
      ? build.pipelines.flatMap((p, j) =>
          j !== i && sp.models[j]?.builder === entry.builder && p.commands.bake ? [p.commands.bake] : [],
        )
      : [];
    const canaryBakes = entry.ownsBuilder
      ? build.canaryPipelines.flatMap((p, k) => {
          const c = sp.canaries[k];
          return p?.commands.bake && c && builderOf(sp, c.of) === entry.builder ? [p.commands.bake] : [];
        })
      : [];
    pipeline.markDeployed(
      [
        { id: "server", image: build.pipelines[i]?.serverImage ?? "", rollout: t.deploymentResource },
        ...(entry.first ? [{ id: "gateway", image: build.gatewayImage, rollout: gateway.deployment }] : []),
      ],
      [...hostedBakes, ...canaryBakes],
    );
  }
  // A canary's image is deployed like any: tagged once it rolled out, on its Deployment or, promoted, its model's.
  for (const [k, pipeline] of build.canaryPipelines.entries()) {
    const c = sp.canaries[k];
    const rollout = c?.promote
      ? tritons[sp.models.findIndex((m) => m.id === c.of)]?.deploymentResource
      : canaryTritons[k]?.deploymentResource;
    if (!pipeline || !rollout) continue;
    pipeline.markDeployed([{ id: "server", image: pipeline.serverImage, rollout }]);
  }
  // Autoscaling (KEDA: Triton and the gateway) and observability (DCGM exporter, ServiceMonitors, dashboard, alerts).
  new Scaling("scaling", {
    shared: scaling.shared,
    models: sp.models.flatMap((entry, i) => {
      const scaledObject = scaling.models[i]?.scaledObject;
      const deployment = tritons[i]?.deploymentResource;
      return scaledObject && deployment ? [{ id: entry.id, first: entry.first, scaledObject, deployment }] : [];
    }),
    provider: cluster.provider,
    systemNodes: cluster.systemNodes,
    monitoringReady: cluster.monitoringReady,
    namespace: triton.namespaceResource,
    gateway,
  });
  return {
    ...build.outputs,
    modelName: ENSEMBLE_MODEL,
    modelFamily: plan.model.family,
    modelSource: modelSourceUri(plan.model.source),
    tensorParallel: plan.serving.tensorParallel,
    serverImage: first(build.serverImages),
    tritonWithFtImage: build.tritonWithFtImage,
    httpEndpoint: gateway.baseUrl,
    openaiBaseUrl: pulumi.interpolate`${gateway.baseUrl}/v1`,
    modelIds: sp.models.map((m) => m.id),
    // pulumi.output unwraps the images and services nested in the map.
    models: pulumi.output(
      Object.fromEntries(
        sp.models.map((m, i) => [
          m.id,
          {
            id: m.id,
            family: m.plan.model.family,
            source: modelSourceUri(m.plan.model.source),
            tensorParallel: m.plan.serving.tensorParallel,
            instanceType: m.plan.serving.instanceType,
            serverImage: build.serverImages[i],
            tritonService: tritons[i]?.grpcTarget,
            // What its image was built from (plan/fingerprint.ts): a promoted stack compares these.
            modelPlan: serializeModelPlan(modelPlanOf(m.plan)),
            modelPlanFingerprint: m.plan.image.fingerprint,
          },
        ]),
      ),
    ),
    apiKeys: gateway.apiKeys,
    gatewayImage: build.gatewayImage,
    clusterName: cluster.clusterName,
    namespace: triton.namespace,
    kubeconfig: cluster.kubeconfig,
    modelPlan: serializeModelPlan(modelPlan),
    modelPlanFingerprint: modelPlanFingerprint(modelPlan),
    tritonWithFtBuilds: pulumi.all(build.builderImages).apply((images) =>
      sp.builders.flatMap((bp, i) => {
        const build = builderTritonWithFt(sp, i);
        return build ? [{ builder: bp.name, ...build, image: images[i] ?? "" }] : [];
      }),
    ),
    // What each step took in its last real run (plan/measurements.ts); a promoted stack builds nothing.
    [STEP_TIMES_OUTPUT]: pulumi.all(build.pipelines.map((p) => p.stepTimes)).apply((lists) => lists.flat()),
    [SECRET_FINGERPRINTS_OUTPUT]: fingerprints,
  };
}

/**
 * What builder `i`'s triton_with_ft is built from: its first FT model's plan (every FT model on it
 * plans the same); none when it builds only vLLM models (issue 37), which need no triton_with_ft.
 */
function builderTritonWithFt(sp: StackPlan, i: number): TritonWithFtBuild | undefined {
  const entry = sp.models.find((m) => m.builder === i && m.plan.image.document.steps["triton-with-ft"]);
  return entry ? tritonWithFtBuild(entry.plan.image.document) : undefined;
}
