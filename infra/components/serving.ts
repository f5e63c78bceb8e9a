/**
 * The serving side of the stack: the cluster (created or existing) and the
 * Triton workload behind an NLB, wired together. Consumes the build side's
 * network and digest-pinned server image; yields the serving part of the
 * stack-output contract (infra/outputs.ts).
 */
import * as pulumi from "@pulumi/pulumi";
import { launchPlan } from "../plan/launch";
import type { StackSecrets } from "../stackConfig";
import type { ResolvedStack } from "../validate";
import { Cluster, type ClusterNetwork } from "./cluster";
import { TritonService } from "./tritonService";

export interface ServingInputs {
  /** Used in cluster.mode create only. */
  network: ClusterNetwork;
  serverImage: pulumi.Input<string>;
}

export interface ServingSide {
  cluster: Cluster;
  triton: TritonService;
  outputs: {
    httpEndpoint: pulumi.Output<string>;
    grpcEndpoint: pulumi.Output<string>;
    clusterName: pulumi.Output<string>;
    namespace: pulumi.Output<string>;
    kubeconfig: pulumi.Output<string>;
  };
}

export function createServing(
  stack: ResolvedStack,
  secrets: StackSecrets,
  tags: Record<string, string>,
  inputs: ServingInputs,
): ServingSide {
  const cluster = new Cluster("cluster", { stack, secrets, network: inputs.network, tags });
  const triton = new TritonService("triton", {
    stack,
    stackName: pulumi.getStack(),
    image: inputs.serverImage,
    launch: launchPlan(stack.config.serving.tensorParallel),
    serviceMonitor: stack.config.serving.serviceMonitor,
    provider: cluster.provider,
    gpuReady: cluster.gpuReady,
    loadBalancerReady: cluster.loadBalancerReady,
  });
  return {
    cluster,
    triton,
    outputs: {
      httpEndpoint: triton.httpEndpoint,
      grpcEndpoint: triton.grpcEndpoint,
      clusterName: cluster.clusterName,
      namespace: triton.namespace,
      kubeconfig: cluster.kubeconfig,
    },
  };
}
