/**
 * The stack's scaling and observability resources: queue-based autoscaling of the Triton pods and
 * in-flight-based autoscaling of the gateway (KEDA ScaledObjects), GPU nodes that follow them (Karpenter with its IAM role,
 * interruption queue, NodePool and EC2NodeClass), and observability (DCGM
 * exporter, dashboard ConfigMap, ServiceMonitor + PrometheusRule when the
 * Prometheus Operator is present). Objects come from render/scaling.ts; this
 * component only adds the cluster's references and the order of creation.
 */
import * as aws from "@pulumi/aws";
import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { MONITORING_NAMESPACE } from "../config";
import { GRAFANA_DASHBOARD_LABEL } from "../render/dashboard";
import { SCRAPER_NAMESPACE_LABEL } from "../render/gatewayManifests";
import type { ScaledObject, SharedScalingManifests } from "../render/scaling";
import type { EC2NodeClass, NodePool } from "../render/karpenter";
import {
  KARPENTER_NAMESPACE,
  KARPENTER_SERVICE_ACCOUNT,
  controllerPolicies,
  controllerPolicyNames,
  interruptionQueueRetentionSeconds,
  interruptionRules,
} from "../cloud/karpenter";
import { serviceAccountTrustPolicy } from "../cloud/iam";
import { CHARTS } from "../catalog/charts";

export const KEDA_NAMESPACE = "keda";

/**
 * kube-prometheus-stack for a created cluster that autoscales without a Prometheus of
 * its own (serving.autoscaling without prometheusUrl): the operator, Prometheus (whose
 * `prometheus-operated` Service the scaler queries), Alertmanager, Grafana (its sidecar
 * loads the dashboard ConfigMap from every namespace) and kube-state-metrics. No
 * node-exporter: it needs host namespaces and paths, and DCGM covers the GPUs.
 */
export function installMonitoring(
  name: string,
  provider: k8s.Provider,
  systemNodes: pulumi.Resource[],
  parent: pulumi.Resource,
): k8s.helm.v3.Release {
  // Labelled as the metrics scraper's namespace: the serving namespace's NetworkPolicies admit it to the metrics ports.
  const ns = new k8s.core.v1.Namespace(
    `${name}-monitoring`,
    { metadata: { name: MONITORING_NAMESPACE, labels: { [SCRAPER_NAMESPACE_LABEL]: "true" } } },
    { parent, provider },
  );
  return new k8s.helm.v3.Release(
    `${name}-monitoring`,
    {
      chart: CHARTS.monitoring.chart,
      version: CHARTS.monitoring.version,
      repositoryOpts: { repo: CHARTS.monitoring.repo },
      namespace: MONITORING_NAMESPACE,
      values: {
        fullnameOverride: "kps",
        nodeExporter: { enabled: false },
        prometheus: {
          prometheusSpec: {
            // Select every ServiceMonitor and rule in the cluster, not only the release's own.
            serviceMonitorSelectorNilUsesHelmValues: false,
            podMonitorSelectorNilUsesHelmValues: false,
            ruleSelectorNilUsesHelmValues: false,
          },
        },
        grafana: { sidecar: { dashboards: { enabled: true, label: GRAFANA_DASHBOARD_LABEL, searchNamespace: "ALL" } } },
      },
    },
    { parent, provider, dependsOn: [ns, ...systemNodes] },
  );
}

/** What Karpenter needs from a created EKS cluster. */
export interface KarpenterCluster {
  clusterName: pulumi.Input<string>;
  nodeRole: aws.iam.Role;
  oidcProviderArn: pulumi.Input<string>;
  oidcIssuer: pulumi.Input<string>;
  /** The EKS cluster security group the nodes join. */
  securityGroupId: pulumi.Input<string>;
  subnetIds: pulumi.Input<string[]>;
  /** The untainted nodes the controllers run on. */
  systemNodes: pulumi.Resource[];
}

