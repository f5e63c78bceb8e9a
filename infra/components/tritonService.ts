/**
 * The Triton workload as Kubernetes resources: the renderer's manifests
 * (render/tritonManifests.ts) applied through the cluster's provider, the Deployment
 * rendered with the real server image, and Pulumi timeouts from the plan's
 * workload numbers (image pull plus model load).
 *
 * No resource uses `pulumi.com/skipAwait`: the Deployment's await is what tells
 * `pulumi up` the new model is serving. Its Service is ClusterIP: the load
 * balancer fronts the gateway (components/gatewayService.ts).
 */
import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { isDigestRef, notPinnedMessage } from "../imageRef";
import {
  deploymentMetadata,
  deploymentSpec,
  renderMetricsService,
  renderNamespace,
  renderPodDisruptionBudget,
  renderService,
  renderServiceMonitor,
} from "../render/tritonManifests";
import { minutes } from "../render/quantities";
import { prePullMetadata, prePullSpec } from "../render/prePull";

import { PORTS } from "../conventions/workload";
import type { WorkloadInput } from "../plan/types";
export interface TritonServiceArgs {
  /** Everything the manifests are rendered from but the image (plan/renderInputs.ts workloadInput). */
  readonly workload: WorkloadInput;
  /** Server image by digest, from the build pipeline: an input of the Deployment's rendering. */
  readonly image: pulumi.Input<string>;
  /** The cluster's Kubernetes provider. */
  readonly provider: k8s.Provider;
  /** GPU nodes and the device plugin: the pods cannot schedule before them. */
  readonly gpuReady: pulumi.Resource[];
  /**
   * The stack-installed Prometheus Operator, if any: the ServiceMonitor waits for its CRD.
   * @default none: no stack-installed Prometheus Operator to wait for
   */
  readonly monitoringReady?: pulumi.Resource[];
  /**
   * The serving namespace when another model's TritonService created it (a
   * stack of several models shares one namespace; the first model's service
   * creates it, keeping a one-model stack's resource names).
   * @default none: this service creates the namespace (the first model's)
   */
  readonly namespace?: k8s.core.v1.Namespace;
  /**
   * triton_with_ft by digest, for the pre-pull DaemonSet (render/prePull.ts):
   * created as soon as the compile has pushed it, so the model's nodes pull it
   * while gemm and bake run. The program passes it only where resolve/workload.ts prePullOnNodes holds.
   * @default none: no pre-pull (a promoted stack, a canary, a vLLM model, nodes from Karpenter)
   */
  readonly prePullImage?: pulumi.Input<string>;
}

/**
 * The rendered Deployment spec as Pulumi input. kubernetes-models types
 * resource quantities as `string | number`, Pulumi as strings; the renderer
 * only emits strings (mebibytes/millicores), which is what this narrows.
 */
function deploymentSpecInput(spec: ReturnType<typeof deploymentSpec>): k8s.types.input.apps.v1.DeploymentSpec {
  return spec as k8s.types.input.apps.v1.DeploymentSpec;
}

export class TritonService extends pulumi.ComponentResource {
  readonly namespace: pulumi.Output<string>;
  /** In-cluster gRPC address of Triton (what the gateway calls). */
  readonly grpcTarget: pulumi.Output<string>;
  readonly service: k8s.core.v1.Service;
  readonly deployment: k8s.apps.v1.Deployment;
  /** The namespace resource: the autoscaler and the exporters are created in it. */
  readonly namespaceResource: k8s.core.v1.Namespace;
  /** Same as `deployment`: the resource the ScaledObject targets. */
  readonly deploymentResource: k8s.apps.v1.Deployment;

  constructor(name: string, args: TritonServiceArgs, opts?: pulumi.ComponentResourceOptions) {
    super("triton-ft:tritonService:TritonService", name, {}, opts);
    const w = args.workload;
    const t = w.workload.timeouts;
    const opt = { parent: this, provider: args.provider };

    const ns = args.namespace ?? new k8s.core.v1.Namespace(`${name}-ns`, renderNamespace(w), opt);

    // The build pipeline already refuses a tag-only reference; this names the resource that would carry it.
    const spec = pulumi.output(args.image).apply((ref) => {
      if (!isDigestRef(ref)) throw new pulumi.ResourceError(notPinnedMessage("server image", ref), this);
      return deploymentSpecInput(deploymentSpec(w, ref));
    });
    const deployment = new k8s.apps.v1.Deployment(
      `${name}-deployment`,
      { metadata: deploymentMetadata(w), spec },
      {
        ...opt,
        dependsOn: [ns, ...args.gpuReady],
        // New pods start in parallel; an update replaces them one at a time (maxSurge 1).
        customTimeouts: { create: minutes(t.deploymentCreateSeconds), update: minutes(t.deploymentUpdateSeconds) },
      },
    );

    // In-cluster only (ClusterIP): the gateway is what the load balancer exposes.
    this.service = new k8s.core.v1.Service(`${name}-service`, renderService(w), { ...opt, dependsOn: [ns] });
    this.deployment = deployment;
    this.deploymentResource = deployment;
    this.namespaceResource = ns;
    new k8s.core.v1.Service(`${name}-metrics`, renderMetricsService(w), { ...opt, dependsOn: [ns] });
    new k8s.policy.v1.PodDisruptionBudget(`${name}-pdb`, renderPodDisruptionBudget(w), { ...opt, dependsOn: [ns] });
    const monitor = renderServiceMonitor(w);
    if (monitor) {
      new k8s.apiextensions.CustomResource(`${name}-servicemonitor`, monitor, {
        ...opt,
        // The stack's own Prometheus Operator (when it installs one) brings the CRD.
        dependsOn: [ns, ...(args.monitoringReady ?? [])],
      });
    }

    if (args.prePullImage !== undefined) {
      const spec = pulumi.output(args.prePullImage).apply((ref) => {
        if (!isDigestRef(ref)) throw new pulumi.ResourceError(notPinnedMessage("triton_with_ft image", ref), this);
        return prePullSpec(w, ref) as k8s.types.input.apps.v1.DaemonSetSpec;
      });
      // No wait for the GPU nodes: a DaemonSet's pods land on them when they join. The provider awaits
      // the DaemonSet's pods, each a whole pull of triton_with_ft (about 10 min at the assumed rate, past
      // the provider's 10-minute default): the server pod's own rollout budget covers a pull of more.
      new k8s.apps.v1.DaemonSet(
        `${name}-prepull`,
        { metadata: prePullMetadata(w), spec },
        {
          ...opt,
          dependsOn: [ns],
          customTimeouts: { create: minutes(t.deploymentCreateSeconds), update: minutes(t.deploymentCreateSeconds) },
        },
      );
    }

    this.namespace = ns.metadata.name;
    this.grpcTarget = pulumi.interpolate`${this.service.metadata.name}.${this.namespace}.svc.cluster.local:${PORTS.grpc}`;
    this.registerOutputs({ namespace: this.namespace, grpcTarget: this.grpcTarget });
  }
}
