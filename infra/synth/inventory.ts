/**
 * The offline infrastructure inventory: every resource the program registers,
 * with its inputs as plain JSON, secrets masked and values only the cloud can
 * compute marked. `npm run synth` writes it as `<out>/resources.json` plus a
 * readable tree (`resources.txt`), so a reviewer without cloud credentials sees
 * an AWS or Kubernetes change as a diff of a file.
 *
 * A masked value still shows when it changes: a secret is recorded as
 * `[secret:<fingerprint>]`, and a value the cloud computes as
 * `[unknown:<fingerprint>]` when a reference run gave it a value
 * (infra/mock/inventory.ts: the same program against a cloud answering with
 * stand-ins); a structured value keeps its keys, each leaf masked. A fingerprint is the first 12
 * hex digits of the SHA-256 of the value as synth saw it, and synth never
 * sees a real secret: a `secure:` value reaches the program as a stand-in, so
 * what is hashed is derived from the stack file and the repository alone.
 *
 * Pure: recognising the SDK's runtime values (secrets, unknowns, resource
 * references, assets, outputs) is delegated to a `ValueKinds` the caller provides.
 */
import { canonicalJson, sha256 } from "../plan/hash";

export const SECRET_MARK = "[secret]";
export const UNKNOWN_MARK = "[unknown]";
export const INVENTORY_FILE = "resources.json";
export const INVENTORY_SUMMARY_FILE = "resources.txt";
/** 2: masks carry fingerprints (`[secret:…]`, `[unknown:…]`). */
export const INVENTORY_FORMAT = 2;
/** The formats this code reads: a base branch's format-1 inventory diffs against a format-2 one without fingerprints. */
export const READABLE_FORMATS: readonly number[] = [1, 2];

export type MaskKind = "secret" | "unknown";

/** `[secret]`, or `[secret:3f9a0c1b2d4e]` with a fingerprint. */
export function maskValue(kind: MaskKind, fingerprint?: string): string {
  return fingerprint ? `[${kind}:${fingerprint}]` : `[${kind}]`;
}

/** The kind and fingerprint of a mask; undefined for any other value. */
export function parseMask(value: unknown): { kind: MaskKind; fingerprint?: string } | undefined {
  if (typeof value !== "string") return undefined;
  const m = /^\[(secret|unknown)(?::([0-9a-f]{12}))?\]$/.exec(value);
  if (!m) return undefined;
  return m[2] ? { kind: m[1] as MaskKind, fingerprint: m[2] } : { kind: m[1] as MaskKind };
}

export function fingerprint(value: InventoryValue): string {
  return sha256(canonicalJson(value)).slice(0, 12);
}

export type InventoryValue = null | boolean | number | string | InventoryValue[] | { [key: string]: InventoryValue };

export interface InventoryResource {
  type: string;
  name: string;
  /** `<type>::<name>` of the parent component; null at the top of the stack. */
  parent: string | null;
  /**
   * custom: one cloud resource; component: a grouping of this program's;
   * remote-component: a component its provider expands at deploy time (awsx,
   * eks), whose inner resources are not listed; provider: an explicit provider.
   */
  kind: "custom" | "component" | "remote-component" | "provider";
  /** `<type>::<name>` of an explicit provider, when the resource has one. */
  provider?: string;
  inputs: Record<string, InventoryValue>;
}

export interface Inventory {
  format: number;
  project: string;
  stack: string;
  /** How the file was produced, for whoever opens it without context. */
  source: string;
  legend: Record<string, string>;
  /** Provider functions (data sources) whose results were not known offline. */
  lookups: string[];
  resources: InventoryResource[];
  /** The stack outputs as preview shows them (unknown until deployed, secrets masked). */
  outputs: Record<string, InventoryValue>;
}

/** How to recognise the SDK's special runtime values; supplied by the code that ran the program. */
export interface ValueKinds {
  isUnknown(value: unknown): boolean;
  /** When `value` is an Output (a stack output, or one nested in it): whether it is known and secret, and its value. */
  output?(value: unknown): Promise<{ known: boolean; secret: boolean; value: unknown }> | undefined;
  /** The wrapped value when `value` is a secret, otherwise undefined. */
  secret(value: unknown): { value: unknown } | undefined;
  /** `<type>::<name>` when `value` is a resource reference. */
  resourceRef(value: unknown): string | undefined;
  /** A plain description when `value` is an asset or archive (content hash, repo-relative path). */
  asset(value: unknown): Promise<InventoryValue> | undefined;
}

