/**
 * The documentation pages: README.md is the entry page and docs/*.md hold the rest (see
 * docs/development.md "Generated documentation"). Every page opens with a table of contents, every
 * relative link points at a file and heading that exist, the module -> test table of
 * docs/development.md names only files that exist, and each picture is drawn once (the other pages
 * link to it, so two copies cannot drift). Paths named in prose, diagrams and comments:
 * test/unit/repoPaths.test.ts.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, normalize } from "node:path";
import { describe, expect, it } from "vitest";
import { GPU_FAMILIES, GPU_MODELS } from "../../infra/catalog/gpus";
import { MODEL_PRESETS } from "../../infra/model/catalog";

const ROOT = join(__dirname, "..", "..");
/** README.md, docs/*.md and the pages one folder down (docs/extending/). */
const PAGES = [
  "README.md",
  ...readdirSync(join(ROOT, "docs"), { withFileTypes: true }).flatMap((e) =>
    e.isDirectory()
      ? readdirSync(join(ROOT, "docs", e.name))
          .filter((f) => f.endsWith(".md"))
          .map((f) => `docs/${e.name}/${f}`)
      : e.name.endsWith(".md")
        ? [`docs/${e.name}`]
        : [],
  ),
];

function read(page: string): string {
  return readFileSync(join(ROOT, page), "utf8");
}

/** The text outside fenced code blocks. */
function prose(text: string): string {
  return text.replace(/^```[\s\S]*?^```$/gm, "");
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens, duplicates numbered. */
function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const m of prose(text).matchAll(/^#{1,6} (.+)$/gm)) {
    const base = (m[1] ?? "")
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}_\- ]/gu, "")
      .replace(/ /g, "-");
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n ? `${base}-${n}` : base);
  }
  return out;
}

