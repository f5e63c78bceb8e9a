/**
 * The Kubernetes cluster Triton runs on, in one of three modes:
 * - `create`: an EKS cluster (@pulumi/eks) with a tainted GPU managed node group
 *   on the NVIDIA AL2023 AMI, a small system node group, the NVIDIA device plugin
 *   and the AWS Load Balancer Controller (IRSA) that provisions the NLB;
 * - `kubeconfig`: an existing cluster reached through the `kubeconfig` secret;
 * - `stackReference`: an existing cluster exported by another stack.
 * Whatever the mode, consumers get a Kubernetes provider, the cluster name, the
 * kubeconfig (secret) and the resources the workload must wait for.
 */
import * as aws from "@pulumi/aws";
import * as eks from "@pulumi/eks";
import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { parse } from "yaml";
import type { StackSecrets } from "../stackConfig";
import type { ResolvedStack } from "../validate";
import { GPU_TAINT, INSTANCE_TYPE_LABEL } from "../render/k8s";
import { planWorkload } from "../render/k8sPlan";
import {
  LB_CONTROLLER_NAMESPACE,
  LB_CONTROLLER_SERVICE_ACCOUNT,
  irsaTrustPolicy,
  lbControllerPolicy,
} from "./lbControllerPolicy";

/** Pinned Helm charts. Controller v2.10+ is needed for NLB listener attributes (the idle timeout). */
export const CHARTS = {
  lbController: { chart: "aws-load-balancer-controller", repo: "https://aws.github.io/eks-charts", version: "1.13.0" },
  devicePlugin: {
    chart: "nvidia-device-plugin",
    repo: "https://nvidia.github.io/k8s-device-plugin",
    version: "0.17.0",
  },
} as const;

/** EKS AMI type with the NVIDIA driver; it does not advertise nvidia.com/gpu without the device plugin. */
export const GPU_AMI_TYPE = "AL2023_x86_64_NVIDIA";
/**
 * Untainted nodes for CoreDNS and the load balancer controller, which do not
 * tolerate the GPU taint. Two small nodes in different AZs keep both highly
 * available; their size does not depend on the model.
 */
export const SYSTEM_NODES = { instanceType: "t3.large", count: 2, amiType: "AL2023_x86_64_STANDARD" } as const;
/** Node label identifying the GPU pool (also set by NVIDIA's feature discovery, which this stack does not install). */
export const GPU_NODE_LABEL = "nvidia.com/gpu.present";

const NODE_POLICIES = [
  "AmazonEKSWorkerNodePolicy",
  "AmazonEKS_CNI_Policy",
  "AmazonEC2ContainerRegistryReadOnly",
] as const;

export interface ClusterNetwork {
  vpcId: pulumi.Input<string>;
  publicSubnetIds: pulumi.Input<string[]>;
  privateSubnetIds: pulumi.Input<string[]>;
}

export interface ClusterArgs {
  stack: ResolvedStack;
  secrets: StackSecrets;
  /** Required in create mode: nodes go in the private subnets, internet-facing NLBs in the public ones. */
  network?: ClusterNetwork;
  tags: Record<string, string>;
}

/**
 * The EKS cluster name a kubeconfig points at: the current context's cluster,
 * with the ARN prefix `aws eks update-kubeconfig` writes removed.
 */
export function kubeconfigClusterName(kubeconfig: string): string {
  const doc: unknown = parse(kubeconfig);
  if (doc === null || typeof doc !== "object") throw new Error("kubeconfig: not a YAML or JSON document");
  const k = doc as { "current-context"?: string; contexts?: Array<{ name: string; context?: { cluster?: string } }> };
  const contexts = k.contexts ?? [];
  const current =
    contexts.find((c) => c.name === k["current-context"]) ?? (contexts.length === 1 ? contexts[0] : undefined);
  const cluster = current?.context?.cluster;
  if (!cluster) throw new Error("kubeconfig: no current-context naming a cluster; set current-context");
  const arn = /^arn:aws[\w-]*:eks:[^:]+:\d{12}:cluster\/(.+)$/.exec(cluster);
  return arn?.[1] ?? cluster;
}

/** A stack output may be a kubeconfig object (as @pulumi/eks exports it) or a string. */
export function kubeconfigText(value: unknown): string {
  if (typeof value === "string" && value.trim() !== "") return value;
  if (value !== null && typeof value === "object") return JSON.stringify(value);
  throw new Error("the referenced stack's kubeconfig output is empty or not a kubeconfig");
}