export interface MaskCounts {
  secrets: number;
  unknowns: number;
}

/**
 * The value of a reference run at the same place as the value being
 * normalised (`{ value }`), or nothing: an unknown then has no fingerprint.
 */
export type Reference = { value: InventoryValue } | undefined;

function child(ref: Reference, key: string | number): Reference {
  const v = ref?.value;
  if (typeof key === "number")
    return Array.isArray(v) && key < v.length ? { value: v[key] as InventoryValue } : undefined;
  if (v === null || v === undefined || typeof v !== "object" || Array.isArray(v) || !(key in v)) return undefined;
  return { value: v[key] as InventoryValue };
}

export interface NormalizeOptions {
  /** The reference run's value here (see Reference). */
  reference?: Reference;
  /**
   * Unwrap secrets instead of masking them: for the reference run's values,
   * which are only ever fingerprinted, never written.
   */
  reveal?: boolean;
}

/**
 * Plain JSON for one input value: a secret becomes `[secret:<fingerprint>]`
 * (an object or list keeps its shape, each leaf masked), an unknown
 * `[unknown:<fingerprint of the reference value>]` or `[unknown]`.
 */
export async function normalizeValue(
  value: unknown,
  kinds: ValueKinds,
  counts: MaskCounts,
  options: NormalizeOptions = {},
): Promise<InventoryValue> {
  const ref = options.reference;
  const output = kinds.output?.(value);
  if (output !== undefined) {
    const o = await output;
    const inner = o.known ? await normalizeValue(o.value, kinds, counts, options) : unknownValue(ref, counts);
    // A secret not known yet is a secret all the same.
    return o.secret && !options.reveal ? maskSecret(inner, counts) : inner;
  }
  const secret = kinds.secret(value);
  if (secret) {
    const inner = await normalizeValue(secret.value, kinds, counts, options);
    return options.reveal ? inner : maskSecret(inner, counts);
  }
  if (kinds.isUnknown(value)) return unknownValue(ref, counts);
  if (value === null || value === undefined) return null;
  if (typeof value === "string" || typeof value === "boolean") return value;
  if (typeof value === "number") return Number.isFinite(value) ? value : String(value);
  if (typeof value === "bigint") return value.toString();
  const resource = kinds.resourceRef(value);
  if (resource !== undefined) return { $resource: resource };
  const asset = kinds.asset(value);
  if (asset !== undefined) return asset;
  if (Array.isArray(value)) {
    const out: InventoryValue[] = [];
    for (const [i, v] of value.entries())
      out.push(await normalizeValue(v, kinds, counts, { ...options, reference: child(ref, i) }));
    return out;
  }
  if (typeof value === "object") {
    const out: Record<string, InventoryValue> = {};
    for (const key of Object.keys(value).sort()) {
      const v = (value as Record<string, unknown>)[key];
      if (v === undefined) continue;
      out[key] = await normalizeValue(v, kinds, counts, { ...options, reference: child(ref, key) });
    }
    return out;
  }
  return String(value);
}

/**
 * An unknown: with a reference value, that value's shape with each leaf
 * masked by its fingerprint (a Deployment spec computed from the store's
 * endpoint still says which of its fields changed); without one, `[unknown]`.
 */
function unknownValue(ref: Reference, counts: MaskCounts): InventoryValue {
  counts.unknowns++;
  return ref ? maskLeaves("unknown", ref.value) : maskValue("unknown");
}

/** Every leaf of a normalised secret masked with its own fingerprint (unknowns stay as they are). */
function maskSecret(value: InventoryValue, counts: MaskCounts): InventoryValue {
  counts.secrets++;
  return maskLeaves("secret", value);
}

/**
 * `value`'s shape, every leaf replaced by `[<kind>:<its fingerprint>]`. A mask
 * already there keeps its fingerprint; inside a secret it becomes a secret
 * (a secret whose value is not known yet is still a secret, as format 1 and
 * the engine show it).
 */
