/**
 * The build side of a promoted stack (build.promoteFrom): no registry, no
 * builder, no remote step. The images come from the building stack (checked
 * by ./reference.ts); a network is created only when the stack creates its
 * own EKS cluster, which needs one. In kubeconfig and stackReference modes the
 * stack then has no AWS resource and calls no AWS function at all.
 */
import type * as pulumi from "@pulumi/pulumi";
import type { ClusterNetwork } from "../components/cluster";
import { Network } from "../components/network";
import type { ResolvedStack } from "../config/stack";
import { Promotion, type PlannedModel } from "./reference";

export interface PromotedSide {
  /** Only with cluster.mode create. */
  network?: ClusterNetwork;
  /** Each model's server image, by model id. */
  serverImages: Record<string, pulumi.Output<string>>;
  tritonWithFtImage: pulumi.Output<string>;
  gatewayImage: pulumi.Output<string>;
  /** Stack outputs beside the contract's. */
  outputs: Record<string, pulumi.Input<unknown>>;
}

export function promotedSide(
  stack: ResolvedStack,
  promoteFrom: { stackReference: string },
  planned: readonly PlannedModel[],
  tags: Record<string, string>,
): PromotedSide {
  const promotion = new Promotion("promotion", { stackReference: promoteFrom.stackReference, planned });
  const outputs: Record<string, pulumi.Input<unknown>> = { promotedFrom: promoteFrom.stackReference };
  let network: ClusterNetwork | undefined;
  if (stack.config.cluster.mode === "create") {
    const n = new Network("network", { network: stack.config.network, tags, eksControlPlane: true });
    network = n;
    Object.assign(outputs, {
      vpcId: n.vpcId,
      publicSubnetIds: n.publicSubnetIds,
      privateSubnetIds: n.privateSubnetIds,
    });
  }
  return {
    ...(network ? { network } : {}),
    serverImages: promotion.serverImages,
    tritonWithFtImage: promotion.tritonWithFtImage,
    gatewayImage: promotion.gatewayImage,
    outputs,
  };
}
