/**
 * The Triton workload as Kubernetes resources: the renderer's manifests
 * (render/k8s.ts) applied through the cluster's provider, with the server image
 * Output substituted and Pulumi timeouts sized for image pull plus model load.
 *
 * No resource uses `pulumi.com/skipAwait`: the Deployment's await is what tells
 * `pulumi up` the new model is serving, and the Service's await is what yields
 * the NLB hostname the endpoint outputs are built from.
 */
import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import type { ResolvedStack } from "../validate";
import type { IDeployment } from "kubernetes-models/apps/v1/Deployment";
import { PORTS, renderManifests, type ContainerLaunch, type TritonManifests } from "../render/k8s";
import { minutes } from "../render/k8sPlan";

/** Rendered in place of the image until the digest is known; replaced by the image Output below. */
const IMAGE_SLOT = "server-image:synth";
const DIGEST_REF = /^[^\s@]+@sha256:[0-9a-f]{64}$/;

/**
 * The rendered Deployment with the image Output in place. kubernetes-models
 * types resource quantities as `string | number`, Pulumi as strings; the
 * renderer only emits strings (mebibytes/millicores), so the object is a valid
 * Pulumi input as it stands.
 */
function deploymentArgs(d: IDeployment, image: pulumi.Output<string>): k8s.apps.v1.DeploymentArgs {
  const spec = d.spec;
  const podSpec = spec?.template.spec;
  if (!spec || !podSpec) throw new Error("renderer produced a Deployment without a pod template");
  const patched = {
    metadata: d.metadata,
    spec: {
      ...spec,
      template: {
        ...spec.template,
        spec: { ...podSpec, containers: podSpec.containers.map((c) => ({ ...c, image })) },
      },
    },
  };
  return patched as unknown as k8s.apps.v1.DeploymentArgs;
}

export interface TritonServiceArgs {
  stack: ResolvedStack;
  stackName: string;
  /** Server image by digest, from the build pipeline. */
  image: pulumi.Input<string>;
  launch: ContainerLaunch;
  serviceMonitor: boolean;
  provider: k8s.Provider;
  /** GPU nodes and the device plugin: the pods cannot schedule before them. */
  gpuReady: pulumi.Resource[];
  /** The load balancer controller: without it nothing provisions the NLB. */
  loadBalancerReady: pulumi.Resource[];
}

export class TritonService extends pulumi.ComponentResource {
  readonly manifests: TritonManifests;
  readonly namespace: pulumi.Output<string>;
  readonly hostname: pulumi.Output<string>;
  readonly httpEndpoint: pulumi.Output<string>;
  readonly grpcEndpoint: pulumi.Output<string>;

  constructor(name: string, args: TritonServiceArgs, opts?: pulumi.ComponentResourceOptions) {
    super("triton-ft:tritonService:TritonService", name, {}, opts);
    const m = renderManifests({
      stack: args.stack,
      stackName: args.stackName,
      image: IMAGE_SLOT,
      launch: args.launch,
      serviceMonitor: args.serviceMonitor,
    });
    this.manifests = m;
    const t = m.plan.timeouts;
    const opt = { parent: this, provider: args.provider };

    const ns = new k8s.core.v1.Namespace(`${name}-ns`, m.namespace, opt);

    const image = pulumi.output(args.image).apply((ref) => {
      if (!DIGEST_REF.test(ref))
        throw new Error(`server image ${ref}: must be pinned by digest (<repo>@sha256:<64 hex>)`);
      return ref;
    });
    const deployment = new k8s.apps.v1.Deployment(`${name}-deployment`, deploymentArgs(m.deployment, image), {
      ...opt,
      dependsOn: [ns, ...args.gpuReady],
      // New pods start in parallel; an update replaces them one at a time (maxSurge 1).
      customTimeouts: { create: minutes(t.deploymentCreateSeconds), update: minutes(t.deploymentUpdateSeconds) },
    });

    // Created once the pods serve, so its await (endpoints + NLB hostname) does not
    // run into the model load.
    const service = new k8s.core.v1.Service(`${name}-service`, m.service, {
      ...opt,
      dependsOn: [deployment, ...args.loadBalancerReady],
      customTimeouts: { create: minutes(t.serviceSeconds), update: minutes(t.serviceSeconds) },
    });
    new k8s.core.v1.Service(`${name}-metrics`, m.metricsService, { ...opt, dependsOn: [ns] });
    new k8s.policy.v1.PodDisruptionBudget(`${name}-pdb`, m.podDisruptionBudget, { ...opt, dependsOn: [ns] });
    if (m.serviceMonitor) {
      new k8s.apiextensions.CustomResource(`${name}-servicemonitor`, m.serviceMonitor, { ...opt, dependsOn: [ns] });
    }

    this.namespace = ns.metadata.name;
    this.hostname = service.status.loadBalancer.ingress.apply((ingress) => {
      const host = ingress?.[0]?.hostname ?? ingress?.[0]?.ip;
      if (!host)
        throw new Error("the load balancer Service has no address; check the AWS Load Balancer Controller's logs");
      return host;
    });
    this.httpEndpoint = pulumi.interpolate`http://${this.hostname}:${PORTS.http}`;
    this.grpcEndpoint = pulumi.interpolate`${this.hostname}:${PORTS.grpc}`;
    this.registerOutputs({
      namespace: this.namespace,
      httpEndpoint: this.httpEndpoint,
      grpcEndpoint: this.grpcEndpoint,
    });
  }
}
