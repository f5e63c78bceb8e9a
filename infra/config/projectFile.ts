/**
 * Pulumi.yaml's project-level `config:` block, generated from the zod schema
 * (infra/config/schema.ts) so the CLI knows every key's type, description and default
 * before the program runs. `npm run docs:config` rewrites it; a unit test fails
 * when Pulumi.yaml and the schema differ.
 *
 * Pulumi's project config can type only strings, integers, booleans and arrays
 * (sdk/go/common/workspace/project.json); our keys are objects, so object keys
 * carry no `type` (then the CLI does not type-check them; the program's own
 * validation does) and list their fields in the description. A key without a
 * default is required in every stack, which is why the optional secrets are
 * not declared here: Pulumi would demand them in every stack file.
 */
import { stringify } from "yaml";
import { z } from "zod";
import { SECRET_KEYS, configSchema } from "./schema";
import type { JsonSchema } from "./reference";
import { STATED_DEFAULT } from "./statedDefault";

/** One entry of the block, as Pulumi's ProjectConfigType has it. */
export interface ProjectConfigEntry {
  type?: "string" | "integer" | "boolean" | "array";
  items?: { type: string };
  description: string;
  default?: unknown;
}

export const PROJECT_CONFIG_HEADER = [
  "# Project-level config: generated from infra/config/schema.ts by `npm run docs:config`; do not edit.",
  "# Objects cannot be typed in Pulumi.yaml: each lists its fields; the program validates them.",
  `# Not declared (Pulumi would require them in every stack): the optional secrets ${Object.keys(SECRET_KEYS).join(", ")},`,
  "# and the two exclusive forms of the models, model and models (a stack sets one; the program says so when it sets neither).",
];

function typeName(s: JsonSchema): string {
  if (s.enum) return s.enum.map((v) => JSON.stringify(v)).join(" | ");
  if (s.anyOf) return s.anyOf.map(typeName).join(" | ");
  if (s.type === "array") return `${s.items ? typeName(s.items) : "any"}[]`;
  if (s.type === "object" && s.properties) return `{${Object.keys(s.properties).join(", ")}}`;
  if (s.type === "object") return "map";
  return Array.isArray(s.type) ? s.type.join(" | ") : (s.type ?? "any");
}

const SIMPLE = new Set(["string", "integer", "boolean"]);

function simpleType(s: JsonSchema): ProjectConfigEntry["type"] | undefined {
  if (typeof s.type === "string" && SIMPLE.has(s.type)) return s.type as ProjectConfigEntry["type"];
  return undefined;
}

/** The block's entries, in schema order. */
export function projectConfigEntries(): Record<string, ProjectConfigEntry> {
  const schema = z.toJSONSchema(configSchema, { io: "input", unrepresentable: "any" }) as JsonSchema;
  const shape = configSchema.shape as Record<string, z.ZodType>;
  const entries: Record<string, ProjectConfigEntry> = {};
  for (const [key, s] of Object.entries(schema.properties ?? {})) {
    // The value the program ends up with when the stack leaves the key out (none: required).
    const parsed = shape[key]?.safeParse(undefined);
    const fallback = parsed?.success ? parsed.data : undefined;
    // Optional without a default (model, models): declared, Pulumi would require it in every stack.
    if (parsed?.success && fallback === undefined) continue;
    const entry: ProjectConfigEntry = { description: s.description ?? "" };
    const simple = simpleType(s);
    if (simple) {
      entry.type = simple;
    } else if (s.type === "array" && s.items && simpleType(s.items)) {
      entry.type = "array";
      entry.items = { type: simpleType(s.items) as string };
    } else if (s.properties) {
      const required = new Set(s.required ?? []);
      const fields = Object.entries(s.properties).map(([field, fs]) => {
        const stated = fs[STATED_DEFAULT];
        const dflt =
          fs.default !== undefined ? `, default ${JSON.stringify(fs.default)}` : stated ? `, default: ${stated}` : "";
        const req = required.has(field) && fs.default === undefined ? ", required" : "";
        return `  ${field} (${typeName(fs)}${dflt}${req}): ${fs.description ?? ""}`.trimEnd();
      });
      entry.description = [`${s.description ?? `The ${key} settings`} (an object). Fields:`, ...fields].join("\n");
    } else if (!entry.description) {
      entry.description = `${typeName(s)}.`;
    }
    if (fallback !== undefined) entry.default = fallback;
    entries[key] = entry;
  }
  return entries;
}

/** The generated tail of Pulumi.yaml: header comments and the `config:` block. */
export function projectConfigBlock(): string {
  return PROJECT_CONFIG_HEADER.join("\n") + "\n" + stringify({ config: projectConfigEntries() }, { lineWidth: 0 });
}

/** Pulumi.yaml with its generated config block replaced (or appended). Throws on a hand-written `config:`. */
export function withProjectConfig(pulumiYaml: string): string {
  const lines = pulumiYaml.split("\n");
  const start = lines.findIndex((l) => l === PROJECT_CONFIG_HEADER[0]);
  const handWritten = lines.findIndex((l) => /^config:/.test(l));
  if (handWritten >= 0 && (start < 0 || handWritten < start))
    throw new Error(
      "Pulumi.yaml has a hand-written `config:` block; remove it, the block is generated from infra/config/schema.ts",
    );
  const head = (start >= 0 ? lines.slice(0, start) : lines).join("\n").replace(/\n*$/, "\n");
  return head + projectConfigBlock();
}
