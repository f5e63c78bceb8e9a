/**
 * Turns schema (zod) issues into problems phrased for a person, and parses a
 * config so that schema problems never hide the rule problems: the values a
 * schema problem points at are dropped (so their defaults apply) and the
 * parse is repeated, giving the rules a config to check.
 *
 * Generic over the schema, pure: the messages name the key itself (nested
 * keys too), suggest the near match for a misspelt key, say what type to give
 * ("give a number"), name the whole range of a bounded number, show the real
 * shape of a union (e.g. model.source), and hint to quote an all-digit value
 * that YAML read as a number.
 */
import { closest, distance } from "fastest-levenshtein";
import { z } from "zod";

export interface Problem {
  key: string;
  value: unknown;
  message: string;
  fix: string;
  /** The value must not be printed (it may be a secret typed under a wrong key). */
  hideValue?: boolean;
}

type Path = readonly PropertyKey[];

/** `triton-ft:serving.replicas`, `triton-ft:build.sshAllowedCidrs[1]`. */
export function keyName(project: string, path: Path): string {
  let out = `${project}:`;
  path.forEach((part, i) => {
    if (typeof part === "number") out += `[${part}]`;
    else out += i === 0 ? String(part) : `.${String(part)}`;
  });
  return out;
}

export function valueAt(root: unknown, path: Path): unknown {
  let cur: unknown = root;
  for (const part of path) {
    if (cur === null || typeof cur !== "object") return undefined;
    cur = (cur as Record<PropertyKey, unknown>)[part];
  }
  return cur;
}

/** Strips optional/default/prefault/nullable wrappers. */
export function unwrap(schema: z.ZodType): z.ZodType {
  let s: z.ZodType = schema;
  for (let i = 0; i < 10; i++) {
    if (
      s instanceof z.ZodOptional ||
      s instanceof z.ZodDefault ||
      s instanceof z.ZodPrefault ||
      s instanceof z.ZodNullable
    ) {
      s = s.unwrap() as z.ZodType;
    } else return s;
  }
  return s;
}

/** The schema at a path (through objects, arrays, records and the union option holding the key). */
export function schemaAt(root: z.ZodType, path: Path): z.ZodType | undefined {
  let s: z.ZodType | undefined = root;
  for (const part of path) {
    if (!s) return undefined;
    const u: z.ZodType = unwrap(s);
    if (u instanceof z.ZodObject) s = (u.shape as Record<string, z.ZodType>)[String(part)];
    else if (u instanceof z.ZodArray) s = u.element as z.ZodType;
    else if (u instanceof z.ZodRecord) s = u.valueType as z.ZodType;
    else if (u instanceof z.ZodUnion) {
      const options = (u.options as z.ZodType[]).map((o) => unwrap(o));
      s =
        typeof part === "number"
          ? (options.find((o): o is z.ZodArray => o instanceof z.ZodArray)?.element as z.ZodType | undefined)
          : (options
              .filter((o): o is z.ZodObject => o instanceof z.ZodObject)
              .map((o) => (o.shape as Record<string, z.ZodType>)[String(part)])
              .find((x) => x !== undefined) ??
            (options.find((o): o is z.ZodRecord => o instanceof z.ZodRecord)?.valueType as z.ZodType | undefined));
    } else return undefined;
  }
  return s;
}

/** Keys an object schema at `path` accepts (empty when it is not an object). */
export function knownKeysAt(root: z.ZodType, path: Path): string[] {
  const s = schemaAt(root, path);
  const u = s ? unwrap(s) : undefined;
  return u instanceof z.ZodObject ? Object.keys(u.shape) : [];
}

/** The near match for a misspelt key: small edit distance, or a case-only difference. */
export function didYouMean(word: string, candidates: readonly string[]): string | undefined {
  if (candidates.length === 0) return undefined;
  const lower = word.toLowerCase();
  const exactCase = candidates.find((c) => c.toLowerCase() === lower);
  if (exactCase) return exactCase;
  const best = closest(word, [...candidates]);
  const limit = Math.max(1, Math.min(3, Math.floor(best.length / 3)));
  return distance(word.toLowerCase(), best.toLowerCase()) <= limit ? best : undefined;
}

/** A compact picture of the shape a schema expects: `{huggingface: {repo, revision}}`, optional keys with `?`. */
export function describeShape(schema: z.ZodType, depth = 0): string {
  const u = unwrap(schema);
  if (u instanceof z.ZodObject) {
    const entries = Object.entries(u.shape as Record<string, z.ZodType>).map(([k, v]) => {
      const optional = v instanceof z.ZodOptional || v instanceof z.ZodDefault || v instanceof z.ZodPrefault;
      const inner = unwrap(v);
      const nested = inner instanceof z.ZodObject && depth < 2 ? `: ${describeShape(inner, depth + 1)}` : "";
      return `${k}${optional ? "?" : ""}${nested}`;
    });
    return `{${entries.join(", ")}}`;
  }
  if (u instanceof z.ZodUnion) return (u.options as z.ZodType[]).map((o) => describeShape(o, depth)).join(" or ");
  return "a value";
}

