/**
 * The Kubernetes cluster Triton runs on, in one of three modes:
 * - `create`: an EKS cluster (@pulumi/eks) with a tainted GPU managed node group
 *   on the NVIDIA AL2023 AMI (or, with serving.autoscaling, Karpenter launching the
 *   GPU nodes: GpuNodePool), a small system node group, the NVIDIA device plugin,
 *   the AWS Load Balancer Controller (IRSA) that provisions the NLB, and the
 *   stack's kube-prometheus-stack when autoscaling brings no Prometheus;
 * - `kubeconfig`: an existing cluster reached through the `kubeconfig` secret;
 * - `stackReference`: an existing cluster exported by another stack.
 * Whatever the mode, consumers get a Kubernetes provider, the cluster name, the
 * kubeconfig (secret) and the resources the workload must wait for.
 *
 * Order in create mode, explicitly: control plane and node groups, then the
 * provider from the new cluster's kubeconfig, then the add-ons through it.
 */
import * as aws from "@pulumi/aws";
import * as eks from "@pulumi/eks";
import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import {
  CHARTS,
  CONTROL_PLANE_LOG_TYPES,
  GPU_AMI_TYPE,
  GPU_NODE_TAINT,
  SECRETS_KEY,
  SYSTEM_NODES,
  SYSTEM_NODE_LABEL,
  devicePluginValues,
  gpuNodeGroupLabels,
  nodeLaunchTemplate,
} from "../cloud/eks";
import { EC2_ASSUME_ROLE_POLICY, EKS_NODE_POLICIES, serviceAccountTrustPolicy } from "../cloud/iam";
import { kubeconfigClusterName, kubeconfigText } from "../cloud/kubeconfig";
import { LB_CONTROLLER_NAMESPACE, LB_CONTROLLER_SERVICE_ACCOUNT } from "../cloud/lbController";
import { LB_CONTROLLER_POLICY_VERSION, publishedLbControllerPolicy } from "../cloud/lbControllerIamPolicy";
import type { EndpointAccess } from "../resolve/clusterAccess";
import type { EC2NodeClass, NodePool } from "../render/karpenter";
import { GpuNodePool, installMonitoring, type GpuNodePoolArgs } from "./scaling";

export interface ClusterNetwork {
  vpcId: pulumi.Input<string>;
  publicSubnetIds: pulumi.Input<string[]>;
  privateSubnetIds: pulumi.Input<string[]>;
}

/** A new EKS cluster sized for the workload. */
export interface CreatedCluster {
  mode: "create";
  /** Nodes go in the private subnets, internet-facing NLBs in the public ones. */
  network: ClusterNetwork;
  kubernetesVersion: string;
  /** GPU node instance type: the serving instance. */
  gpuInstanceType: string;
  /** GPU nodes (the plan's kubernetes.gpuNodes: every replica plus one surge slot). */
  gpuNodes: number;
  /** GPU node root volume, GiB (room for two server images). */
  gpuNodeDiskGiB: number;
  /** AWS tags of the first model's GPU nodes (infra/tags.ts modelTags): its node group or node class, instances, volumes. */
  gpuNodeTags: Record<string, string>;
  /** Who reaches the API endpoint (resolve/clusterAccess.ts). */
  endpoint: EndpointAccess;
  /** With serving.autoscaling: Karpenter launches the GPU nodes from these, instead of the fixed node group. */
  gpuNodePool?: { nodePool: NodePool; ec2NodeClass: EC2NodeClass };
  /** Install kube-prometheus-stack (autoscaling without a Prometheus of its own). */
  installMonitoring?: boolean;
  /**
   * A stack of several models: the first model's node label (its fixed node
   * group carries it), and each further model's own GPU nodes: a fixed node
   * group, or with autoscaling a Karpenter NodePool, labelled with its id.
   * A one-model stack with a canary: no first label (its nodes stay as they
   * were), and the canary's nodes, labelled and tainted with its name.
   */
  models?: {
    /** @default none: the first model's nodes carry no model label (a one-model stack) */
    firstNodeLabel?: { key: string; value: string };
    further: ReadonlyArray<{
      id: string;
      instanceType: string;
      nodes: number;
      diskGiB: number;
      nodeLabel: { key: string; value: string };
      /**
       * A taint of this group's own beside the GPU one (the one-model canary's: conventions/workload.ts CANARY_NODE_TAINT_KEY).
       * @default none
       */
      taint?: { key: string; value: string };
      /** AWS tags of this model's GPU nodes (infra/tags.ts modelTags). */
      tags: Record<string, string>;
      nodePool?: { nodePool: NodePool; ec2NodeClass: EC2NodeClass };
    }>;
  };
}

