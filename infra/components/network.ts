/**
 * The VPC the builder and the cluster live in. `create` builds one with awsx
 * (public subnets for the builder and the internet-facing NLB, private subnets
 * behind NAT for GPU nodes and the internal NLB); `existing` looks the given ids
 * up and refuses ids that do not form a usable network before anything else
 * consumes them.
 */
import * as aws from "@pulumi/aws";
import * as awsx from "@pulumi/awsx";
import * as pulumi from "@pulumi/pulumi";
import type { StackConfig } from "../config";
import {
  NAT_GATEWAY_STRATEGY,
  createdVpcZoneProblems,
  existingNetworkProblems,
  subnetPrefixLengths,
  type SubnetFacts,
} from "../resolve/network";

import { PRIVATE_SUBNET_TAGS, PUBLIC_SUBNET_TAGS } from "../conventions/network";
export interface NetworkArgs {
  /** The stack's network config: create a VPC from network.vpcCidr, or use the existing VPC and subnet ids. */
  readonly network: StackConfig["network"];
  /** AWS tags for the VPC and its subnets (the subnet role tags are added here). */
  readonly tags: Record<string, string>;
  /**
   * The stack creates its EKS cluster in these subnets: their AZs are checked
   * against the ones where EKS places no control-plane subnets, at preview.
   * @default false: no AZ check (the cluster is elsewhere)
   */
  readonly eksControlPlane?: boolean;
}

export class Network extends pulumi.ComponentResource {
  readonly vpcId: pulumi.Output<string>;
  readonly publicSubnetIds: pulumi.Output<string[]>;
  readonly privateSubnetIds: pulumi.Output<string[]>;

  constructor(name: string, args: NetworkArgs, opts?: pulumi.ComponentResourceOptions) {
    super("triton-ft:network:Network", name, {}, opts);
    const n = args.network;
    // The AZ check needs the Region only when an EKS control plane goes into these subnets.
    const region = args.eksControlPlane ? aws.getRegionOutput({}, { parent: this }).region : undefined;
    let zonesChecked: pulumi.Output<string[]> | undefined;
    if (n.mode === "create") {
      const lengths = subnetPrefixLengths(n.vpcCidr);
      // awsx.ec2.Vpc is a multi-language (remote) component: the subnets, route
      // tables, IGW and NAT gateways are created inside the awsx plugin, so the
      // program (and the mock runtime) sees one awsx:ec2:Vpc resource.
      const vpc = new awsx.ec2.Vpc(
        name,
        {
          cidrBlock: n.vpcCidr,
          numberOfAvailabilityZones: n.availabilityZones,
          enableDnsHostnames: true,
          enableDnsSupport: true,
          subnetStrategy: "Auto",
          subnetSpecs: [
            { type: "Private", cidrMask: lengths.private, tags: { ...args.tags, ...PRIVATE_SUBNET_TAGS } },
            { type: "Public", cidrMask: lengths.public, tags: { ...args.tags, ...PUBLIC_SUBNET_TAGS } },
          ],
          // One NAT gateway (resolve/network.ts NAT_GATEWAY_STRATEGY, priced by infra/cost).
          natGateways: { strategy: NAT_GATEWAY_STRATEGY },
          tags: args.tags,
        },
        { parent: this },
      );
      this.vpcId = vpc.vpcId;
      this.publicSubnetIds = vpc.publicSubnetIds;
      this.privateSubnetIds = vpc.privateSubnetIds;
      if (region) {
        // The names awsx will take, looked up as awsx does; a preview has them (an
        // invoke), so a refused AZ fails the preview, before any subnet exists.
        const zones = aws.getAvailabilityZonesOutput({}, { parent: this });
        zonesChecked = pulumi.all([region, zones.names, zones.zoneIds]).apply(([r, names, zoneIds]) => {
          const problems = createdVpcZoneProblems(r, { names, zoneIds }, n.availabilityZones);
          if (problems.length > 0)
            throw new pulumi.ResourceError(`the VPC's AZs are not usable:\n  - ${problems.join("\n  - ")}`, this);
          return names.slice(0, n.availabilityZones);
        });
      }
    } else {
      const vpcId = n.vpcId ?? "";
      const vpc = aws.ec2.getVpcOutput({ id: vpcId }, { parent: this });
      const lookup = (ids: string[]) =>
        pulumi.all(
          ids.map((id) =>
            aws.ec2.getSubnetOutput({ id }, { parent: this }).apply((s): SubnetFacts => ({
              id: s.id,
              vpcId: s.vpcId,
              availabilityZone: s.availabilityZone,
              availabilityZoneId: s.availabilityZoneId,
            })),
          ),
        );
      // Every consumer reads the ids through this check, so a wrong id fails the
      // update before a builder or a cluster is created in the wrong place.
      const checked = pulumi
        .all([vpc.id, lookup(n.publicSubnetIds), lookup(n.privateSubnetIds), region])
        .apply(([id, pub, priv, r]) => {
          const problems = existingNetworkProblems(id, pub, priv, r);
          if (problems.length > 0)
            throw new pulumi.ResourceError(`the existing network is not usable:\n  - ${problems.join("\n  - ")}`, this);
          return { vpcId: id, publicSubnetIds: pub.map((s) => s.id), privateSubnetIds: priv.map((s) => s.id) };
        });
      this.vpcId = checked.vpcId;
      this.publicSubnetIds = checked.publicSubnetIds;
      this.privateSubnetIds = checked.privateSubnetIds;
    }
    this.registerOutputs({
      vpcId: this.vpcId,
      publicSubnetIds: this.publicSubnetIds,
      privateSubnetIds: this.privateSubnetIds,
      // Registered so the AZ check runs (and fails the preview) even while the subnets are unknown.
      ...(zonesChecked ? { availabilityZones: zonesChecked } : {}),
    });
  }
}