function typeOf(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "a list";
  if (typeof value === "object") return "a map";
  if (typeof value === "string") return "text";
  if (typeof value === "number") return "a number";
  if (typeof value === "boolean") return "true/false";
  return typeof value;
}

const GIVE: Record<string, string> = {
  number: "give a number",
  int: "give a whole number",
  string: "give a text value",
  boolean: "give true or false",
  array: "give a list (YAML lines starting with '- ')",
  object: "give a map of keys (see the configuration reference in docs/config-reference.md)",
  record: "give a map of keys",
};

function numberRange(s: z.ZodType | undefined): string | undefined {
  const u = s ? unwrap(s) : undefined;
  if (!(u instanceof z.ZodNumber)) return undefined;
  let min: number | undefined;
  let max: number | undefined;
  // An exclusive bound on a whole number is the next whole number (positive() is "> 0": at least 1).
  for (const check of u.def.checks ?? []) {
    const d = check._zod.def as { check?: string; value?: unknown; inclusive?: boolean };
    if (typeof d.value !== "number") continue;
    const step = d.inclusive ? 0 : u.isInt ? 1 : 0;
    if (d.check === "greater_than") min = d.value + step;
    if (d.check === "less_than") max = d.value - step;
  }
  const what = u.isInt ? "a whole number" : "a number";
  if (min !== undefined && max !== undefined) return `${what} from ${min} to ${max}`;
  if (min !== undefined) return `${what} of at least ${min}`;
  if (max !== undefined) return `${what} of at most ${max}`;
  return what;
}

function descriptionAt(root: z.ZodType, path: Path): string | undefined {
  const s = schemaAt(root, path);
  return s?.description ?? (s ? unwrap(s).description : undefined);
}

/** Problems for a list of schema issues, relative to `values` (the parsed input) at `base`. */
export function describeIssues(
  root: z.ZodType,
  values: unknown,
  issues: readonly z.core.$ZodIssue[],
  project: string,
  base: Path = [],
): Problem[] {
  const out: Problem[] = [];
  for (const issue of issues) {
    const path = [...base, ...issue.path];
    const value = valueAt(values, path);
    const key = keyName(project, path);
    switch (issue.code) {
      case "unrecognized_keys": {
        const known = knownKeysAt(root, path);
        for (const k of issue.keys) {
          const near = didYouMean(k, known);
          out.push({
            key: keyName(project, [...path, k]),
            value: valueAt(values, [...path, k]),
            message: `is not a key of ${path.length > 0 ? key : `the ${project} namespace`}`,
            fix: `${near ? `did you mean ${near}? ` : ""}known keys: ${known.join(", ")}`,
          });
        }
        break;
      }
      case "invalid_union": {
        const branch = pickUnionBranch(root, path, value, issue.errors);
        if (branch) {
          out.push(...describeIssues(root, values, branch, project, path));
        } else {
          const s = schemaAt(root, path);
          out.push({
            key,
            value,
            message: "does not have one of the accepted shapes",
            fix: `use ${s ? describeShape(s) : "the shape in docs/config-reference.md"}${s?.description ? ` (${s.description})` : ""}`,
          });
        }
        break;
      }
      case "invalid_type": {
        if (value === undefined) {
          const desc = descriptionAt(root, path);
          out.push({ key, value, message: "is required", fix: `set it${desc ? `: ${desc}` : ""}` });
          break;
        }
        const expected = String(issue.expected);
        let fix = GIVE[expected] ?? `give ${expected}`;
        if (expected === "string" && typeof value === "number") {
          fix =
            'quote it in the stack file (e.g. sha256: "0123…"): YAML reads an unquoted all-digit value as a number, ' +
            "and long ones lose digits";
        }
        if (expected === "number") {
          const range = numberRange(schemaAt(root, path));
          if (range) fix = `give ${range}`;
        }
        out.push({ key, value, message: `is ${typeOf(value)} but must be ${expectedNoun(expected)}`, fix });
        break;
      }
      case "too_small":
      case "too_big": {
        const range = numberRange(schemaAt(root, path));
        out.push({
          key,
          value,
          message: range ? `is out of range: it must be ${range}` : issue.message,
          fix: range ? `use ${range}` : "see the configuration reference in docs/config-reference.md",
        });
        break;
      }
      case "invalid_value": {
        const options = issue.values.map(String);
        const near = typeof value === "string" ? didYouMean(value, options) : undefined;
        out.push({
          key,
          value,
          message: "is not one of the accepted values",
          fix: `${near ? `did you mean ${near}? ` : ""}use one of: ${options.join(", ")}`,
        });
        break;
      }
      default: {
        const params = (issue as { params?: { fix?: unknown } }).params;
        const desc = descriptionAt(root, path);
        out.push({
          key,
          value,
          message: issue.message,
          fix:
            typeof params?.fix === "string"
              ? params.fix
              : desc
                ? `expected: ${desc}`
                : "see the configuration reference in docs/config-reference.md",
        });
      }
    }
  }
  return out;
}

