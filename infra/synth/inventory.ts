/**
 * The offline infrastructure inventory: every resource the program registers,
 * with its inputs as plain JSON, secrets masked and values only the cloud can
 * compute marked. `npm run synth` writes it as `<out>/resources.json` plus a
 * readable tree (`resources.txt`), so a reviewer without cloud credentials sees
 * an AWS or Kubernetes change as a diff of a file.
 *
 * Pure: recognising the SDK's runtime values (secrets, unknowns, resource
 * references, assets) is delegated to a `ValueKinds` the caller provides.
 */

export const SECRET_MARK = "[secret]";
export const UNKNOWN_MARK = "[unknown]";
export const INVENTORY_FILE = "resources.json";
export const INVENTORY_SUMMARY_FILE = "resources.txt";
export const INVENTORY_FORMAT = 1;

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

/** Plain JSON for one input value; secrets become SECRET_MARK and unknowns UNKNOWN_MARK. */
export async function normalizeValue(value: unknown, kinds: ValueKinds, counts: MaskCounts): Promise<InventoryValue> {
  if (kinds.secret(value)) {
    counts.secrets++;
    return SECRET_MARK;
  }
  if (kinds.isUnknown(value)) {
    counts.unknowns++;
    return UNKNOWN_MARK;
  }
  if (value === null || value === undefined) return null;
  if (typeof value === "string" || typeof value === "boolean") return value;
  if (typeof value === "number") return Number.isFinite(value) ? value : String(value);
  if (typeof value === "bigint") return value.toString();
  const ref = kinds.resourceRef(value);
  if (ref !== undefined) return { $resource: ref };
  const asset = kinds.asset(value);
  if (asset !== undefined) return asset;
  if (Array.isArray(value)) {
    const out: InventoryValue[] = [];
    for (const v of value) out.push(await normalizeValue(v, kinds, counts));
    return out;
  }
  if (typeof value === "object") {
    const out: Record<string, InventoryValue> = {};
    for (const key of Object.keys(value).sort()) {
      const v = (value as Record<string, unknown>)[key];
      if (v === undefined) continue;
      out[key] = await normalizeValue(v, kinds, counts);
    }
    return out;
  }
  return String(value);
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
  if (inv.format !== INVENTORY_FORMAT)
    throw new Error(`${where}: inventory format ${String(inv.format)}, this synth reads ${INVENTORY_FORMAT}`);
  return inv as Inventory;
}

function countLeaves(value: InventoryValue, mark: string): number {
  if (value === mark) return 1;
  if (Array.isArray(value)) return value.reduce<number>((n, v) => n + countLeaves(v, mark), 0);
  if (value !== null && typeof value === "object")
    return Object.values(value).reduce<number>((n, v) => n + countLeaves(v, mark), 0);
  return 0;
}

/** The readable companion of resources.json: counts, then the component tree. */
export function inventorySummary(inv: Inventory): string[] {
  const kinds = { custom: 0, component: 0, "remote-component": 0, provider: 0 };
  let secrets = 0;
  let unknowns = 0;
  for (const r of inv.resources) {
    kinds[r.kind]++;
    secrets += countLeaves(r.inputs, SECRET_MARK);
    unknowns += countLeaves(r.inputs, UNKNOWN_MARK);
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
