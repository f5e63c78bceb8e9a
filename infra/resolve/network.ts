/**
 * Pure network planning: subnet sizes derived from the VPC CIDR, the checks on
 * an existing VPC's looked-up subnets and on the AZs a created VPC will span
 * (the subnet tags load balancers look for: conventions/network.ts).
 */
import { EKS_UNSUPPORTED_AZS, eksUnsupportedAzIds } from "../config/awsFacts";

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
  /** The AZ's ID (`use1-az3`): the same AZ in every account, unlike its name. */
  availabilityZoneId?: string;
}

const EKS_AZS_CITE = `(${EKS_UNSUPPORTED_AZS.source}, read ${EKS_UNSUPPORTED_AZS.read})`;

/**
 * A created VPC spans the first `count` AZ names the account lists (awsx
 * takes `getAvailabilityZones().names.slice(0, count)`); the names map to AZ
 * IDs differently in every account, so only the lookup at deploy time (a
 * preview has it) knows whether one is an AZ where EKS places no
 * control-plane subnets.
 */
export function createdVpcZoneProblems(
  region: string,
  zones: { names: readonly string[]; zoneIds: readonly string[] },
  count: number,
): string[] {
  const unsupported = eksUnsupportedAzIds(region);
  const chosen = zones.names.slice(0, count).map((name, i) => ({ name, id: zones.zoneIds[i] ?? "" }));
  const bad = chosen.filter((z) => unsupported.includes(z.id));
  if (bad.length === 0) return [];
  const usable = zones.names.length - zones.zoneIds.filter((id) => unsupported.includes(id)).length;
  return [
    `network.availabilityZones = ${count}: the VPC would span ${bad.map((z) => `${z.name} (${z.id})`).join(", ")}, where EKS places no control-plane subnets ${EKS_AZS_CITE}; fix: this account lists ${zones.names.length} AZs in ${region}, ${usable} usable by EKS, and awsx takes the first ${count}: use fewer (the AZs before ${bad[0]?.name}), or network.mode existing with subnets outside ${unsupported.join(", ")}`,
  ];
}

/**
 * Problems with an existing VPC's subnets, phrased like config problems. Pure so
 * that it can be unit-tested without the lookups.
 */
export function existingNetworkProblems(
  vpcId: string,
  publicSubnets: SubnetFacts[],
  privateSubnets: SubnetFacts[],
  /** The Region, when the stack creates an EKS cluster in these subnets: their AZs must be ones EKS uses. */
  eksRegion?: string,
): string[] {
  const problems: string[] = [];
  const unsupported = eksRegion ? eksUnsupportedAzIds(eksRegion) : [];
  for (const s of privateSubnets)
    if (s.availabilityZoneId && unsupported.includes(s.availabilityZoneId))
      problems.push(
        `network.privateSubnetIds: subnet ${s.id} is in ${s.availabilityZone} (${s.availabilityZoneId}), where EKS places no control-plane subnets ${EKS_AZS_CITE}; fix: list private subnets in other AZs`,
      );
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
