/**
 * A reviewable change list between two inventories (`npm run synth -- --diff
 * <old-out> <new-out>`): resources added, removed and changed, and for each
 * changed one the fields that differ, old -> new. JSON documents held in
 * strings (IAM policies, kubeconfigs) are compared field by field; multi-line
 * text (step configs, scripts) line by line. A masked value whose fingerprint
 * changed (`[secret:…]`, `[unknown:…]`, infra/synth/inventory.ts) is a change
 * like any other, shown without its value; the list opens with what the
 * changes do (infra/synth/effects.ts: "rolls the gateway").
 *
 * Pure; the output is plain text that reads well in a terminal and inside a
 * ```diff block of a pull-request comment.
 */
import { diffEffects, effectLines, effectsOf, maskedChange } from "./effects";
import type { FieldChange, InventoryDiff, ResourceChange } from "./diffTypes";
import { maskValue, parseMask, resourceKey, resourceLabel, type Inventory, type InventoryValue } from "./inventory";

/** A string that holds a JSON object or array, parsed; undefined otherwise. */
function embeddedJson(value: string): InventoryValue | undefined {
  if (!/^\s*[[{]/.test(value)) return undefined;
  try {
    const parsed = JSON.parse(value) as InventoryValue;
    return parsed !== null && typeof parsed === "object" ? parsed : undefined;
  } catch {
    return undefined;
  }
}

function join(prefix: string, key: string): string {
  if (!prefix) return key;
  return /^[A-Za-z_$][\w$-]*$/.test(key) ? `${prefix}.${key}` : `${prefix}[${JSON.stringify(key)}]`;
}

/** Leaves of a value, keyed by path; an empty object or array is a leaf of its own. */
function flatten(value: InventoryValue, prefix: string, out: Map<string, InventoryValue>): void {
  if (typeof value === "string") {
    const json = embeddedJson(value);
    if (json !== undefined) return flatten(json, `${prefix}{json}`, out);
  }
  if (Array.isArray(value) && value.length) {
    value.forEach((v, i) => flatten(v, `${prefix}[${i}]`, out));
    return;
  }
  if (value !== null && typeof value === "object" && !Array.isArray(value) && Object.keys(value).length) {
    for (const [k, v] of Object.entries(value)) flatten(v, join(prefix, k), out);
    return;
  }
  out.set(prefix, value);
}

function leaves(value: Record<string, InventoryValue>): Map<string, InventoryValue> {
  const out = new Map<string, InventoryValue>();
  for (const [k, v] of Object.entries(value)) flatten(v, join("", k), out);
  return out;
}

function lineChange(before: string, after: string): FieldChange["lines"] {
  const a = before.split("\n");
  const b = after.split("\n");
  const inB = new Set(b);
  const inA = new Set(a);
  return { removed: a.filter((l) => !inB.has(l)), added: b.filter((l) => !inA.has(l)) };
}

export function diffFields(
  before: Record<string, InventoryValue>,
  after: Record<string, InventoryValue>,
): FieldChange[] {
  const a = leaves(before);
  const b = leaves(after);
  const paths = [...new Set([...a.keys(), ...b.keys()])].sort();
  const changes: FieldChange[] = [];
  for (const path of paths) {
    const has = { a: a.has(path), b: b.has(path) };
    const va = a.get(path);
    const vb = b.get(path);
    if (has.a && has.b && JSON.stringify(va) === JSON.stringify(vb)) continue;
    const change: FieldChange = { path };
    if (has.a) change.before = va as InventoryValue;
    if (has.b) change.after = vb as InventoryValue;
    if (typeof va === "string" && typeof vb === "string" && (va.includes("\n") || vb.includes("\n")))
      change.lines = lineChange(va, vb);
    changes.push(change);
  }
  return changes;
}

/**
 * A value as an inventory without fingerprints (format 1) records it: a mask
 * loses its fingerprint, and a shape whose every leaf is masked (format 2
 * keeps the keys of a structured secret or unknown) is one mask again.
 */
export function withoutFingerprints(value: InventoryValue): InventoryValue {
  const kinds = new Set<string>();
  const allMasked = (v: InventoryValue): boolean => {
    const m = parseMask(v);
    if (m) return kinds.add(m.kind) !== undefined;
    if (Array.isArray(v)) return v.length > 0 && v.every(allMasked);
    if (v !== null && typeof v === "object") return Object.keys(v).length > 0 && Object.values(v).every(allMasked);
    return false;
  };
  if (allMasked(value)) return maskValue(kinds.has("secret") ? "secret" : "unknown");
  if (Array.isArray(value)) return value.map(withoutFingerprints);
  if (value !== null && typeof value === "object")
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, withoutFingerprints(v)]));
  return value;
}

/** Both sides comparable: fingerprints only count when both inventories have them. */
function comparable(before: Inventory, after: Inventory): [Inventory, Inventory] {
  if (before.format >= 2 && after.format >= 2) return [before, after];
  const strip = (inv: Inventory): Inventory => ({
    ...inv,
    resources: inv.resources.map((r) => ({
      ...r,
      inputs: withoutFingerprints(r.inputs) as Record<string, InventoryValue>,
    })),
    outputs: withoutFingerprints(inv.outputs ?? {}) as Record<string, InventoryValue>,
  });
  return [strip(before), strip(after)];
}

