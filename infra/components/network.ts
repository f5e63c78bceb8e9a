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

export interface NetworkArgs {
  network: StackConfig["network"];
  tags: Record<string, string>;
}

/** The subnet tags the AWS load balancer controller and EKS use to place load balancers. */
export const PUBLIC_SUBNET_TAGS = { "kubernetes.io/role/elb": "1" } as const;
export const PRIVATE_SUBNET_TAGS = { "kubernetes.io/role/internal-elb": "1" } as const;

/**
 * Subnet prefix lengths derived from the VPC's: private subnets get an eighth of
 * the VPC each (the VPC CNI gives every pod a VPC address, so nodes' subnets must
 * be large), public subnets a 1/256th (they hold only the builder, NAT gateways
 * and load balancer ENIs). Eight private slots cover the six-AZ maximum.
 */
export function subnetPrefixLengths(vpcCidr: string): { private: number; public: number } {
  const prefix = Number(vpcCidr.split("/")[1]);
  if (!Number.isInteger(prefix) || prefix < 16 || prefix > 20) {
    throw new Error(
      `network.vpcCidr ${vpcCidr}: use a prefix between /16 and /20, so that private subnets (/${prefix + 3}) and public subnets (/${prefix + 8}) fit every AZ`,
    );
  }
  return { private: prefix + 3, public: prefix + 8 };
}

/** What the existing-mode check needs to know about one subnet. */
export interface SubnetFacts {
  id: string;
  vpcId: string;
  availabilityZone: string;
}

/**
 * Problems with an existing VPC's subnets, phrased like config problems. Pure so
 * that it can be unit-tested without the lookups.
 */
export function existingNetworkProblems(vpcId: string, publicSubnets: SubnetFacts[], privateSubnets: SubnetFacts[]): string[] {
  const problems: string[] = [];
  for (const [kind, list] of [
    ["publicSubnetIds", publicSubnets],
    ["privateSubnetIds", privateSubnets],
  ] as const) {
    for (const s of list) {
      if (s.vpcId !== vpcId) problems.push(`network.${kind}: subnet ${s.id} is in ${s.vpcId}, not in network.vpcId ${vpcId}`);
    }
  }
  const privateAzs = new Set(privateSubnets.map((s) => s.availabilityZone));
  if (privateAzs.size < 2) {
    problems.push(
      `network.privateSubnetIds: all private subnets are in ${[...privateAzs].join(", ") || "no AZ"}; EKS needs subnets in at least two AZs`,
    );
  }
  const shared = publicSubnets.filter((p) => privateSubnets.some((q) => q.id === p.id));
  for (const s of shared) problems.push(`network: subnet ${s.id} is listed as both public and private`);
  return problems;
}

export class Network extends pulumi.ComponentResource {
  readonly vpcId: pulumi.Output<string>;
  readonly publicSubnetIds: pulumi.Output<string[]>;
  readonly privateSubnetIds: pulumi.Output<string[]>;

  constructor(name: string, args: NetworkArgs, opts?: pulumi.ComponentResourceOptions) {
    super("triton-ft:network:Network", name, {}, opts);
    const n = args.network;
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
          // One NAT gateway: it carries only outbound traffic (image pulls, OS
          // updates); inbound serving goes through the NLB, which an AZ outage of
          // the NAT does not cut. One per AZ would triple the fixed cost.
          natGateways: { strategy: "Single" },
          tags: args.tags,
        },
        { parent: this },
      );
      this.vpcId = vpc.vpcId;
      this.publicSubnetIds = vpc.publicSubnetIds;
      this.privateSubnetIds = vpc.privateSubnetIds;
    } else {
      const vpcId = n.vpcId ?? "";
      const vpc = aws.ec2.getVpcOutput({ id: vpcId }, { parent: this });
      const lookup = (ids: string[]) =>
        pulumi.all(
          ids.map((id) =>
            aws.ec2.getSubnetOutput({ id }, { parent: this }).apply((s): SubnetFacts => ({ id: s.id, vpcId: s.vpcId, availabilityZone: s.availabilityZone })),
          ),
        );
      // Every consumer reads the ids through this check, so a wrong id fails the
      // update before a builder or a cluster is created in the wrong place.
      const checked = pulumi.all([vpc.id, lookup(n.publicSubnetIds), lookup(n.privateSubnetIds)]).apply(([id, pub, priv]) => {
        const problems = existingNetworkProblems(id, pub, priv);
        if (problems.length > 0) throw new Error(`triton-ft: the existing network is not usable:\n  - ${problems.join("\n  - ")}`);
        return { vpcId: id, publicSubnetIds: pub.map((s) => s.id), privateSubnetIds: priv.map((s) => s.id) };
      });
      this.vpcId = checked.vpcId;
      this.publicSubnetIds = checked.publicSubnetIds;
      this.privateSubnetIds = checked.privateSubnetIds;
    }
    this.registerOutputs({ vpcId: this.vpcId, publicSubnetIds: this.publicSubnetIds, privateSubnetIds: this.privateSubnetIds });
  }
}
