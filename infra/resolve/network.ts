/**
 * Pure network planning: subnet sizes derived from the VPC CIDR and the checks
 * on an existing VPC's looked-up subnets (the subnet tags load balancers look
 * for: conventions/network.ts).
 */

/**
 * One NAT gateway for a created VPC (awsx's "Single" strategy): it carries only
 * outbound traffic (image pulls, OS updates); inbound serving goes through the
 * NLB, which an AZ outage of the NAT does not cut. One per AZ would multiply
 * the fixed cost by the AZ count.
 */
export const NAT_GATEWAY_STRATEGY = "Single" as const;

/** NAT gateways the stack pays for: one when it creates the VPC, none in an existing one. */
export function natGatewayCount(network: { mode: "create" | "existing" }): number {
  return network.mode === "create" ? 1 : 0;
}

/**
 * Subnet prefix lengths derived from the VPC's: private subnets get an eighth of
 * the VPC each (the VPC CNI gives every pod a VPC address, so nodes' subnets must
 * be large), public subnets a 1/256th (they hold only the builder, NAT gateways
 * and load balancer ENIs). Eight private slots cover the six-AZ maximum.
 */
export const VPC_PREFIX_RANGE = { min: 16, max: 20 } as const;

export function vpcPrefix(vpcCidr: string): number {
  return Number(vpcCidr.split("/")[1]);
}

export function subnetPrefixLengths(vpcCidr: string): { private: number; public: number } {
  const prefix = vpcPrefix(vpcCidr);
  // Validation refuses other prefixes at preview; this guards direct callers.
  if (!Number.isInteger(prefix) || prefix < VPC_PREFIX_RANGE.min || prefix > VPC_PREFIX_RANGE.max) {
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
export function existingNetworkProblems(
  vpcId: string,
  publicSubnets: SubnetFacts[],
  privateSubnets: SubnetFacts[],
): string[] {
  const problems: string[] = [];
  for (const [kind, list] of [
    ["publicSubnetIds", publicSubnets],
    ["privateSubnetIds", privateSubnets],
  ] as const) {
    for (const s of list) {
      if (s.vpcId !== vpcId)
        problems.push(`network.${kind}: subnet ${s.id} is in ${s.vpcId}, not in network.vpcId ${vpcId}`);
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