/** An existing cluster, from the `kubeconfig` secret. */
export interface KubeconfigCluster {
  mode: "kubeconfig";
  kubeconfig: pulumi.Output<string>;
}

/** An existing cluster exported by another stack. */
export interface ReferencedCluster {
  mode: "stackReference";
  /** `<org>/<project>/<stack>`. */
  stackReference: string;
  kubeconfigOutput: string;
  clusterNameOutput: string;
}

export interface ClusterArgs {
  /** How the stack gets its cluster: created here, from the kubeconfig secret, or from another stack's outputs. */
  readonly cluster: CreatedCluster | KubeconfigCluster | ReferencedCluster;
  /** AWS tags (the stack's) for the shared AWS resources of a created cluster (unused by the other modes). */
  readonly tags: Record<string, string>;
}

/** What createEks hands to the add-on installation. */
interface EksParts {
  cluster: eks.Cluster;
  clusterName: pulumi.Output<string>;
  kubeconfig: pulumi.Output<string>;
  region: pulumi.Output<string>;
  vpcId: pulumi.Input<string>;
  gpuInstanceType: string;
  /** The fixed GPU node group; absent when Karpenter launches the GPU nodes. */
  gpuNodes?: eks.ManagedNodeGroup;
  /** Further models' fixed GPU node groups (a stack of several). */
  furtherGpuNodes: eks.ManagedNodeGroup[];
  /** Every GPU instance type the nodes may have (the device plugin runs on each). */
  gpuInstanceTypes: string[];
  /** The taint keys of GPU node groups of their own (a one-model canary's): the device plugin tolerates them too. */
  ownTaintKeys: string[];
  systemNodes: eks.ManagedNodeGroup;
  nodeRole: aws.iam.Role;
  privateSubnetIds: pulumi.Input<string[]>;
  lbControllerRole: aws.iam.Role;
  lbControllerPolicy: aws.iam.RolePolicyAttachment;
}

export class Cluster extends pulumi.ComponentResource {
  readonly provider: k8s.Provider;
  readonly clusterName: pulumi.Output<string>;
  readonly kubeconfig: pulumi.Output<string>;
  /** What the workload must wait for: GPU nodes and the device plugin (create mode). */
  readonly gpuReady: pulumi.Resource[];
  /** What the LoadBalancer Service must wait for: the load balancer controller and its webhook (create mode). */
  readonly loadBalancerReady: pulumi.Resource[];
  /** The untainted system nodes cluster controllers (KEDA) run on (create mode). */
  readonly systemNodes: pulumi.Resource[];
  /** The stack-installed Prometheus Operator stack, if any: ServiceMonitors and rules wait for its CRDs. */
  readonly monitoringReady: pulumi.Resource[];
  /** The EKS cluster security group every node (and, with the VPC CNI, every pod) carries: create mode only. */
  readonly nodeSecurityGroupId: pulumi.Output<string> | undefined;

  constructor(name: string, args: ClusterArgs, opts?: pulumi.ComponentResourceOptions) {
    super("triton-ft:cluster:Cluster", name, {}, opts);
    const c = args.cluster;
    const created = c.mode === "create" ? this.createEks(name, c, args.tags) : undefined;
    this.nodeSecurityGroupId = created?.cluster.eksCluster.vpcConfig.clusterSecurityGroupId;
    if (created) {
      this.clusterName = created.clusterName;
      this.kubeconfig = created.kubeconfig;
    } else if (c.mode === "kubeconfig") {
      this.kubeconfig = pulumi.secret(c.kubeconfig);
      this.clusterName = pulumi.unsecret(c.kubeconfig.apply(kubeconfigClusterName));
    } else if (c.mode === "stackReference") {
      const ref = new pulumi.StackReference(`${name}-ref`, { name: c.stackReference }, { parent: this });
      this.kubeconfig = pulumi.secret(ref.requireOutput(c.kubeconfigOutput).apply(kubeconfigText));
      this.clusterName = pulumi.unsecret(ref.requireOutput(c.clusterNameOutput).apply(String));
    } else {
      throw new pulumi.ResourceError("unreachable: cluster mode create without its parts", this);
    }
    // ConfigMaps and Secrets updated in place. By default the provider replaces one whose data
    // changes, and ours are explicitly named, so the replacement deletes the object before creating
    // it again: the gateway's config (a serving change) or its keys (a key rotation) would be gone
    // for a moment, and a pod starting then could not mount them. Found by the engine suite's
    // serving-change and key-rotation scenarios. The gateway pods roll on a change anyway (the
    // checksum of both in their template). For a deployed stack this is an update of the
    // provider's inputs, not a replacement of it or of anything it manages (engine suite).
    this.provider = new k8s.Provider(
      `${name}-k8s`,
      { kubeconfig: this.kubeconfig, enableConfigMapMutable: true, enableSecretMutable: true },
      { parent: this },
    );
    if (created && c.mode === "create") {
      const devicePlugin = this.installDevicePlugin(name, created);
      const lbController = this.installLoadBalancerController(name, created);
      const furtherPools = (c.models?.further ?? []).flatMap((f) =>
        f.nodePool ? [{ id: f.id, tags: f.tags, ...f.nodePool }] : [],
      );
      const pool =
        c.gpuNodePool || furtherPools.length > 0
          ? this.installGpuNodePool(
              name,
              created,
              { ...c.gpuNodePool, nodeTags: c.gpuNodeTags, furtherPools },
              args.tags,
            )
          : undefined;
      this.gpuReady = [
        ...(created.gpuNodes ? [created.gpuNodes] : []),
        ...created.furtherGpuNodes,
        ...(pool?.ready ?? []),
        devicePlugin,
      ];
      this.loadBalancerReady = [lbController];
      this.systemNodes = [created.systemNodes];
      this.monitoringReady = c.installMonitoring
        ? [installMonitoring(name, this.provider, [created.systemNodes], this)]
        : [];
    } else {
      this.gpuReady = [];
      this.loadBalancerReady = [];
      this.systemNodes = [];
      this.monitoringReady = [];
    }
    this.registerOutputs({ clusterName: this.clusterName, kubeconfig: this.kubeconfig });
  }

