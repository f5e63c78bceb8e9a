/**
 * The layout docs/architecture.md promises, checked on the code: every file of
 * infra/ sits in a layer, no import goes up a layer and no import cycle runs
 * between infra/'s files, type imports included (a renderer that names a type
 * of a module which imports the renderer back is a cycle in the design even if
 * it vanishes at run time); and the plan's one entry point is called once per
 * composition root. The eslint boundaries (eslint.config.mjs) keep Pulumi out of
 * the pure layers and flag an upward import in the editor; this test is the
 * complete check.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { configSchema } from "../../infra/config/schema";
import { configReference, type JsonSchema } from "../../infra/config/reference";
import { STATED_DEFAULT } from "../../infra/config/statedDefault";

const ROOT = resolve(__dirname, "..", "..");
const INFRA = join(ROOT, "infra");

function tsFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return tsFiles(p);
    return p.endsWith(".ts") ? [p] : [];
  });
}

/** Every file under dir (no node_modules). */
function allFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (name === "node_modules" || name === "dist") return [];
    return statSync(p).isDirectory() ? allFiles(p) : [p];
  });
}

/** The layers, lowest first: infra/layers.json (its $comment says how a path matches). */
const LAYERS = (
  JSON.parse(readFileSync(join(INFRA, "layers.json"), "utf8")) as {
    layers: ReadonlyArray<{ name: string; paths: readonly string[] }>;
  }
).layers;

/** A file's layer (its index in LAYERS), or undefined when no entry names it. */
function layerOf(file: string): number | undefined {
  const rel = relative(INFRA, file);
  let best: { layer: number; length: number } | undefined;
  LAYERS.forEach((l, layer) => {
    for (const p of l.paths) {
      const hit = p.endsWith("/") ? rel.startsWith(p) : rel === p;
      if (hit && (!best || p.length > best.length)) best = { layer, length: p.length };
    }
  });
  return best?.layer;
}

function resolveImport(from: string, spec: string): string | undefined {
  if (!spec.startsWith(".")) return undefined;
  const base = resolve(dirname(from), spec);
  for (const candidate of [`${base}.ts`, join(base, "index.ts")]) {
    try {
      if (statSync(candidate).isFile()) return candidate;
    } catch {
      // not this one
    }
  }
  return undefined;
}

/** Every module specifier a file imports or re-exports, `import type` and `import()` included. */
function importsOf(text: string): string[] {
  return ts.preProcessFile(text, true, true).importedFiles.map((r) => r.fileName);
}

/** The import graph of infra/'s files: file -> the infra files it imports. */
function fileGraph(files: string[]): Map<string, string[]> {
  return new Map(
    files.map((f) => [
      f,
      importsOf(readFileSync(f, "utf8")).flatMap((spec) => {
        const target = resolveImport(f, spec);
        return target?.startsWith(INFRA) ? [target] : [];
      }),
    ]),
  );
}

/** Imports that go up a layer, as "<file> (<layer>) imports <target> (<layer>)". */
function upwardImports(graph: Map<string, string[]>, layer: (f: string) => number | undefined): string[] {
  const name = (f: string) => `${relative(ROOT, f)} (${LAYERS[layer(f) ?? -1]?.name ?? "no layer"})`;
  return [...graph].flatMap(([from, targets]) =>
    targets.filter((to) => (layer(to) ?? -1) > (layer(from) ?? -1)).map((to) => `${name(from)} imports ${name(to)}`),
  );
}

/** The graph's cycles: its strongly connected components of more than one file (Tarjan), each sorted. */
function cycles(graph: Map<string, string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string) => {
    index.set(v, index.size);
    low.set(v, index.get(v) ?? 0);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v) ?? 0, low.get(w) ?? 0));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v) ?? 0, index.get(w) ?? 0));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string | undefined;
    do {
      w = stack.pop();
      if (w === undefined) break;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1) found.push(component.sort());
  };
  for (const v of [...graph.keys()].sort()) if (!index.has(v)) visit(v);
  return found;
}