export function diffInventories(beforeInv: Inventory, afterInv: Inventory): InventoryDiff {
  const [before, after] = comparable(beforeInv, afterInv);
  const old = new Map(before.resources.map((r) => [resourceKey(r), r]));
  const neu = new Map(after.resources.map((r) => [resourceKey(r), r]));
  const changes: ResourceChange[] = [];
  let unchanged = 0;
  for (const [key, r] of neu) {
    const prev = old.get(key);
    if (!prev) {
      changes.push({ op: "add", resource: r, fields: diffFields({}, r.inputs) });
      continue;
    }
    const fields = diffFields(
      { ...prev.inputs, ...(prev.provider ? { "(provider)": prev.provider } : {}) },
      { ...r.inputs, ...(r.provider ? { "(provider)": r.provider } : {}) },
    );
    if (fields.length) changes.push({ op: "change", resource: r, fields });
    else unchanged++;
  }
  for (const [key, r] of old) if (!neu.has(key)) changes.push({ op: "remove", resource: r, fields: [] });
  const order = { remove: 0, change: 1, add: 2 };
  changes.sort((x, y) =>
    resourceKey(x.resource) === resourceKey(y.resource)
      ? order[x.op] - order[y.op]
      : resourceKey(x.resource) < resourceKey(y.resource)
        ? -1
        : 1,
  );
  return {
    stack: after.stack,
    changes,
    outputs: diffFields(before.outputs ?? {}, after.outputs ?? {}),
    unchanged,
  };
}

export interface FormatOptions {
  /** Longest value shown before it is cut (with its length noted). */
  maxValue?: number;
  /** Fields listed for an added resource; the rest are counted. */
  maxAddedFields?: number;
  /** Lines shown per side of a multi-line text change. */
  maxLines?: number;
}

function show(value: InventoryValue | undefined, max: number): string {
  if (value === undefined) return "(absent)";
  const mask = parseMask(value);
  if (mask) return maskValue(mask.kind);
  const text = JSON.stringify(value);
  return text.length > max ? `${text.slice(0, max)}… (${text.length} chars)` : text;
}

/** What a change between two masked values is, since neither value can be shown. */
const MASKED_CHANGE = {
  secret: "changed (a secret: the value is not shown)",
  unknown: "changed (computed at deploy time from values that changed)",
} as const;

function fieldLines(f: FieldChange, o: Required<FormatOptions>, op: ResourceChange["op"]): string[] {
  if (op === "add") return [`      ${f.path}: ${show(f.after, o.maxValue)}`];
  if (maskedChange(f)) {
    const kind = parseMask(f.after)?.kind ?? "unknown";
    return [`    ~ ${f.path}: ${maskValue(kind)} ${MASKED_CHANGE[kind]}`];
  }
  if (f.lines) {
    const out = [`    ~ ${f.path}: text changed (${f.lines.removed.length} lines out, ${f.lines.added.length} in)`];
    const side = (sign: string, lines: string[]) => {
      for (const l of lines.slice(0, o.maxLines))
        out.push(`        ${sign} ${l.length > o.maxValue ? l.slice(0, o.maxValue) + "…" : l}`);
      if (lines.length > o.maxLines) out.push(`        ${sign} … ${lines.length - o.maxLines} more`);
    };
    side("-", f.lines.removed);
    side("+", f.lines.added);
    return out;
  }
  const sign = f.before === undefined ? "+" : f.after === undefined ? "-" : "~";
  return [`    ${sign} ${f.path}: ${show(f.before, o.maxValue)} -> ${show(f.after, o.maxValue)}`];
}

/** The change list as text lines: a headline, then one block per changed resource. */
export function formatDiff(diff: InventoryDiff, options: FormatOptions = {}): string[] {
  const o: Required<FormatOptions> = { maxValue: 160, maxAddedFields: 12, maxLines: 8, ...options };
  const count = (op: ResourceChange["op"]) => diff.changes.filter((c) => c.op === op).length;
  const lines = [
    `stack ${diff.stack}: ${count("add")} to add, ${count("change")} to change, ${count("remove")} to remove (${diff.unchanged} unchanged)` +
      (diff.outputs.length ? `; ${diff.outputs.length} output field(s) changed` : ""),
  ];
  const effects = diffEffects(diff);
  lines.push(...effectLines(effects));
  const sign = { add: "+", remove: "-", change: "~" };
  for (const c of diff.changes) {
    const where = c.resource.parent ? `  (in ${c.resource.parent})` : "";
    lines.push(`${sign[c.op]} ${c.resource.type} ${c.resource.name}${where}`);
    for (const says of effectsOf(effects, c)) lines.push(`    => ${says}`);
    if (c.op === "add") {
      for (const f of c.fields.slice(0, o.maxAddedFields)) lines.push(...fieldLines(f, o, c.op));
      if (o.maxAddedFields && c.fields.length > o.maxAddedFields)
        lines.push(`      … ${c.fields.length - o.maxAddedFields} more fields`);
    } else {
      for (const f of c.fields) lines.push(...fieldLines(f, o, c.op));
    }
  }
  if (diff.outputs.length) {
    lines.push("~ stack outputs");
    for (const f of diff.outputs) lines.push(...fieldLines(f, o, "change"));
  }
  return lines;
}

/** Resource labels of every change, for callers that only need to know what moved. */
export function changedLabels(diff: InventoryDiff): string[] {
  return diff.changes.map((c) => `${c.op} ${resourceLabel(c.resource)}`);
}