/** A node's label: its text up to the first line break, lower case; the id when it has none. */
function nodeLabels(diagram: string): Map<string, string> {
  const labels = new Map<string, string>();
  for (const m of diagram.matchAll(/\b([A-Za-z]\w*)\s*(?:\[\(|\(\[|\[\[|\[|\(\(|\(|\{)"?([^\])}"]+)/g)) {
    const [, id = "", text = ""] = m;
    if (!labels.has(id)) labels.set(id, (text.split("<br/>")[0] ?? "").trim().toLowerCase());
  }
  return labels;
}

/** A flowchart's edges by node label (`host-ready -> fetch`): ids are local, labels are what a reader sees. */
export function diagramEdges(diagram: string): Set<string> {
  const labels = nodeLabels(diagram);
  const edges = new Set<string>();
  for (const line of diagram.split("\n")) {
    const m = /^\s*([A-Za-z]\w*)\b.*?-->\s*(?:\|[^|]*\|\s*)?([A-Za-z]\w*)/.exec(line);
    if (m) edges.add(`${labels.get(m[1] ?? "") ?? m[1]} -> ${labels.get(m[2] ?? "") ?? m[2]}`);
  }
  return edges;
}

describe("documentation pages", () => {
  it("are README.md and the pages by audience", () => {
    for (const page of [
      "operating",
      "build",
      "serving",
      "scaling",
      "operations",
      "config-reference",
      "consuming",
      "outputs",
      "architecture",
      "security",
      "delivery",
      "development",
    ])
      expect(PAGES).toContain(`docs/${page}.md`);
  });

  it("give each extension point its page, linked from docs/development.md", () => {
    const development = read("docs/development.md");
    for (const page of ["gpu-family", "model", "build-step", "gateway-route", "cost-line"]) {
      expect(PAGES).toContain(`docs/extending/${page}.md`);
      expect(development).toContain(`(extending/${page}.md)`);
    }
  });

  it("each open with a table of contents that lists their sections", () => {
    for (const page of PAGES) {
      const text = prose(read(page));
      const head = text.slice(0, text.search(/^## /m));
      expect(head, page).toContain("Contents:");
      for (const m of text.matchAll(/^## (.+)$/gm)) expect(head, `${page}: ${m[1]}`).toContain(`[${m[1]}]`);
    }
  });

  it("link only to files and headings that exist", () => {
    const broken: string[] = [];
    for (const page of PAGES) {
      for (const m of prose(read(page)).matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = m[1] ?? "";
        if (/^[a-z]+:/.test(target)) continue; // https:, mailto:
        const [file, anchor] = target.split("#");
        const path = file ? normalize(join(dirname(page), file)) : page;
        if (!existsSync(join(ROOT, path))) {
          broken.push(`${page}: ${target} (no file ${path})`);
          continue;
        }
        if (anchor && path.endsWith(".md") && !anchors(read(path)).has(anchor))
          broken.push(`${page}: ${target} (no heading #${anchor} in ${path})`);
      }
    }
    expect(broken).toEqual([]);
  });

  it("name only modules and tests that exist in docs/development.md's module -> test table", () => {
    const text = read("docs/development.md");
    const start = text.indexOf("## Which test covers which module");
    const section = text.slice(start, text.indexOf("\n## ", start + 1));
    const rows = section.split("\n").filter((l) => /^\| `/.test(l) || /^\| [^-|]/.test(l));
    expect(rows.length).toBeGreaterThan(30);
    const missing: string[] = [];
    let paths = 0;
    for (const row of rows)
      for (const m of row.matchAll(/`((?:infra|scripts|images|policy|test|\.github)\/[^`]*)`/g)) {
        paths++;
        if (!existsSync(join(ROOT, m[1] ?? ""))) missing.push(m[1] ?? "");
      }
    expect(paths).toBeGreaterThan(60);
    expect(missing).toEqual([]);
  });

  it("draw each picture once: no two diagrams share more than one edge", () => {
    const diagrams = PAGES.flatMap((page) =>
      [...read(page).matchAll(/^```mermaid\n([\s\S]*?)^```$/gm)].map((m, i) => ({
        name: `${page} #${i + 1}`,
        edges: diagramEdges(m[1] ?? ""),
      })),
    );
    expect(diagrams.length).toBeGreaterThan(4);
    const twice: string[] = [];
    diagrams.forEach((a, i) =>
      diagrams.slice(i + 1).forEach((b) => {
        const shared = [...a.edges].filter((e) => b.edges.has(e));
        if (shared.length > 1) twice.push(`${a.name} and ${b.name}: ${shared.join(", ")}`);
      }),
    );
    expect(twice).toEqual([]);
  });

  it("tells two copies of a picture apart from two pictures (self-check)", () => {
    const picture = "flowchart LR\n  A[host-ready] --> B[fetch<br/>pinned]\n  B --> C[convert]\n";
    const redrawn = "flowchart LR\n  X[host-ready] --> Y[fetch]\n  Y -- weights --> Z[convert]\n";
    expect([...diagramEdges(picture)]).toEqual(["host-ready -> fetch", "fetch -> convert"]);
    expect(diagramEdges(redrawn)).toEqual(diagramEdges(picture));
  });

  it("list every catalog entry in the hand-written catalog tables of docs/config-reference.md", () => {
    const text = read("docs/config-reference.md");
    const section = (title: string) => {
      const start = text.indexOf(`\n## ${title}\n`);
      return text.slice(start, text.indexOf("\n## ", start + 1));
    };
    // A preset's row names it in backticks (`codegen-2b-mono` / `-multi` covers both flavours).
    const models = section("Model catalog");
    const missingPresets = MODEL_PRESETS.map((p) => p.name).filter((name) => {
      const [stem, flavour] = name.split(/-(?=mono$|multi$)/);
      return !models.includes(`\`${name}\``) && !(flavour && models.includes(`\`${stem}-mono\` / \`-multi\``));
    });
    expect(missingPresets).toEqual([]);
    const gpus = section("GPU catalog");
    const rows = gpus.split("\n").filter((l) => l.startsWith("| ") && !l.startsWith("| GPU"));
    expect(
      Object.keys(GPU_FAMILIES).filter(
        (f) =>
          !rows.some((r) =>
            r
              .split(" | ")[1]
              ?.split(/[ ,/]+/)
              .includes(f),
          ),
      ),
    ).toEqual([]);
    expect(Object.values(GPU_MODELS).filter((g) => !gpus.includes(String(g.memoryBandwidthGBps)))).toEqual([]);
  });
});
