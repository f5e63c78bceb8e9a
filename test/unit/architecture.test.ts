/**
 * The layout docs/architecture.md promises, checked on the code: no
 * import cycles between infra/'s folders (each top-level file counts as its
 * own node; type-only imports do not count, they vanish at run time: the
 * renderers name the plan's types without running plan code), and the plan's
 * one entry point is called once per composition root. The eslint boundaries (eslint.config.mjs) keep Pulumi out of the pure
 * layers; this test catches what a per-file rule cannot: a cycle.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

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

/**
 * infra/plan/steps.ts -> "plan"; infra/naming.ts -> "naming.ts". config/ is
 * not one layer: its schema, types and rule helpers sit below the plan (the
 * plan reads them), its validator above it (it plans the workload to check
 * that the pods fit) and its loader above that (Pulumi). So
 * infra/config/validate/* -> "config/validate", infra/config/loader.ts ->
 * "config/loader.ts", every other file of config/ -> "config".
 */
function nodeOf(file: string): string {
  const rel = relative(INFRA, file).split("/");
  if (rel[0] === "config" && rel[1] === "validate") return "config/validate";
  if (rel[0] === "config" && rel[1] === "loader.ts") return "config/loader.ts";
  return rel[0] ?? "";
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

/** The module specifiers a file imports or re-exports at run time: `import type` and all-`type` lists left out. */
function runtimeImports(file: string): string[] {
  const source = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.Latest);
  const specs: string[] = [];
  for (const node of source.statements) {
    if (ts.isImportDeclaration(node)) {
      const clause = node.importClause;
      const bindings = clause?.namedBindings;
      const typeOnly =
        clause !== undefined &&
        (clause.isTypeOnly ||
          (!clause.name &&
            bindings !== undefined &&
            ts.isNamedImports(bindings) &&
            bindings.elements.length > 0 &&
            bindings.elements.every((e) => e.isTypeOnly)));
      if (!typeOnly && ts.isStringLiteral(node.moduleSpecifier)) specs.push(node.moduleSpecifier.text);
    } else if (ts.isExportDeclaration(node) && !node.isTypeOnly && node.moduleSpecifier) {
      if (ts.isStringLiteral(node.moduleSpecifier)) specs.push(node.moduleSpecifier.text);
    }
  }
  return specs;
}

/** Edges between nodes, each with one example import that makes it. */
function folderGraph(files: string[]): Map<string, Map<string, string>> {
  const graph = new Map<string, Map<string, string>>();
  for (const file of files) {
    const from = nodeOf(file);
    for (const spec of runtimeImports(file)) {
      const target = resolveImport(file, spec);
      if (!target || !target.startsWith(INFRA)) continue;
      const to = nodeOf(target);
      if (to === from) continue;
      const edges = graph.get(from) ?? new Map<string, string>();
      if (!edges.has(to)) edges.set(to, `${relative(ROOT, file)} imports ${spec}`);
      graph.set(from, edges);
    }
  }
  return graph;
}

/** Every cycle's path, as the example imports that close it. */
function cycles(graph: Map<string, Map<string, string>>): string[][] {
  const found: string[][] = [];
  const state = new Map<string, "visiting" | "done">();
  const stack: string[] = [];
  const visit = (n: string) => {
    state.set(n, "visiting");
    stack.push(n);
    for (const [to, why] of graph.get(n) ?? []) {
      if (state.get(to) === "visiting") {
        const loop = stack.slice(stack.indexOf(to));
        found.push(loop.map((x, i) => graph.get(x)?.get(loop[i + 1] ?? to) ?? why));
      } else if (!state.has(to)) visit(to);
    }
    stack.pop();
    state.set(n, "done");
  };
  for (const n of [...graph.keys()].sort()) if (!state.has(n)) visit(n);
  return found;
}

describe("architecture", () => {
  const files = tsFiles(INFRA);

  it("has no import cycles between infra/'s folders", () => {
    expect(files.length).toBeGreaterThan(30);
    expect(cycles(folderGraph(files))).toEqual([]);
  });

  it("finds a cycle when there is one (self-check of the detector)", () => {
    const graph = new Map([
      ["plan", new Map([["render", "plan imports render"]])],
      ["render", new Map([["plan", "render imports plan"]])],
    ]);
    expect(cycles(graph)).toEqual([["plan imports render", "render imports plan"]]);
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
    for (const f of files.filter((x) => /infra\/(plan|render|model|catalog|synth|cloud)\//.test(x))) {
      expect(readFileSync(f, "utf8"), relative(ROOT, f)).not.toMatch(/from "@pulumi\//);
    }
  });

  it("reads config through Pulumi in config/loader.ts only", () => {
    const config = files.filter((x) => x.includes("/infra/config/"));
    expect(config.length).toBeGreaterThan(10);
    const withPulumi = config.filter((f) => /from "@pulumi\//.test(readFileSync(f, "utf8")));
    expect(withPulumi.map((f) => relative(ROOT, f))).toEqual(["infra/config/loader.ts"]);
  });

  it("keeps config/'s public entry point free of the validator and the loader", () => {
    // Every layer imports infra/config (index.ts); re-exporting config/validate
    // would make the plan import itself, config/loader would bring Pulumi in.
    const index = ts.preProcessFile(readFileSync(join(INFRA, "config", "index.ts"), "utf8"), true, true);
    const targets = index.importedFiles.map((r) => r.fileName);
    expect(targets.length).toBeGreaterThan(0);
    expect(targets.filter((t) => /validate|loader/.test(t))).toEqual([]);
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
        if (!existsSync(join(ROOT, ref))) missing.push(`${relative(ROOT, f)}: ${ref}`);
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
    const sources = [...files, ...tsFiles(join(ROOT, "scripts")), ...tsFiles(join(ROOT, "test"))];
    const missing: string[] = [];
    let refs = 0;
    for (const f of sources.filter((x) => !x.endsWith("architecture.test.ts"))) {
      const text = readFileSync(f, "utf8");
      // `docs/<page>.md "<Section>"` / `docs/<page>.md, "<Section>"` / `docs/<page>.md "<A>" and "<B>"`; the
      // older `README, "<Section>"` resolves in README or any docs page (the sections moved there).
      for (const m of text.matchAll(/(README|docs\/[\w.-]+\.md),? \(?((?:"[^"]+"(?:,? (?:and|or) )?)+)/g)) {
        const page = m[1] ?? "";
        const candidates = page === "README" ? pages : [page];
        for (const s of (m[2] ?? "").matchAll(/"([^"]+)"/g)) {
          refs++;
          if (!candidates.some((p) => headingsOf.get(p)?.has(s[1])))
            missing.push(`${relative(ROOT, f)}: ${page} "${s[1]}"`);
        }
      }
    }
    expect(refs).toBeGreaterThan(3);
    expect(missing).toEqual([]);
  });
});