export class Cluster extends pulumi.ComponentResource {
  readonly provider: k8s.Provider;
  readonly clusterName: pulumi.Output<string>;
  readonly kubeconfig: pulumi.Output<string>;
  /** What the workload must wait for: GPU nodes and the device plugin (create mode). */
  readonly gpuReady: pulumi.Resource[] = [];
  /** What the LoadBalancer Service must wait for: the load balancer controller and its webhook (create mode). */
  readonly loadBalancerReady: pulumi.Resource[] = [];

  constructor(name: string, args: ClusterArgs, opts?: pulumi.ComponentResourceOptions) {
    super("triton-ft:cluster:Cluster", name, {}, opts);
    const c = args.stack.config.cluster;
    let installAddons: ((provider: k8s.Provider) => void) | undefined;
    if (c.mode === "create") {
      const created = this.createEks(name, args);
      this.clusterName = created.clusterName;
      this.kubeconfig = created.kubeconfig;
      installAddons = created.installAddons;
    } else if (c.mode === "kubeconfig") {
      if (!args.secrets.kubeconfig) throw new Error("cluster.mode kubeconfig needs the kubeconfig secret");
      this.kubeconfig = pulumi.secret(args.secrets.kubeconfig);
      this.clusterName = pulumi.unsecret(args.secrets.kubeconfig.apply(kubeconfigClusterName));
    } else {
      if (!c.stackReference) throw new Error("cluster.mode stackReference needs cluster.stackReference");
      const ref = new pulumi.StackReference(`${name}-ref`, { name: c.stackReference }, { parent: this });
      this.kubeconfig = pulumi.secret(ref.requireOutput(c.kubeconfigOutput).apply(kubeconfigText));
      this.clusterName = pulumi.unsecret(ref.requireOutput(c.clusterNameOutput).apply(String));
    }
    this.provider = new k8s.Provider(`${name}-k8s`, { kubeconfig: this.kubeconfig }, { parent: this });
    installAddons?.(this.provider);
    this.registerOutputs({ clusterName: this.clusterName, kubeconfig: this.kubeconfig });
  }