/** One model's ScaledObject (autoscaled models only) and the Deployment it scales. */
export interface ModelScaler {
  /** Model id; the stack's first model's keeps a one-model stack's resource name. */
  readonly id: string;
  /** The stack's first model: its ScaledObject keeps the one-model name `<name>-scaledobject`. */
  readonly first: boolean;
  readonly scaledObject: ScaledObject;
  /** The Triton Deployment it scales. */
  readonly deployment: pulumi.Resource;
}

export interface ScalingArgs {
  /** What the stack shares (render/scaling.ts renderSharedScaling): DCGM, dashboard, alerts, the gateway's monitor and scaler. */
  readonly shared: SharedScalingManifests;
  /**
   * Each autoscaled model's ScaledObject and Deployment.
   * @default none: no model autoscales
   */
  readonly models?: readonly ModelScaler[];
  /** The cluster's Kubernetes provider. */
  readonly provider: k8s.Provider;
  /** The untainted nodes KEDA runs on (create mode). */
  readonly systemNodes: pulumi.Resource[];
  /** The stack's Prometheus Operator (when it installs one): the operator objects wait for its CRDs. */
  readonly monitoringReady: pulumi.Resource[];
  /** The serving namespace: the scaling objects are created in it, so they wait for it. */
  readonly namespace: pulumi.Resource;
  /** The gateway (its ScaledObject targets its Deployment; its ServiceMonitor its metrics Service). */
  readonly gateway: pulumi.Resource;
}

/**
 * Pod autoscaling and observability, created after the Triton workloads: the
 * DCGM exporter and dashboard always, the operator objects when the Prometheus
 * Operator is present, KEDA and the ScaledObjects when any model autoscales.
 */
export class Scaling extends pulumi.ComponentResource {
  constructor(name: string, args: ScalingArgs, opts?: pulumi.ComponentResourceOptions) {
    super("triton-ft:scaling:Scaling", name, {}, opts);
    const m = args.shared;
    const k8sOpts = { parent: this, provider: args.provider, dependsOn: [args.namespace] };

    new k8s.core.v1.ConfigMap(`${name}-dcgm-counters`, m.dcgm.configMap, k8sOpts);
    new k8s.apps.v1.DaemonSet(`${name}-dcgm-exporter`, m.dcgm.daemonSet as k8s.apps.v1.DaemonSetArgs, k8sOpts);
    new k8s.core.v1.Service(`${name}-dcgm-exporter`, m.dcgm.service as k8s.core.v1.ServiceArgs, k8sOpts);
    new k8s.networking.v1.NetworkPolicy(
      `${name}-dcgm-exporter`,
      m.dcgm.networkPolicy as k8s.networking.v1.NetworkPolicyArgs,
      k8sOpts,
    );
    new k8s.core.v1.ConfigMap(`${name}-dashboard`, m.dashboardConfigMap, k8sOpts);
    if (m.operatorPresent) {
      const opOpts = { ...k8sOpts, dependsOn: [args.namespace, ...args.monitoringReady] };
      new k8s.apiextensions.CustomResource(`${name}-dcgm-servicemonitor`, m.dcgm.serviceMonitor, opOpts);
      new k8s.apiextensions.CustomResource(`${name}-gateway-servicemonitor`, m.gatewayServiceMonitor, opOpts);
      new k8s.apiextensions.CustomResource(`${name}-alerts`, m.prometheusRule, opOpts);
    }
    const models = args.models ?? [];
    if (models.length > 0 || m.gatewayScaledObject) {
      const keda = new k8s.helm.v3.Release(
        `${name}-keda`,
        {
          chart: CHARTS.keda.chart,
          version: CHARTS.keda.version,
          repositoryOpts: { repo: CHARTS.keda.repo },
          namespace: KEDA_NAMESPACE,
          createNamespace: true,
        },
        { parent: this, provider: args.provider, dependsOn: args.systemNodes },
      );
      for (const model of models)
        new k8s.apiextensions.CustomResource(
          model.first ? `${name}-scaledobject` : `${name}-scaledobject-${model.id}`,
          model.scaledObject,
          { parent: this, provider: args.provider, dependsOn: [keda, model.deployment] },
        );
      if (m.gatewayScaledObject)
        new k8s.apiextensions.CustomResource(`${name}-gateway-scaledobject`, m.gatewayScaledObject, {
          parent: this,
          provider: args.provider,
          dependsOn: [keda, args.gateway],
        });
    }
    this.registerOutputs({});
  }
}

