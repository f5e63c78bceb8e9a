/**
 * Who may reach the EKS API endpoint. The machine that runs `pulumi up` must
 * (the Kubernetes provider applies the workload through it), and nobody else
 * needs to from outside the VPC. By default:
 * - the endpoint is private when the deploying machine reaches AWS over
 *   private addresses: every CIDR in build.sshAllowedCidrs (where pulumi up
 *   runs) is RFC 1918 space, i.e. a runner in the VPC or peered/VPN'd to it;
 * - otherwise it is public, but only from those same CIDRs.
 * `cluster.endpointAccess` and `cluster.endpointPublicAccessCidrs` override
 * both. The private endpoint is always on, so nodes and pods talk to the
 * control plane inside the VPC.
 */
export type EndpointAccessMode = "public" | "private";

export interface EndpointAccessInput {
  /** cluster.endpointAccess, when set. */
  access?: EndpointAccessMode;
  /** cluster.endpointPublicAccessCidrs, when set. */
  publicAccessCidrs?: string[];
  /** build.sshAllowedCidrs: where pulumi up runs. */
  deployerCidrs: string[];
}

export interface EndpointAccess {
  endpointPublicAccess: boolean;
  endpointPrivateAccess: true;
  /** Set only with public access. */
  publicAccessCidrs?: string[];
  /** One line for synth's summary and docs/build.md: why this mode. */
  reason: string;
}

/** RFC 1918 private IPv4 ranges. */
const PRIVATE_V4: ReadonlyArray<[number, number]> = [
  [0x0a000000, 8],
  [0xac100000, 12],
  [0xc0a80000, 16],
];

function ipv4(cidr: string): { base: number; prefix: number } | undefined {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})\/(\d{1,2})$/.exec(cidr.trim());
  if (!m) return undefined;
  const octets = m.slice(1, 5).map(Number);
  const prefix = Number(m[5]);
  if (octets.some((o) => o > 255) || prefix > 32) return undefined;
  return { base: octets.reduce((a, o) => a * 256 + o, 0), prefix };
}

/** True when the whole CIDR lies inside RFC 1918 space. */
export function isPrivateCidr(cidr: string): boolean {
  const c = ipv4(cidr);
  if (!c) return false;
  return PRIVATE_V4.some(([base, prefix]) => {
    if (c.prefix < prefix) return false;
    const size = 2 ** (32 - prefix);
    return c.base >= base && c.base < base + size;
  });
}

export function endpointAccess(i: EndpointAccessInput): EndpointAccess {
  const cidrs = i.publicAccessCidrs ?? i.deployerCidrs;
  const fromInside = i.deployerCidrs.length > 0 && i.deployerCidrs.every(isPrivateCidr);
  const mode: EndpointAccessMode = i.access ?? (fromInside ? "private" : "public");
  if (mode === "private") {
    return {
      endpointPublicAccess: false,
      endpointPrivateAccess: true,
      reason:
        i.access === "private"
          ? "private (cluster.endpointAccess)"
          : "private: pulumi up runs from private addresses (build.sshAllowedCidrs are all RFC 1918)",
    };
  }
  return {
    endpointPublicAccess: true,
    endpointPrivateAccess: true,
    publicAccessCidrs: [...cidrs],
    reason: `public from ${cidrs.join(", ")} only (${i.publicAccessCidrs ? "cluster.endpointPublicAccessCidrs" : "build.sshAllowedCidrs, where pulumi up runs"})`,
  };
}

export interface EndpointAccessProblem {
  key: string;
  value: unknown;
  message: string;
  fix: string;
}

/** Config problems, in the validator's key / value / message / fix shape. */
export function endpointAccessProblems(i: EndpointAccessInput): EndpointAccessProblem[] {
  const a = endpointAccess(i);
  if (!a.endpointPublicAccess) return [];
  const cidrs = a.publicAccessCidrs ?? [];
  const key = i.publicAccessCidrs ? "cluster.endpointPublicAccessCidrs" : "build.sshAllowedCidrs";
  const out: EndpointAccessProblem[] = [];
  if (cidrs.length === 0)
    out.push({
      key,
      value: cidrs,
      message: "is empty, so the public EKS API endpoint would admit nobody",
      fix: "list the deploying machine's CIDR, or set cluster.endpointAccess: private",
    });
  for (const c of cidrs)
    if (/\/0$/.test(c.trim()))
      out.push({
        key,
        value: c,
        message: "opens the EKS API endpoint to the whole internet",
        fix: "list the deployers' CIDRs (e.g. the runner's /32), or set cluster.endpointAccess: private",
      });
  return out;
}