  private createEks(
    name: string,
    args: ClusterArgs,
  ): {
    clusterName: pulumi.Output<string>;
    kubeconfig: pulumi.Output<string>;
    installAddons: (provider: k8s.Provider) => void;
  } {
    const s = args.stack;
    const net = args.network;
    if (!net) throw new Error("cluster.mode create needs the network (VPC and subnets)");
    const parent = { parent: this };

    // @pulumi/eks is a multi-language component: the control plane, its security
    // groups, OIDC provider and add-ons are created inside the eks plugin.
    const cluster = new eks.Cluster(
      name,
      {
        version: s.config.cluster.kubernetesVersion,
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
        tags: args.tags,
      },
      parent,
    );
    const clusterName = cluster.eksCluster.apply((k) => k.name);

    const nodeRole = new aws.iam.Role(
      `${name}-nodes`,
      {
        assumeRolePolicy: JSON.stringify({
          Version: "2012-10-17",
          Statement: [{ Effect: "Allow", Principal: { Service: "ec2.amazonaws.com" }, Action: "sts:AssumeRole" }],
        }),
        tags: args.tags,
      },
      parent,
    );
    const partition = aws.getPartitionOutput({}, parent).partition;
    const attachments = NODE_POLICIES.map(
      (policy) =>
        new aws.iam.RolePolicyAttachment(
          `${name}-nodes-${policy}`,
          { role: nodeRole.name, policyArn: pulumi.interpolate`arn:${partition}:iam::aws:policy/${policy}` },
          parent,
        ),
    );

    const system = new eks.ManagedNodeGroup(
      `${name}-system`,
      {
        cluster,
        nodeRoleArn: nodeRole.arn,
        amiType: SYSTEM_NODES.amiType,
        instanceTypes: [SYSTEM_NODES.instanceType],
        subnetIds: net.privateSubnetIds,
        scalingConfig: { minSize: SYSTEM_NODES.count, desiredSize: SYSTEM_NODES.count, maxSize: SYSTEM_NODES.count },
        tags: args.tags,
      },
      { parent: this, dependsOn: attachments },
    );

    const plan = planWorkload(s);
    const gpu = new eks.ManagedNodeGroup(
      `${name}-gpu`,
      {
        cluster,
        nodeRoleArn: nodeRole.arn,
        amiType: GPU_AMI_TYPE,
        instanceTypes: [s.servingInstance.type],
        capacityType: "ON_DEMAND",
        // Room for two server images side by side during a rollout (model/sizing.ts nodeDiskGiB).
        diskSize: s.nodeDiskGiB,
        subnetIds: net.privateSubnetIds,
        // No autoscaler: a fixed pool with one spare pod slot for the rolling update's surge pod.
        scalingConfig: { minSize: plan.gpuNodes, desiredSize: plan.gpuNodes, maxSize: plan.gpuNodes },
        taints: [{ key: GPU_TAINT.key, value: GPU_TAINT.value, effect: "NO_SCHEDULE" }],
        labels: { [GPU_NODE_LABEL]: "true" },
        tags: args.tags,
      },
      { parent: this, dependsOn: attachments },
    );

    const kubeconfig = pulumi.secret(cluster.kubeconfigJson);
    const region = aws.getRegionOutput({}, parent).region;
    const accountId = aws.getCallerIdentityOutput({}, parent).accountId;
    const lbRole = new aws.iam.Role(
      `${name}-lb-controller`,
      {
        assumeRolePolicy: pulumi
          .all([cluster.oidcProviderArn, cluster.oidcIssuer])
          .apply(([arn, issuer]) => JSON.stringify(irsaTrustPolicy(arn, issuer))),
        tags: args.tags,
      },
      parent,
    );
    const lbPolicy = new aws.iam.Policy(
      `${name}-lb-controller`,
      {
        description: "AWS Load Balancer Controller: NLBs for Services of this cluster only",
        policy: pulumi
          .all([partition, region, accountId, clusterName, net.vpcId])
          .apply(([p, r, a, cn, vpc]) =>
            JSON.stringify(lbControllerPolicy({ partition: p, region: r, accountId: a, clusterName: cn, vpcId: vpc })),
          ),
        tags: args.tags,
      },
      parent,
    );
    const lbAttach = new aws.iam.RolePolicyAttachment(
      `${name}-lb-controller`,
      { role: lbRole.name, policyArn: lbPolicy.arn },
      parent,
    );

    const installAddons = (provider: k8s.Provider): void => {
      const devicePlugin = new k8s.helm.v3.Release(
        `${name}-nvidia-device-plugin`,
        {
          chart: CHARTS.devicePlugin.chart,
          version: CHARTS.devicePlugin.version,
          repositoryOpts: { repo: CHARTS.devicePlugin.repo },
          namespace: "kube-system",
          values: {
            // The chart's default affinity wants NVIDIA feature-discovery labels this stack
            // does not install: select the serving instance type instead.
            affinity: {
              nodeAffinity: {
                requiredDuringSchedulingIgnoredDuringExecution: {
                  nodeSelectorTerms: [
                    {
                      matchExpressions: [
                        { key: INSTANCE_TYPE_LABEL, operator: "In", values: [s.servingInstance.type] },
                      ],
                    },
                  ],
                },
              },
            },
            tolerations: [{ key: GPU_TAINT.key, operator: "Exists", effect: GPU_TAINT.effect }],
          },
        },
        { parent: this, provider, dependsOn: [gpu] },
      );

      const lbController = new k8s.helm.v3.Release(
        `${name}-aws-load-balancer-controller`,
        {
          chart: CHARTS.lbController.chart,
          version: CHARTS.lbController.version,
          repositoryOpts: { repo: CHARTS.lbController.repo },
          namespace: LB_CONTROLLER_NAMESPACE,
          values: {
            clusterName,
            // Given explicitly so the controller needs no instance metadata lookups.
            region,
            vpcId: net.vpcId,
            serviceAccount: {
              create: true,
              name: LB_CONTROLLER_SERVICE_ACCOUNT,
              annotations: { "eks.amazonaws.com/role-arn": lbRole.arn },
            },
            // The workload sets loadBalancerClass itself; without the mutator the controller
            // does not claim other teams' LoadBalancer Services, and its webhook being down
            // cannot block Service creation.
            enableServiceMutatorWebhook: false,
          },
        },
        { parent: this, provider, dependsOn: [system, lbAttach] },
      );

      this.gpuReady.push(gpu, devicePlugin);
      this.loadBalancerReady.push(lbController);
    };
    return { clusterName, kubeconfig, installAddons };
  }
}