export interface GpuNodePoolArgs {
  /**
   * The first model's rendered NodePool (render/karpenter.ts), applied as rendered; absent when only further models autoscale.
   * @default none: only further models autoscale
   */
  readonly nodePool?: NodePool;
  /**
   * The rendered EC2NodeClass (render/karpenter.ts); the node role, subnets, security group and tags are filled in here.
   * @default none: only further models autoscale
   */
  readonly ec2NodeClass?: EC2NodeClass;
  /** AWS tags of the nodes the first model's pool launches (infra/tags.ts modelTags). */
  readonly nodeTags: Record<string, string>;
  /**
   * Further models' pools (a stack of several), each named after its model id, with its model's tags.
   * @default none: one model autoscales, or none
   */
  readonly furtherPools?: ReadonlyArray<{
    id: string;
    nodePool: NodePool;
    ec2NodeClass: EC2NodeClass;
    tags: Record<string, string>;
  }>;
  /** The cluster's Kubernetes provider. */
  readonly provider: k8s.Provider;
  /** AWS tags (the stack's) for Karpenter's role, interruption queue and rules. */
  readonly tags: Record<string, string>;
  /** The created EKS cluster's parts Karpenter needs (name, node role, OIDC provider, subnets, system nodes). */
  readonly cluster: KarpenterCluster;
}

/**
 * GPU nodes that follow the pods: Karpenter's controller role (IRSA, AWS's
 * published policies), its interruption queue and rules, the Helm release, and
 * the stack's EC2NodeClass and NodePool. Returns what the Triton pods wait for.
 */
export class GpuNodePool extends pulumi.ComponentResource {
  readonly ready: pulumi.Resource[];

  constructor(name: string, args: GpuNodePoolArgs, opts?: pulumi.ComponentResourceOptions) {
    super("triton-ft:scaling:GpuNodePool", name, {}, opts);
    const kc = args.cluster;
    const karpenter = this.installKarpenter(name, kc, args);
    const pools = [
      ...(args.nodePool && args.ec2NodeClass
        ? [{ suffix: "", nodePool: args.nodePool, ec2NodeClass: args.ec2NodeClass, tags: args.nodeTags }]
        : []),
      ...(args.furtherPools ?? []).map((p) => ({
        suffix: `-${p.id}`,
        nodePool: p.nodePool,
        ec2NodeClass: p.ec2NodeClass,
        tags: p.tags,
      })),
    ];
    const ready: pulumi.Resource[] = [karpenter];
    for (const m of pools) ready.push(...this.pool(name, m, karpenter, args));
    this.ready = ready;
    this.registerOutputs({});
  }

  /** One model's EC2NodeClass and NodePool, on the cluster's role, subnets and security group. */
  private pool(
    name: string,
    m: { suffix: string; nodePool: NodePool; ec2NodeClass: EC2NodeClass; tags: Record<string, string> },
    karpenter: pulumi.Resource,
    args: GpuNodePoolArgs,
  ): pulumi.Resource[] {
    const kc = args.cluster;
    const nodeClass = new k8s.apiextensions.CustomResource(
      `${name}-ec2nodeclass${m.suffix}`,
      {
        ...m.ec2NodeClass,
        spec: {
          ...m.ec2NodeClass.spec,
          role: kc.nodeRole.name,
          subnetSelectorTerms: pulumi.output(kc.subnetIds).apply((ids) => ids.map((id) => ({ id }))),
          securityGroupSelectorTerms: [{ id: kc.securityGroupId }],
          // The model's: the EC2 nodes Karpenter launches for it are its cost.
          tags: m.tags,
        },
      },
      { parent: this, provider: args.provider, dependsOn: [karpenter] },
    );
    const nodePool = new k8s.apiextensions.CustomResource(`${name}-nodepool${m.suffix}`, m.nodePool, {
      parent: this,
      provider: args.provider,
      dependsOn: [karpenter, nodeClass],
    });
    return [nodeClass, nodePool];
  }