function maskLeaves(kind: MaskKind, value: InventoryValue): InventoryValue {
  const mask = parseMask(value);
  if (mask) return kind === "secret" ? maskValue("secret", mask.fingerprint) : value;
  if (Array.isArray(value) && value.length > 0) return value.map((v) => maskLeaves(kind, v));
  if (value !== null && typeof value === "object" && !Array.isArray(value) && Object.keys(value).length > 0)
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, maskLeaves(kind, v)]));
  return maskValue(kind, fingerprint(value));
}

/** `<type>::<name>`, the way the inventory names a resource everywhere. */
export function resourceLabel(r: { type: string; name: string }): string {
  return `${r.type}::${r.name}`;
}

/** Identity of a resource across two inventories: Pulumi's URN is unique on parent type, type and name. */
export function resourceKey(r: InventoryResource): string {
  return `${r.parent ?? ""}|${resourceLabel(r)}`;
}

export function sortResources(resources: InventoryResource[]): InventoryResource[] {
  return [...resources].sort((a, b) =>
    resourceKey(a) < resourceKey(b) ? -1 : resourceKey(a) > resourceKey(b) ? 1 : 0,
  );
}

/** Stable text: keys sorted at every level, two-space indent, trailing newline. */
export function inventoryJson(inv: Inventory): string {
  return JSON.stringify(inv, null, 2) + "\n";
}

/** Throws unless `value` looks like an inventory this code can read. */
export function parseInventory(text: string, where: string): Inventory {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new Error(`${where}: not JSON: ${(err as Error).message}`, { cause: err });
  }
  const inv = doc as Partial<Inventory>;
  if (!inv || typeof inv !== "object" || !Array.isArray(inv.resources) || typeof inv.stack !== "string")
    throw new Error(`${where}: not an inventory written by \`npm run synth\` (no stack/resources)`);
  if (typeof inv.format !== "number" || !READABLE_FORMATS.includes(inv.format))
    throw new Error(
      `${where}: inventory format ${String(inv.format)}, this synth reads ${READABLE_FORMATS.join(" and ")}`,
    );
  return inv as Inventory;
}

function countLeaves(value: InventoryValue, kind: MaskKind): number {
  if (parseMask(value)?.kind === kind) return 1;
  if (Array.isArray(value)) return value.reduce<number>((n, v) => n + countLeaves(v, kind), 0);
  if (value !== null && typeof value === "object")
    return Object.values(value).reduce<number>((n, v) => n + countLeaves(v, kind), 0);
  return 0;
}

/** The readable companion of resources.json: counts, then the component tree. */
export function inventorySummary(inv: Inventory): string[] {
  const kinds = { custom: 0, component: 0, "remote-component": 0, provider: 0 };
  let secrets = 0;
  let unknowns = 0;
  for (const r of inv.resources) {
    kinds[r.kind]++;
    secrets += countLeaves(r.inputs, "secret");
    unknowns += countLeaves(r.inputs, "unknown");
  }
  const lines = [
    `${inv.project} / ${inv.stack}: ${inv.resources.length} resources (${kinds.custom} cloud resources, ${kinds["remote-component"]} expanded by their providers, ${kinds.component} components, ${kinds.provider} explicit providers)`,
    `inputs: ${unknowns} known only after deploy ${UNKNOWN_MARK}, ${secrets} secret ${SECRET_MARK}`,
  ];
  if (inv.lookups.length) lines.push(`looked up at deploy time: ${inv.lookups.join(", ")}`);
  lines.push("");

  const children = new Map<string | null, InventoryResource[]>();
  const labels = new Set(inv.resources.map(resourceLabel));
  for (const r of inv.resources) {
    // A parent the inventory does not hold (a remote component's internals) hangs at the top.
    const parent = r.parent !== null && labels.has(r.parent) ? r.parent : null;
    children.set(parent, [...(children.get(parent) ?? []), r]);
  }
  const walk = (parent: string | null, prefix: string) => {
    const list = children.get(parent) ?? [];
    list.forEach((r, i) => {
      const last = i === list.length - 1;
      lines.push(`${prefix}${last ? "└─ " : "├─ "}${r.type} ${r.name}`);
      walk(resourceLabel(r), prefix + (last ? "   " : "│  "));
    });
  };
  lines.push(`${inv.project}-${inv.stack}`);
  walk(null, "");
  return lines;
}