  /** Control plane, node role, system and GPU node groups, and the load balancer controller's IAM. */
  private createEks(name: string, c: CreatedCluster, tags: Record<string, string>): EksParts {
    const parent = { parent: this };
    const net = c.network;

    // Envelope encryption of Kubernetes secrets with a key this stack owns.
    const secretsKey = new aws.kms.Key(
      `${name}-secrets`,
      { description: `EKS secrets encryption for ${name} (triton-ft)`, ...SECRETS_KEY, tags },
      parent,
    );
    // @pulumi/eks is a multi-language component: the control plane, its security
    // groups, OIDC provider and add-ons are created inside the eks plugin.
    const cluster = new eks.Cluster(
      name,
      {
        version: c.kubernetesVersion,
        vpcId: net.vpcId,
        publicSubnetIds: net.publicSubnetIds,
        privateSubnetIds: net.privateSubnetIds,
        nodeAssociatePublicIpAddress: false,
        skipDefaultNodeGroup: true,
        authenticationMode: eks.AuthenticationMode.Api,
        createOidcProvider: true,
        // The managed CoreDNS add-on waits for schedulable nodes, which do not exist
        // until the node groups below; EKS's self-managed CoreDNS has no such wait.
        corednsAddonOptions: { enabled: false },
        // The API endpoint: private, or public from the deployers' CIDRs only (resolve/clusterAccess.ts).
        endpointPrivateAccess: c.endpoint.endpointPrivateAccess,
        endpointPublicAccess: c.endpoint.endpointPublicAccess,
        ...(c.endpoint.publicAccessCidrs ? { publicAccessCidrs: c.endpoint.publicAccessCidrs } : {}),
        enabledClusterLogTypes: [...CONTROL_PLANE_LOG_TYPES],
        encryptionConfigKeyArn: secretsKey.arn,
        // The VPC CNI's network policy agent: without it the NetworkPolicies are not enforced.
        vpcCniOptions: { enableNetworkPolicy: true },
        tags,
      },
      parent,
    );
    const clusterName = cluster.eksCluster.apply((k) => k.name);
    const partition = aws.getPartitionOutput({}, parent).partition;
    const { systemNodes, gpuNodes, furtherGpuNodes, nodeRole } = this.nodeGroups(name, c, cluster, partition, tags);
    const region = aws.getRegionOutput({}, parent).region;
    const { role, attachment } = this.lbControllerIam(name, cluster, partition, tags);
    return {
      cluster,
      clusterName,
      kubeconfig: pulumi.secret(cluster.kubeconfigJson),
      region,
      vpcId: net.vpcId,
      gpuInstanceType: c.gpuInstanceType,
      gpuNodes,
      furtherGpuNodes,
      gpuInstanceTypes: [...new Set([c.gpuInstanceType, ...(c.models?.further ?? []).map((f) => f.instanceType)])],
      ownTaintKeys: [...new Set((c.models?.further ?? []).flatMap((f) => (f.taint ? [f.taint.key] : [])))],
      systemNodes,
      nodeRole,
      privateSubnetIds: net.privateSubnetIds,
      lbControllerRole: role,
      lbControllerPolicy: attachment,
    };
  }

