/**
 * IPv4 CIDR parsing and the CIDR rules of the stack, on ipaddr.js (a
 * well-kept parser) rather than a regex: a regex accepted `999.1.1.1/32`,
 * `10.0.0.0/33` and `10.300.0.0/16`. Pure.
 */
import ipaddr from "ipaddr.js";

export interface Cidr {
  /** Canonical text: network address and prefix, e.g. 10.0.0.0/16. */
  text: string;
  network: string;
  prefix: number;
  /** How many addresses the range covers. */
  size: number;
}

export type CidrParse = { ok: true; cidr: Cidr } | { ok: false; reason: string; fix: string };

/** Most addresses SSH ingress may be opened to: a /16. */
export const SSH_MAX_PREFIX = 16;

/** RFC 5737 documentation ranges: valid syntax, but never a real client. */
export const DOCUMENTATION_RANGES = ["192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24"] as const;

const SHAPE = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})\/(\d{1,2})$/;

/**
 * Strict dotted-quad CIDR: four decimal numbers 0-255, a prefix 0-32, and no
 * host bits (10.0.0.1/16 is refused: the author meant 10.0.0.0/16 or 10.0.0.1/32).
 */
export function parseCidr(text: string): CidrParse {
  const shape = SHAPE.exec(text);
  const example = "give an IPv4 CIDR such as 203.0.113.7/32 (one address) or 10.0.0.0/16";
  if (!shape) return { ok: false, reason: "is not an IPv4 CIDR (a.b.c.d/prefix)", fix: example };
  const octets = shape.slice(1, 5).map(Number);
  const bad = octets.find((o) => o > 255);
  if (bad !== undefined)
    return { ok: false, reason: `has the number ${bad}, but each part of an IPv4 address is 0 to 255`, fix: example };
  const prefix = Number(shape[5]);
  if (prefix > 32) return { ok: false, reason: `has prefix /${prefix}, but an IPv4 prefix is /0 to /32`, fix: example };
  if (!ipaddr.IPv4.isValidFourPartDecimal(text.split("/")[0] ?? "")) {
    return { ok: false, reason: "is not a dotted-decimal IPv4 address (no leading zeros)", fix: example };
  }
  const [address] = ipaddr.IPv4.parseCIDR(text);
  const network = ipaddr.IPv4.networkAddressFromCIDR(text).toString();
  if (network !== address.toString()) {
    return {
      ok: false,
      reason: `has host bits set below its /${prefix} prefix`,
      fix: `use ${network}/${prefix} for the whole range, or ${address.toString()}/32 for that one address`,
    };
  }
  return { ok: true, cidr: { text: `${network}/${prefix}`, network, prefix, size: 2 ** (32 - prefix) } };
}

/** True when the range lies inside one of the RFC 5737 documentation ranges. */
export function isDocumentationRange(cidr: Cidr): boolean {
  const addr = ipaddr.IPv4.parse(cidr.network);
  return DOCUMENTATION_RANGES.some((r) => {
    const [net, bits] = ipaddr.IPv4.parseCIDR(r);
    return cidr.prefix >= bits && addr.match(net, bits);
  });
}

export interface CidrFinding {
  level: "error" | "warning";
  /** Index in the list, for the key name (`build.sshAllowedCidrs[1]`). */
  index: number;
  value: string;
  message: string;
  fix: string;
}

/**
 * SSH ingress rules: every entry must parse, none may be broader than a /16
 * (so `0.0.0.0/1` + `128.0.0.0/1`, which together are the whole internet, are
 * refused like `0.0.0.0/0`), and documentation ranges get a warning to replace
 * them before the first `pulumi up`.
 */
export function sshCidrFindings(cidrs: readonly string[]): CidrFinding[] {
  const out: CidrFinding[] = [];
  cidrs.forEach((value, index) => {
    const p = parseCidr(value);
    if (!p.ok) {
      out.push({ level: "error", index, value, message: p.reason, fix: p.fix });
      return;
    }
    if (p.cidr.prefix < SSH_MAX_PREFIX) {
      out.push({
        level: "error",
        index,
        value,
        message:
          p.cidr.prefix === 0
            ? "opens SSH on a GPU host to the whole internet"
            : `opens SSH on a GPU host to ${p.cidr.size.toLocaleString("en-US")} addresses; the widest allowed is a /${SSH_MAX_PREFIX} (65,536)`,
        fix: "list the CIDR of the machine that runs pulumi up (its public IP/32), or of a runner inside the VPC",
      });
    } else if (isDocumentationRange(p.cidr)) {
      out.push({
        level: "warning",
        index,
        value,
        message:
          "is a documentation range (RFC 5737) that no real machine uses, so pulumi up could not reach the builder",
        fix: "replace it with the public IP/32 of the machine that runs pulumi up (curl -s https://checkip.amazonaws.com) before the first pulumi up",
      });
    }
  });
  return out;
}

/** Parse errors of a CIDR list (for lists without further rules, e.g. serving.allowedCidrs). */
export function cidrListFindings(cidrs: readonly string[]): CidrFinding[] {
  const out: CidrFinding[] = [];
  cidrs.forEach((value, index) => {
    const p = parseCidr(value);
    if (!p.ok) out.push({ level: "error", index, value, message: p.reason, fix: p.fix });
  });
  return out;
}