  /** Karpenter's controller role (IRSA), its interruption queue and rules, and the Helm release. */
  private installKarpenter(name: string, kc: KarpenterCluster, args: GpuNodePoolArgs): pulumi.Resource {
    const parent = { parent: this };
    const partition = aws.getPartitionOutput({}, parent);
    const region = aws.getRegionOutput({}, parent).region;
    const accountId = aws.getCallerIdentityOutput({}, parent).accountId;

    const queue = new aws.sqs.Queue(
      `${name}-karpenter-interruptions`,
      { messageRetentionSeconds: interruptionQueueRetentionSeconds(), sqsManagedSseEnabled: true, tags: args.tags },
      parent,
    );
    new aws.sqs.QueuePolicy(
      `${name}-karpenter-interruptions`,
      {
        queueUrl: queue.url,
        policy: queue.arn.apply((arn) =>
          JSON.stringify({
            Version: "2012-10-17",
            Statement: [
              {
                Effect: "Allow",
                Principal: { Service: ["events.amazonaws.com", "sqs.amazonaws.com"] },
                Action: "sqs:SendMessage",
                Resource: arn,
              },
              {
                Sid: "DenyHTTP",
                Effect: "Deny",
                Principal: "*",
                Action: "sqs:*",
                Resource: arn,
                Condition: { Bool: { "aws:SecureTransport": "false" } },
              },
            ],
          }),
        ),
      },
      parent,
    );
    for (const rule of interruptionRules()) {
      const r = new aws.cloudwatch.EventRule(
        `${name}-karpenter-${rule.name}`,
        { eventPattern: JSON.stringify(rule.eventPattern), tags: args.tags },
        parent,
      );
      new aws.cloudwatch.EventTarget(`${name}-karpenter-${rule.name}`, { rule: r.name, arn: queue.arn }, parent);
    }

    const role = new aws.iam.Role(
      `${name}-karpenter`,
      {
        assumeRolePolicy: pulumi
          .all([kc.oidcProviderArn, kc.oidcIssuer])
          .apply(([arn, issuer]) =>
            JSON.stringify(serviceAccountTrustPolicy(arn, issuer, KARPENTER_NAMESPACE, KARPENTER_SERVICE_ACCOUNT)),
          ),
        tags: args.tags,
      },
      parent,
    );
    const values = pulumi.all([
      partition.partition,
      partition.dnsSuffix,
      region,
      accountId,
      kc.clusterName,
      queue.arn,
      kc.nodeRole.arn,
    ]);
    const attachments = controllerPolicyNames().map((policyName) => {
      const policy = new aws.iam.Policy(
        `${name}-karpenter-${policyName}`,
        {
          description: `Karpenter controller (${policyName}), published with Karpenter ${CHARTS.karpenter.appVersion}`,
          policy: values.apply(([p, suffix, r, a, cn, q, n]) => {
            const doc = controllerPolicies({
              partition: p,
              region: r,
              accountId: a,
              urlSuffix: suffix,
              clusterName: cn,
              interruptionQueueArn: q,
              nodeRoleArn: n,
            }).find((x) => x.name === policyName);
            return JSON.stringify(doc?.document);
          }),
          tags: args.tags,
        },
        parent,
      );
      return new aws.iam.RolePolicyAttachment(
        `${name}-karpenter-${policyName}`,
        { role: role.name, policyArn: policy.arn },
        parent,
      );
    });

    return new k8s.helm.v3.Release(
      `${name}-karpenter`,
      {
        chart: CHARTS.karpenter.chart,
        version: CHARTS.karpenter.version,
        namespace: KARPENTER_NAMESPACE,
        values: {
          settings: { clusterName: kc.clusterName, interruptionQueue: queue.name },
          serviceAccount: {
            name: KARPENTER_SERVICE_ACCOUNT,
            annotations: { "eks.amazonaws.com/role-arn": role.arn },
          },
        },
      },
      { parent: this, provider: args.provider, dependsOn: [...kc.systemNodes, ...attachments] },
    );
  }
}
