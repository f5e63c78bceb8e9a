import * as fs from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { SECRET_KEYS, configSchema } from "../../infra/config";
import { projectConfigEntries, withProjectConfig } from "../../infra/config/projectFile";

const ROOT = path.resolve(__dirname, "../..");
const pulumiYaml = fs.readFileSync(path.join(ROOT, "Pulumi.yaml"), "utf8");

/** The constraints of Pulumi's project schema on a `config:` entry (sdk/go/common/workspace/project.json, configTypeDeclaration). */
function pulumiProblems(key: string, entry: Record<string, unknown>): string[] {
  const problems: string[] = [];
  const allowed = new Set(["type", "items", "description", "secret", "default", "value"]);
  for (const k of Object.keys(entry))
    if (!allowed.has(k)) problems.push(`${key}: ${k} is not a config declaration field`);
  if (entry.type !== undefined && !["string", "integer", "boolean", "array"].includes(String(entry.type)))
    problems.push(`${key}: type ${String(entry.type)} is not one Pulumi can declare`);
  if (entry.type === "array" && !entry.items) problems.push(`${key}: an array needs items`);
  if (entry.default !== undefined && entry.value !== undefined) problems.push(`${key}: both default and value`);
  return problems;
}

describe("Pulumi.yaml project config block", () => {
  it("is in sync with the schema (regenerate with `npm run docs:config`)", () => {
    expect(withProjectConfig(pulumiYaml)).toBe(pulumiYaml);
  });

  it("declares every top-level key of the schema, with Pulumi's declaration shape", () => {
    const block = (parse(pulumiYaml) as { config: Record<string, Record<string, unknown>> }).config;
    // Every key but the optional ones without a default (the two model forms): Pulumi would require those.
    const optional = Object.entries(configSchema.shape)
      .filter(([, schema]) => {
        const r = schema.safeParse(undefined);
        return r.success && r.data === undefined;
      })
      .map(([k]) => k);
    expect(optional).toEqual(["model", "models"]);
    expect(Object.keys(block)).toEqual(Object.keys(configSchema.shape).filter((k) => !optional.includes(k)));
    const problems = Object.entries(block).flatMap(([k, v]) => pulumiProblems(k, v));
    expect(problems).toEqual([]);
    // Secrets stay out: a declared key without a default is required in every stack.
    for (const secret of Object.keys(SECRET_KEYS)) expect(block).not.toHaveProperty(secret);
  });

  it("defaults change nothing: a stack without the key resolves as with Pulumi's merged default", () => {
    for (const [key, entry] of Object.entries(projectConfigEntries())) {
      const schema = (
        configSchema.shape as Record<string, { safeParse(v: unknown): { success: boolean; data?: unknown } }>
      )[key];
      const absent = schema.safeParse(undefined);
      if (entry.default === undefined) {
        expect(absent.success, `${key} has no default, so Pulumi requires it; the schema must too`).toBe(false);
        continue;
      }
      expect(schema.safeParse(entry.default)).toEqual(absent);
    }
  });

  it("lists each object's fields with their types and defaults", () => {
    const build = projectConfigEntries().build;
    expect(build.type).toBeUndefined();
    expect(build.description).toContain('  tritonVersion (string, default "23.05"): ');
    expect(build.description).toContain("  sshAllowedCidrs (string[], default []): ");
  });

  it("refuses to overwrite a hand-written config block", () => {
    expect(() => withProjectConfig("name: x\nconfig:\n  a: 1\n")).toThrow(/hand-written `config:` block/);
  });
});
