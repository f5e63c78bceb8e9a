/**
 * EC2 baseline: instance metadata only through IMDSv2 with a hop limit of 1
 * (containers on the host cannot reach the instance role's credentials),
 * encrypted root and data volumes, and no inbound rule open to the internet
 * (SSH from nothing broader than a /16).
 */
import type { ResourceRule, ResourceView } from "./types";
import { arr, cidrPrefix, isWholeInternet, obj, str, strings, truthy, type Obj } from "./values";

export const TYPES = {
  instance: "aws:ec2/instance:Instance",
  launchTemplate: "aws:ec2/launchTemplate:LaunchTemplate",
  volume: "aws:ebs/volume:Volume",
  securityGroup: "aws:ec2/securityGroup:SecurityGroup",
  securityGroupRule: "aws:ec2/securityGroupRule:SecurityGroupRule",
  ingressRule: "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule",
  eksNodeGroup: "aws:eks/nodeGroup:NodeGroup",
  eksManagedNodeGroup: "eks:index:ManagedNodeGroup",
} as const;

/** Widest source an SSH rule may admit (IPv4 prefix length; IPv6 uses /48, a site). */
export const SSH_MIN_PREFIX = { 4: 16, 6: 48 } as const;

function metadataProblems(kind: string, name: string, md: Obj): string[] {
  if (md.httpEndpoint === "disabled") return [];
  const out: string[] = [];
  if (md.httpTokens !== "required")
    out.push(
      `${kind} '${name}' allows IMDSv1 (metadataOptions.httpTokens is ${JSON.stringify(md.httpTokens ?? "unset")}). Fix: set metadataOptions.httpTokens to "required".`,
    );
  if (md.httpPutResponseHopLimit !== 1)
    out.push(
      `${kind} '${name}' has instance-metadata hop limit ${JSON.stringify(md.httpPutResponseHopLimit ?? "unset")}, so containers can reach the instance role's credentials. Fix: set metadataOptions.httpPutResponseHopLimit to 1.`,
    );
  return out;
}

export const imdsV2: ResourceRule = {
  kind: "resource",
  name: "ec2-imdsv2-hop-limit-1",
  description: "EC2 instances and launch templates require IMDSv2 tokens with a response hop limit of 1.",
  check(r) {
    if (r.type === TYPES.instance) return metadataProblems("EC2 instance", r.name, obj(r.props.metadataOptions));
    if (r.type === TYPES.launchTemplate)
      return metadataProblems("launch template", r.name, obj(r.props.metadataOptions));
    return [];
  },
};

export const encryptedVolumes: ResourceRule = {
  kind: "resource",
  name: "ec2-encrypted-volumes",
  description: "Root and data EBS volumes are encrypted.",
  check(r) {
    const out: string[] = [];
    const need = (what: string, fix: string) =>
      out.push(`${what} of '${r.name}' is not encrypted (${r.type}). Fix: ${fix}.`);
    if (r.type === TYPES.instance) {
      if (!truthy(obj(r.props.rootBlockDevice).encrypted))
        need("the root volume", "set rootBlockDevice.encrypted: true");
      arr(r.props.ebsBlockDevices).forEach((d, i) => {
        if (!truthy(obj(d).encrypted))
          need(`data volume ${i} (${str(obj(d).deviceName) ?? "?"})`, `set ebsBlockDevices[${i}].encrypted: true`);
      });
    } else if (r.type === TYPES.launchTemplate) {
      arr(r.props.blockDeviceMappings).forEach((d, i) => {
        const ebs = obj(obj(d).ebs);
        if (obj(d).ebs !== undefined && !truthy(ebs.encrypted))
          need(`volume ${str(obj(d).deviceName) ?? i}`, `set blockDeviceMappings[${i}].ebs.encrypted: "true"`);
      });
    } else if (r.type === TYPES.volume) {
      if (!truthy(r.props.encrypted)) need("the EBS volume", "set encrypted: true");
    }
    return out;
  },
};

/**
 * Managed node groups without a launch template run EKS's defaults: volumes
 * encrypted only if the account says so, IMDS reachable from pods. With one,
 * the two rules above check the template itself.
 */
export const nodeGroupLaunchTemplate: ResourceRule = {
  kind: "resource",
  name: "ec2-node-group-launch-template",
  description: "EKS managed node groups use a launch template (so their volumes and metadata options are checked).",
  check(r) {
    if (r.type !== TYPES.eksManagedNodeGroup && r.type !== TYPES.eksNodeGroup) return [];
    if (r.props.launchTemplate !== undefined && r.props.launchTemplate !== null) return [];
    return [
      `EKS node group '${r.name}' has no launch template, so its volumes are encrypted only if the account's EBS default says so and pods can reach IMDS. Fix: give it a launch template with encrypted volumes and metadataOptions {httpTokens: "required", httpPutResponseHopLimit: 1}.`,
    ];
  },
};

interface Ingress {
  protocol: string;
  from: number;
  to: number;
  cidrs: string[];
}

function protocolOf(v: unknown): string {
  const p = String(v ?? "").toLowerCase();
  return p === "all" || p === "-1" ? "-1" : p;
}

function ingressRules(r: ResourceView): Ingress[] {
  const rule = (o: Obj, cidrs: string[]): Ingress => ({
    protocol: protocolOf(o.protocol ?? o.ipProtocol),
    from: Number(o.fromPort ?? 0),
    to: Number(o.toPort ?? 65535),
    cidrs,
  });
  if (r.type === TYPES.securityGroup)
    return arr(r.props.ingress).map((i) =>
      rule(obj(i), [...strings(obj(i).cidrBlocks), ...strings(obj(i).ipv6CidrBlocks)]),
    );
  if (r.type === TYPES.securityGroupRule && r.props.type === "ingress")
    return [rule(r.props, [...strings(r.props.cidrBlocks), ...strings(r.props.ipv6CidrBlocks)])];
  if (r.type === TYPES.ingressRule)
    return [rule(r.props, [...strings(r.props.cidrIpv4), ...strings(r.props.cidrIpv6)])];
  return [];
}

function coversSsh(i: Ingress): boolean {
  if (i.protocol === "-1") return true;
  return i.protocol === "tcp" || i.protocol === "6" ? i.from <= 22 && i.to >= 22 : false;
}

export const securityGroupIngress: ResourceRule = {
  kind: "resource",
  name: "ec2-no-open-ingress",
  description: "No security-group ingress from 0.0.0.0/0 or ::/0; SSH from nothing broader than a /16.",
  check(r) {
    const out: string[] = [];
    for (const i of ingressRules(r)) {
      const ports = i.protocol === "-1" ? "all ports" : `${i.protocol} ${i.from}-${i.to}`;
      for (const cidr of i.cidrs) {
        if (isWholeInternet(cidr)) {
          out.push(
            `security group rule '${r.name}' admits ${ports} from ${cidr}, the whole internet. Fix: list the client CIDRs that need access instead.`,
          );
          continue;
        }
        const p = cidrPrefix(cidr);
        if (coversSsh(i) && p && p.prefix < SSH_MIN_PREFIX[p.family])
          out.push(
            `security group rule '${r.name}' admits SSH from ${cidr}, broader than a /${SSH_MIN_PREFIX[p.family]}. Fix: narrow build.sshAllowedCidrs to the deploying machine's address (e.g. its /32).`,
          );
      }
    }
    return out;
  },
};

export const EC2_RULES = [imdsV2, encryptedVolumes, nodeGroupLaunchTemplate, securityGroupIngress];
