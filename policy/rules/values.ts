/**
 * Narrowing helpers for untyped resource properties. Resource inputs reach a
 * policy as plain JSON-like values; these read them without `any` and treat a
 * missing or mistyped value as absent.
 */
export type Obj = Record<string, unknown>;

export function obj(v: unknown): Obj {
  return v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Obj) : {};
}

export function arr(v: unknown): unknown[] {
  return Array.isArray(v) ? v : [];
}

export function strings(v: unknown): string[] {
  if (typeof v === "string") return [v];
  return arr(v).filter((x): x is string => typeof x === "string");
}

export function str(v: unknown): string | undefined {
  return typeof v === "string" ? v : undefined;
}

/** Launch templates carry booleans as the strings "true"/"false". */
export function truthy(v: unknown): boolean {
  return v === true || v === "true";
}

/** IPv4 or IPv6 CIDR prefix length; undefined for anything that is not a CIDR. */
export function cidrPrefix(cidr: string): { family: 4 | 6; prefix: number } | undefined {
  const m = /^([0-9a-fA-F:.]+)\/(\d{1,3})$/.exec(cidr.trim());
  if (!m) return undefined;
  const family = m[1].includes(":") ? 6 : 4;
  const prefix = Number(m[2]);
  if (prefix > (family === 4 ? 32 : 128)) return undefined;
  return { family, prefix };
}

/** 0.0.0.0/0, ::/0 and any other prefix-0 range: the whole internet. */
export function isWholeInternet(cidr: string): boolean {
  return cidrPrefix(cidr)?.prefix === 0;
}

/** A Pulumi type token's last segment: `aws:ec2/instance:Instance` -> `Instance`. */
export function kindOf(type: string): string {
  return type.slice(type.lastIndexOf(":") + 1);
}
