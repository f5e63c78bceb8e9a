/**
 * The shape of an inventory diff (synth --diff): what changed per resource and
 * per stack output. A leaf, so the diff (inventoryDiff.ts) and what a change
 * does (effects.ts) both read it without importing each other.
 */
import type { InventoryResource, InventoryValue } from "./inventory";

export interface FieldChange {
  /** Dotted path into the inputs (`[i]` for array items, `{json}` where a string holds JSON). */
  path: string;
  before?: InventoryValue;
  after?: InventoryValue;
  /** For multi-line text: lines only in the old value, lines only in the new one. */
  lines?: { removed: string[]; added: string[] };
}

export interface ResourceChange {
  op: "add" | "remove" | "change";
  resource: InventoryResource;
  fields: FieldChange[];
}

export interface InventoryDiff {
  stack: string;
  changes: ResourceChange[];
  /** Stack outputs that changed (as fields of a pseudo-resource). */
  outputs: FieldChange[];
  unchanged: number;
}
