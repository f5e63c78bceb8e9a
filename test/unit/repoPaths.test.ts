/**
 * Every repository path the project names, in its pages (README.md, docs/,
 * diagrams included) and in its code's comments, exists: a file renamed or
 * removed leaves no stale pointer behind. Full paths (`infra/render/scaling.ts`,
 * `test/k8s/`) and paths relative to infra/ (`render/scaling.ts`,
 * `plan/stack.ts`) are both resolved. Paths that name other projects' files
 * (FasterTransformer's guides, Kubernetes API groups, AWS managed policies)
 * are listed below with why; nothing else is skipped.
 */
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, readdirSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = resolve(__dirname, "..", "..");

/** Text that looks like a repository path but names something else, with what it names. */
const NOT_OURS: ReadonlyArray<[RegExp, string]> = [
  [/^docs\/(gpt|gptj|gptneox)_guide\.md$/, "FasterTransformer's own guides (upstream repository)"],
  [/^docs\/install\/iam_policy(\.json)?$/, "the AWS Load Balancer Controller's published policy (upstream repository)"],
  [/^policy\/v1$/, "the Kubernetes API group policy/v1 (PodDisruptionBudget)"],
  [/^policy\/(Amazon|AWS|Administrator)\w*$/, "an AWS managed policy ARN's name"],
  [/^policy\/mine$/, "a customer-managed policy ARN in a test"],
  [/^infra\/prod$/, "a Pulumi stack name in a test"],
  [/^test\/unit\/[ax]\.test\.ts$|^docs\/a\.md$/, "made-up paths a test feeds to the affected-stacks filter"],
  [/^test\/triton\/Pulumi$/, "the prefix of a Pulumi.<stack>.yaml name"],
  [/^scripts\/convert\/nope\.py$/, "a missing helper a script test feeds to convert.sh on purpose"],
  [
    /^infra\/render\/modelRepository\.ts$/,
    "where the model repository's renderer lived when the live images were baked: the config.pbtxt header and a comment of the baked Python package still name it, since their text is in every live stack's bake hash (docs/architecture.md, Layers)",
  ],
];

const TOP = ["infra", "scripts", "images", "policy", "test", "docs", ".github", ".ci"];

function tracked(): string[] {
  return execFileSync("git", ["ls-files"], { cwd: ROOT, encoding: "utf8" }).split("\n").filter(Boolean);
}

/** Pages and code whose text may name repository paths; data, lockfiles and goldens are not prose. */
function sources(files: readonly string[]): string[] {
  return files.filter(
    (f) =>
      (/\.(md|ts|mts|mjs|sh|bats|py|yml|yaml)$|Dockerfile$/.test(f) || f === ".ci/run") &&
      !f.startsWith("test/data/") &&
      !f.includes("/golden/") &&
      !f.startsWith("infra/data/") &&
      !f.endsWith(".lock") &&
      // Its own self-check names stale paths on purpose.
      f !== "test/unit/repoPaths.test.ts" &&
      // The architecture test's own self-checks name made-up files.
      f !== "test/unit/architecture.test.ts" &&
      existsSync(join(ROOT, f)),
  );
}

/** Every repository path a text names: full, or relative to infra/ (its folders, with a file name). */
export function namedPaths(text: string, infraFolders: readonly string[]): string[] {
  const full = new RegExp(`(?<![\\w/.@-])((?:${TOP.map((t) => t.replace(".", "\\.")).join("|")})/[\\w.\\-/]+)`, "g");
  const rel = new RegExp(`(?<![\\w/.@-])((?:${infraFolders.join("|")})/[\\w.\\-]+\\.(?:ts|json))`, "g");
  const out: string[] = [];
  for (const m of text.matchAll(full)) {
    const p = (m[1] ?? "").replace(/[.,:;)]+$/, "");
    // Placeholders and globs (`models/<id>/`, `*.lock`) are patterns, not paths.
    if (/[<>*{}]/.test(text.slice(m.index ?? 0, (m.index ?? 0) + (m[0]?.length ?? 0) + 1)) || p.endsWith("-")) continue;
    out.push(p);
  }
  for (const m of text.matchAll(rel)) out.push(`infra/${m[1] ?? ""}`);
  return out;
}

describe("repository paths named in pages, diagrams and comments", () => {
  const infraFolders = readdirSync(join(ROOT, "infra")).filter((d) => statSync(join(ROOT, "infra", d)).isDirectory());

  it("all exist (paths of other projects listed with why)", () => {
    const files = sources(tracked());
    expect(files.length).toBeGreaterThan(200);
    const stale: string[] = [];
    let named = 0;
    for (const f of files) {
      for (const p of namedPaths(readFileSync(join(ROOT, f), "utf8"), infraFolders)) {
        named++;
        if (existsSync(join(ROOT, p))) continue;
        // An infra-relative match inside a full path of another tree (`test/k8s/stacks.ts` is not infra's).
        if (p.startsWith("infra/") && existsSync(join(ROOT, p.slice("infra/".length)))) continue;
        if (NOT_OURS.some(([re]) => re.test(p))) continue;
        stale.push(`${f}: ${p}`);
      }
    }
    expect(named).toBeGreaterThan(500);
    expect([...new Set(stale)]).toEqual([]);
  });

  it("finds a stale one (self-check): a renamed file, full or relative to infra/", () => {
    const text = "see infra/render/k8sGateway.ts and render/k8s.ts, `docs/testing.md`; not models/<id>/k8s/";
    const paths = namedPaths(text, infraFolders);
    expect(paths).toEqual(["infra/render/k8sGateway.ts", "docs/testing.md", "infra/render/k8s.ts"]);
    expect(paths.filter((p) => !existsSync(join(ROOT, p)))).toHaveLength(3);
  });
});