  private nodeGroups(
    name: string,
    c: CreatedCluster,
    cluster: eks.Cluster,
    partition: pulumi.Output<string>,
    tags: Record<string, string>,
  ): {
    systemNodes: eks.ManagedNodeGroup;
    gpuNodes?: eks.ManagedNodeGroup;
    furtherGpuNodes: eks.ManagedNodeGroup[];
    nodeRole: aws.iam.Role;
  } {
    const parent = { parent: this };
    const nodeRole = new aws.iam.Role(`${name}-nodes`, { assumeRolePolicy: EC2_ASSUME_ROLE_POLICY, tags }, parent);
    const attachments = EKS_NODE_POLICIES.map(
      (policy) =>
        new aws.iam.RolePolicyAttachment(
          `${name}-nodes-${policy}`,
          { role: nodeRole.name, policyArn: pulumi.interpolate`arn:${partition}:iam::aws:policy/${policy}` },
          parent,
        ),
    );
    // Launch templates: encrypted root volumes and IMDSv2 with hop limit 1 (cloud/eks.ts).
    const template = (pool: string, diskGiB: number, tags: Record<string, string>) => {
      const lt = new aws.ec2.LaunchTemplate(
        `${name}-${pool}`,
        {
          description: `triton-ft ${pool} nodes: encrypted root volume, IMDSv2 hop limit 1`,
          ...nodeLaunchTemplate(diskGiB),
          tagSpecifications: [
            { resourceType: "instance", tags },
            { resourceType: "volume", tags },
          ],
          tags,
        },
        parent,
      );
      return { id: lt.id, version: lt.latestVersion.apply((v) => String(v)) };
    };
    const systemNodes = new eks.ManagedNodeGroup(
      `${name}-system`,
      {
        cluster,
        nodeRoleArn: nodeRole.arn,
        amiType: SYSTEM_NODES.amiType,
        instanceTypes: [SYSTEM_NODES.instanceType],
        launchTemplate: template("system", SYSTEM_NODES.diskGiB, tags),
        subnetIds: c.network.privateSubnetIds,
        scalingConfig: { minSize: SYSTEM_NODES.count, desiredSize: SYSTEM_NODES.count, maxSize: SYSTEM_NODES.count },
        // The gateway's node affinity selects this pool (render/scheduling.ts).
        labels: { [SYSTEM_NODE_LABEL.key]: SYSTEM_NODE_LABEL.value },
        tags,
      },
      { parent: this, dependsOn: attachments },
    );
    const gpuGroup = (
      suffix: string,
      g: {
        instanceType: string;
        nodes: number;
        diskGiB: number;
        nodeLabel?: { key: string; value: string };
        taint?: { key: string; value: string };
        tags: Record<string, string>;
      },
    ) =>
      new eks.ManagedNodeGroup(
        `${name}-gpu${suffix}`,
        {
          cluster,
          nodeRoleArn: nodeRole.arn,
          amiType: GPU_AMI_TYPE,
          instanceTypes: [g.instanceType],
          capacityType: "ON_DEMAND",
          // Room for two server images side by side during a rollout (model/sizing.ts nodeDiskGiB).
          launchTemplate: template(`gpu${suffix}`, g.diskGiB, g.tags),
          subnetIds: c.network.privateSubnetIds,
          // No autoscaler: a fixed pool with one spare pod slot for the rolling update's surge pod.
          scalingConfig: { minSize: g.nodes, desiredSize: g.nodes, maxSize: g.nodes },
          // A one-model stack's canary: a taint of its own keeps the stable's pods off its nodes.
          taints: [GPU_NODE_TAINT, ...(g.taint ? [{ ...g.taint, effect: "NO_SCHEDULE" as const }] : [])],
          // Several models: each model's pods require its own label (conventions/workload.ts MODEL_NODE_LABEL_KEY).
          labels: gpuNodeGroupLabels(g.nodeLabel),
          // The model's: its GPU nodes are its cost.
          tags: g.tags,
        },
        { parent: this, dependsOn: attachments },
      );
    const furtherGpuNodes = (c.models?.further ?? []).filter((f) => !f.nodePool).map((f) => gpuGroup(`-${f.id}`, f));
    // With serving.autoscaling Karpenter launches the GPU nodes (installGpuNodePool) instead.
    if (c.gpuNodePool) return { systemNodes, furtherGpuNodes, nodeRole };
    const gpuNodes = gpuGroup("", {
      instanceType: c.gpuInstanceType,
      nodes: c.gpuNodes,
      diskGiB: c.gpuNodeDiskGiB,
      nodeLabel: c.models?.firstNodeLabel,
      tags: c.gpuNodeTags,
    });
    return { systemNodes, gpuNodes, furtherGpuNodes, nodeRole };
  }

