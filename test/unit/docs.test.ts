/**
 * The documentation pages: README.md is the entry page and docs/*.md hold the rest (see
 * docs/development.md "Generated documentation"). Every page opens with a table of contents, every
 * relative link points at a file and heading that exist, and the module -> test table of
 * docs/development.md names only files that exist.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, normalize } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = join(__dirname, "..", "..");
const PAGES = [
  "README.md",
  ...readdirSync(join(ROOT, "docs"))
    .filter((f) => f.endsWith(".md"))
    .map((f) => `docs/${f}`),
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

describe("documentation pages", () => {
  it("are README.md and the pages by audience", () => {
    for (const page of [
      "operating",
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
});