describe("architecture", () => {
  const files = tsFiles(INFRA);

  it("puts every file of infra/ in a layer", () => {
    expect(files.length).toBeGreaterThan(100);
    expect(files.filter((f) => layerOf(f) === undefined).map((f) => relative(ROOT, f))).toEqual([]);
  });

  it("has no import that goes up a layer, type imports included", () => {
    const graph = fileGraph(files);
    // The graph holds the type-only imports: the renderers name the plan's types through plan/types.ts.
    const typesModule = join(INFRA, "plan", "types.ts");
    expect([...graph].filter(([f, to]) => f.includes("/render/") && to.includes(typesModule)).length).toBeGreaterThan(
      3,
    );
    expect(upwardImports(graph, layerOf)).toEqual([]);
  });

  it("has no import cycle between infra/'s files, type imports included", () => {
    expect(cycles(fileGraph(files)).map((c) => c.map((f) => relative(ROOT, f)))).toEqual([]);
  });

  it("lets the renderers read the plan through its leaf types module only", () => {
    const types = join(INFRA, "plan", "types.ts");
    const intoPlan = [...fileGraph(files.filter((f) => f.includes("/infra/render/")))].flatMap(([from, targets]) =>
      targets
        .filter((t) => t.includes("/infra/plan/") && t !== types)
        .map((t) => `${relative(ROOT, from)} imports ${relative(ROOT, t)}`),
    );
    expect(intoPlan).toEqual([]);
    // plan/types.ts itself names only LaunchPlan from the rest of the plan (plan/launch.ts, which imports plan/paths.ts only).
    expect(
      fileGraph([types])
        .get(types)
        ?.filter((t) => t.includes("/infra/plan/"))
        .map((t) => relative(ROOT, t)),
    ).toEqual(["infra/plan/launch.ts"]);
  });

  it("finds an upward import, a type import and a cycle when there is one (self-check of the detectors)", () => {
    expect(importsOf('import type { A } from "../plan/types";\nexport { B } from "./b";')).toEqual([
      "../plan/types",
      "./b",
    ]);
    const [plan, render] = [join(INFRA, "plan", "a.ts"), join(INFRA, "render", "b.ts")];
    const graph = new Map([
      [plan, [render]],
      [render, [plan]],
    ]);
    expect(upwardImports(graph, layerOf)).toEqual(["infra/plan/a.ts (plan) imports infra/render/b.ts (render)"]);
    expect(cycles(graph)).toEqual([[plan, render]]);
  });

  it("computes the stack plan once per composition root, and each model's plan only inside it", () => {
    /** The files that call `name(`, its definition aside, and how often. */
    const callers = (name: string) => {
      const call = new RegExp(`\\b${name}\\(`, "g");
      return [...files, join(ROOT, "scripts", "synth.ts")].flatMap((f) => {
        const n = readFileSync(f, "utf8").replace(`export function ${name}(`, "").match(call)?.length ?? 0;
        return n > 0 ? [[relative(ROOT, f), n] as const] : [];
      });
    };
    expect(callers("buildStackPlan").sort()).toEqual([
      ["infra/program.ts", 1],
      ["scripts/synth.ts", 1],
    ]);
    expect(callers("buildPlan")).toEqual([["infra/plan/stack.ts", 1]]);
  });

  it("assembles the renderers' inputs in the plan only: consumers read plan.renderInputs", () => {
    const outside = [...files, ...tsFiles(join(ROOT, "scripts"))].filter(
      (f) =>
        !f.startsWith(join(INFRA, "plan") + "/") && /\b(workloadInput|scalingInput)\(/.test(readFileSync(f, "utf8")),
    );
    expect(outside.map((f) => relative(ROOT, f))).toEqual([]);
    // ...and the plan assembles each once, in buildPlan.
    const index = readFileSync(join(INFRA, "plan", "index.ts"), "utf8");
    expect(index.match(/\bworkloadInput\(/g)).toHaveLength(1);
    expect(index.match(/\bscalingInput\(/g)).toHaveLength(1);
    for (const f of tsFiles(join(INFRA, "plan")).filter((x) => !x.endsWith("index.ts")))
      expect(readFileSync(f, "utf8"), relative(ROOT, f)).not.toMatch(/(?<!function )\b(workloadInput|scalingInput)\(/);
  });

  it("keeps Pulumi out of the pure folders", () => {
    for (const f of files.filter((x) =>
      /infra\/(config|conventions|resolve|plan|render|model|catalog|synth|cloud|cost)\//.test(x),
    )) {
      expect(readFileSync(f, "utf8"), relative(ROOT, f)).not.toMatch(/from "@pulumi\//);
    }
  });

  it("reads the stack's config through Pulumi in infra/loader.ts only; config/ parses without the engine", () => {
    const config = files.filter((x) => x.includes("/infra/config/"));
    expect(config.length).toBeGreaterThan(10);
    expect(config.filter((f) => /from "@pulumi\//.test(readFileSync(f, "utf8"))).map((f) => relative(ROOT, f))).toEqual(
      [],
    );
    const readers = files.filter((f) => /new pulumi\.Config\(PROJECT\)/.test(readFileSync(f, "utf8")));
    expect(readers.map((f) => relative(ROOT, f))).toEqual(["infra/loader.ts"]);
  });

  it("keeps components/ to ComponentResources: pure helpers live in the pure folders", () => {
    const components = files.filter((x) => x.includes("/infra/components/"));
    expect(components.length).toBeGreaterThan(5);
    const pure = components.filter(
      (f) => !/export class \w+ extends pulumi\.ComponentResource\b/.test(readFileSync(f, "utf8")),
    );
    expect(pure.map((f) => relative(ROOT, f))).toEqual([]);
  });

  it("documents every field of a component's Args and makes it readonly", () => {
    const fields: string[] = [];
    const offenders: string[] = [];
    for (const f of files.filter((x) => x.includes("/infra/components/"))) {
      const text = readFileSync(f, "utf8");
      const source = ts.createSourceFile(f, text, ts.ScriptTarget.Latest, true);
      for (const node of source.statements) {
        if (!ts.isInterfaceDeclaration(node) || !node.name.text.endsWith("Args")) continue;
        for (const member of node.members) {
          if (!ts.isPropertySignature(member)) continue;
          const name = `${relative(ROOT, f)} ${node.name.text}.${member.name.getText(source)}`;
          fields.push(name);
          const readonly = member.modifiers?.some((m) => m.kind === ts.SyntaxKind.ReadonlyKeyword) ?? false;
          const documented = (ts.getLeadingCommentRanges(text, member.pos) ?? []).some((r) =>
            text.slice(r.pos, r.end).startsWith("/**"),
          );
          if (!readonly) offenders.push(`${name}: not readonly`);
          if (!documented) offenders.push(`${name}: no JSDoc comment`);
        }
      }
    }
    expect(fields.length).toBeGreaterThan(40);
    expect(offenders).toEqual([]);
  });

  it("states the default of every optional field of a component's Args (@default)", () => {
    const optional: string[] = [];
    const offenders: string[] = [];
    for (const f of files.filter((x) => x.includes("/infra/components/"))) {
      const source = ts.createSourceFile(f, readFileSync(f, "utf8"), ts.ScriptTarget.Latest, true);
      // The Args interface's fields and the fields of the object types written inline in them.
      const visit = (members: ts.NodeArray<ts.TypeElement>, owner: string): void => {
        for (const member of members) {
          if (!ts.isPropertySignature(member)) continue;
          const name = `${owner}.${member.name.getText(source)}`;
          if (member.questionToken) {
            optional.push(name);
            if (!ts.getJSDocTags(member).some((t) => t.tagName.text === "default")) offenders.push(name);
          }
          if (member.type && ts.isTypeLiteralNode(member.type)) visit(member.type.members, name);
        }
      };
      for (const node of source.statements)
        if (ts.isInterfaceDeclaration(node) && node.name.text.endsWith("Args"))
          visit(node.members, `${relative(ROOT, f)} ${node.name.text}`);
    }
    expect(optional.length).toBeGreaterThan(10);
    expect(offenders).toEqual([]);
  });

  it("states the default of every optional config key: a zod default or unsetMeans(), shown in the config reference", () => {
    const schema = z.toJSONSchema(configSchema, { io: "input", unrepresentable: "any" }) as JsonSchema;
    const optional: string[] = [];
    const offenders: string[] = [];
    const visit = (s: JsonSchema, key: string): void => {
      for (const alt of s.anyOf ?? []) visit(alt, key);
      if (s.items) visit(s.items, `${key}[]`);
      if (typeof s.additionalProperties === "object") visit(s.additionalProperties, `${key}.<name>`);
      const required = new Set(s.required ?? []);
      for (const [field, fs] of Object.entries(s.properties ?? {})) {
        const path = key ? `${key}.${field}` : field;
        if (!required.has(field)) {
          optional.push(path);
          if (fs.default === undefined && !fs[STATED_DEFAULT]) offenders.push(path);
        }
        visit(fs, path);
      }
    };
    visit(schema, "");
    expect(optional.length).toBeGreaterThan(60);
    expect(offenders).toEqual([]);
    // What the reference shows: every row's default cell holds a value, words or `required`, never `-`.
    const rows = configReference()
      .split("\n")
      .filter((r) => r.startsWith("| `"));
    expect(rows.filter((r) => r.split(" | ")[2] === "-")).toEqual([]);
  });

  /**
   * Old paths still named in text a live stack hashes, with the file's path now: the model repository's header
   * (plan/modelRepository.ts HEADER) and images/server/python/tritonft/params.py are inside the bake step's input
   * hash, so rewording them would re-bake and roll every model of every live stack.
   */
  const FROZEN_NAMES = new Map([["infra/render/modelRepository.ts", "infra/plan/modelRepository.ts"]]);

  it("names only files that exist when the code points at another file", () => {
    const roots = ["infra", "scripts", "policy", "images/server", "images/gateway/src", "images/triton_with_ft"];
    const sources = roots
      .flatMap((r) => allFiles(join(ROOT, r)))
      .filter((f) => /\.(ts|sh|py|mjs)$|Dockerfile$/.test(f));
    expect(sources.length).toBeGreaterThan(50);
    const missing: string[] = [];
    for (const f of sources) {
      for (const m of readFileSync(f, "utf8").matchAll(
        /\b((?:infra|scripts|images|policy|test)\/[\w./-]+\.(?:ts|sh|py|bats|bash|json|yaml))\b/g,
      )) {
        const ref = m[1] ?? "";
        const now = FROZEN_NAMES.get(ref) ?? ref;
        if (!existsSync(join(ROOT, now))) missing.push(`${relative(ROOT, f)}: ${ref}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it("points only at documentation sections that exist", () => {
    // Headings per page: README.md and every docs/*.md (in code blocks too: harmless).
    const pages = ["README.md", ...readdirSync(join(ROOT, "docs")).map((f) => `docs/${f}`)].filter((p) =>
      p.endsWith(".md"),
    );
    const headingsOf = new Map(
      pages.map((p) => [
        p,
        new Set([...readFileSync(join(ROOT, p), "utf8").matchAll(/^#+ (.+)$/gm)].map((m) => m[1]?.trim())),
      ]),
    );
    // The remote scripts' messages and the stack files' comments name sections too.
    const shellAndStacks = [
      ...allFiles(join(ROOT, "scripts")).filter((f) => f.endsWith(".sh")),
      ...readdirSync(ROOT)
        .filter((f) => /^Pulumi\.\w+\.yaml$/.test(f))
        .map((f) => join(ROOT, f)),
    ];
    const sources = [...files, ...tsFiles(join(ROOT, "scripts")), ...tsFiles(join(ROOT, "test")), ...shellAndStacks];
    // docs/operating.md is the map of the sections it held before the split: a section its table names
    // is found there (a live stack's hashed script still points at it).
    const operatingMap = readFileSync(join(ROOT, "docs", "operating.md"), "utf8");
    const mapped = (section: string) =>
      operatingMap.includes(`| ${section} |`) || operatingMap.includes(`| ↳ ${section} |`);
    const missing: string[] = [];
    let refs = 0;
    for (const f of sources.filter((x) => !x.endsWith("architecture.test.ts"))) {
      const text = readFileSync(f, "utf8");
      // `docs/<page>.md "<Section>"` / `docs/<page>.md, "<Section>"` / `docs/<page>.md "<A>" and "<B>"` (the quotes
      // escaped inside a shell string); the older `README, "<Section>"` resolves in README or any docs page.
      for (const m of text.matchAll(/(README|docs\/[\w.-]+\.md),? \(?((?:\\?"[^"\\]+\\?"(?:,? (?:and|or) )?)+)/g)) {
        const page = m[1] ?? "";
        const candidates = page === "README" ? pages : [page];
        for (const s of (m[2] ?? "").matchAll(/"([^"\\]+)\\?"/g)) {
          refs++;
          const found = candidates.some((p) => headingsOf.get(p)?.has(s[1]));
          if (!found && !(page === "docs/operating.md" && mapped(s[1] ?? "")))
            missing.push(`${relative(ROOT, f)}: ${page} "${s[1]}"`);
        }
      }
    }
    expect(refs).toBeGreaterThan(3);
    expect(missing).toEqual([]);
  });
});