  /** IRSA role of the load balancer controller, with the controller's published policy. */
  private lbControllerIam(
    name: string,
    cluster: eks.Cluster,
    partition: pulumi.Output<string>,
    tags: Record<string, string>,
  ): { role: aws.iam.Role; attachment: aws.iam.RolePolicyAttachment } {
    const parent = { parent: this };
    const role = new aws.iam.Role(
      `${name}-lb-controller`,
      {
        assumeRolePolicy: pulumi
          .all([cluster.oidcProviderArn, cluster.oidcIssuer])
          .apply(([arn, issuer]) =>
            JSON.stringify(
              serviceAccountTrustPolicy(arn, issuer, LB_CONTROLLER_NAMESPACE, LB_CONTROLLER_SERVICE_ACCOUNT),
            ),
          ),
        tags,
      },
      parent,
    );
    // The controller's own published policy for the installed version: what the
    // controller needs is the controller's to say (a test ties it to the chart).
    const policy = new aws.iam.Policy(
      `${name}-lb-controller`,
      {
        description: `AWS Load Balancer Controller ${LB_CONTROLLER_POLICY_VERSION}: the controller's published IAM policy`,
        policy: partition.apply((p) => JSON.stringify(publishedLbControllerPolicy(p))),
        tags,
      },
      parent,
    );
    const attachment = new aws.iam.RolePolicyAttachment(
      `${name}-lb-controller`,
      { role: role.name, policyArn: policy.arn },
      parent,
    );
    return { role, attachment };
  }

  private installDevicePlugin(name: string, e: EksParts): k8s.helm.v3.Release {
    return new k8s.helm.v3.Release(
      `${name}-nvidia-device-plugin`,
      {
        chart: CHARTS.devicePlugin.chart,
        version: CHARTS.devicePlugin.version,
        repositoryOpts: { repo: CHARTS.devicePlugin.repo },
        namespace: "kube-system",
        values: devicePluginValues(
          e.gpuInstanceTypes.length === 1 ? e.gpuInstanceType : e.gpuInstanceTypes,
          e.ownTaintKeys,
        ),
      },
      { parent: this, provider: this.provider, dependsOn: [e.gpuNodes ?? e.systemNodes] },
    );
  }

  private installLoadBalancerController(name: string, e: EksParts): k8s.helm.v3.Release {
    return new k8s.helm.v3.Release(
      `${name}-aws-load-balancer-controller`,
      {
        chart: CHARTS.lbController.chart,
        version: CHARTS.lbController.version,
        repositoryOpts: { repo: CHARTS.lbController.repo },
        namespace: LB_CONTROLLER_NAMESPACE,
        values: {
          clusterName: e.clusterName,
          // Given explicitly so the controller needs no instance metadata lookups.
          region: e.region,
          vpcId: e.vpcId,
          serviceAccount: {
            create: true,
            name: LB_CONTROLLER_SERVICE_ACCOUNT,
            annotations: { "eks.amazonaws.com/role-arn": e.lbControllerRole.arn },
          },
          // The workload sets loadBalancerClass itself; without the mutator the controller
          // does not claim other teams' LoadBalancer Services, and its webhook being down
          // cannot block Service creation.
          enableServiceMutatorWebhook: false,
        },
      },
      { parent: this, provider: this.provider, dependsOn: [e.systemNodes, e.lbControllerPolicy] },
    );
  }

  /** Karpenter and the stack's NodePool/EC2NodeClass, on the cluster's node role, subnets and security group. */
  private installGpuNodePool(
    name: string,
    e: EksParts,
    pool: Pick<GpuNodePoolArgs, "nodePool" | "ec2NodeClass" | "nodeTags" | "furtherPools">,
    tags: Record<string, string>,
  ): GpuNodePool {
    return new GpuNodePool(
      `${name}-gpu`,
      {
        ...pool,
        provider: this.provider,
        tags,
        cluster: {
          clusterName: e.clusterName,
          nodeRole: e.nodeRole,
          oidcProviderArn: e.cluster.oidcProviderArn,
          oidcIssuer: e.cluster.oidcIssuer,
          securityGroupId: e.cluster.eksCluster.vpcConfig.clusterSecurityGroupId,
          subnetIds: e.privateSubnetIds,
          systemNodes: [e.systemNodes],
        },
      },
      { parent: this },
    );
  }
}