function expectedNoun(expected: string): string {
  const nouns: Record<string, string> = {
    number: "a number",
    int: "a whole number",
    string: "text",
    boolean: "true or false",
    array: "a list",
    object: "a map",
    record: "a map",
  };
  return nouns[expected] ?? expected;
}

/**
 * For a union of object shapes, the option the author meant: the one whose
 * keys contain every key the value has. Its issues are then reported by name
 * (e.g. `model.source.huggingface.revision is required`).
 */
function pickUnionBranch(
  root: z.ZodType,
  path: Path,
  value: unknown,
  branches: readonly (readonly z.core.$ZodIssue[])[],
): readonly z.core.$ZodIssue[] | undefined {
  if (value === null || typeof value !== "object") return undefined;
  const s = schemaAt(root, path);
  const u = s ? unwrap(s) : undefined;
  if (!(u instanceof z.ZodUnion)) return undefined;
  // A list or a map, when the union offers one of each (serving.consumers): the branch of the value's kind.
  const kind = (u.options as z.ZodType[]).findIndex((o) =>
    Array.isArray(value) ? unwrap(o) instanceof z.ZodArray : unwrap(o) instanceof z.ZodRecord,
  );
  if (kind >= 0) return branches[kind];
  const keys = Object.keys(value);
  if (keys.length === 0) return undefined;
  const options = u.options as z.ZodType[];
  const idx = options.findIndex((o) => {
    const ou = unwrap(o);
    return ou instanceof z.ZodObject && keys.every((k) => k in ou.shape);
  });
  return idx >= 0 ? branches[idx] : undefined;
}

function deleteAt(root: unknown, path: Path): boolean {
  if (path.length === 0) return false;
  const parent = valueAt(root, path.slice(0, -1));
  const last = path[path.length - 1] as PropertyKey;
  if (parent === null || typeof parent !== "object") return false;
  if (Array.isArray(parent)) {
    // Dropping one element would renumber the others: drop the whole list.
    return deleteAt(root, path.slice(0, -1));
  }
  if (!(last in parent)) return false;
  delete (parent as Record<PropertyKey, unknown>)[last];
  return true;
}

/**
 * Parses `values`; on schema problems, drops the offending values and parses
 * again (up to a few rounds) so the caller still gets a config to run its
 * rules on. Returns every schema problem, and `dropped`: the keys whose values
 * were dropped, so rule problems about them (now seeing a default) can be
 * left out.
 */
export function parseLeniently<S extends z.ZodType>(
  schema: S,
  values: Record<string, unknown>,
  project: string,
): { config?: z.output<S>; problems: Problem[]; dropped: string[] } {
  const work = structuredClone(values);
  const problems: Problem[] = [];
  const dropped: string[] = [];
  const seen = new Set<string>();
  for (let round = 0; round < 5; round++) {
    const r = schema.safeParse(work);
    if (r.success) return { config: r.data, problems, dropped };
    let changed = false;
    for (const p of describeIssues(schema, work, r.error.issues, project)) {
      if (!seen.has(p.key + p.message)) {
        seen.add(p.key + p.message);
        problems.push(p);
      }
    }
    for (const issue of r.error.issues) {
      if (issue.code === "unrecognized_keys") {
        for (const k of issue.keys) changed = deleteAt(work, [...issue.path, k]) || changed;
        dropped.push(...issue.keys.map((k) => keyName(project, [...issue.path, k])));
      } else {
        changed = deleteAt(work, issue.path) || changed;
        dropped.push(keyName(project, issue.path));
      }
    }
    if (!changed) break;
  }
  return { problems, dropped };
}

/** True when a rule problem's key is one of the dropped keys, inside one, or holds one. */
export function touchesDropped(key: string, dropped: readonly string[]): boolean {
  const inside = (a: string, b: string) => a === b || a.startsWith(`${b}.`) || a.startsWith(`${b}[`);
  return dropped.some((d) => inside(key, d) || inside(d, key));
}
