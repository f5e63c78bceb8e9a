/**
 * Which stacks a change can affect, for the preview workflow's matrix.
 *
 *   tsx scripts/ci/affected-stacks.ts --base <sha> [--head <sha>]   stacks touched by base...head
 *   tsx scripts/ci/affected-stacks.ts --all                          every stack with a Pulumi.<stack>.yaml
 *
 * Prints a JSON array of stack names (the `stacks` output the workflow feeds
 * to `fromJSON`), and the reason on stderr. A stack file change previews that
 * stack; a change to anything the program reads (infra/, scripts/, images/,
 * policy/, the lockfile, Pulumi.yaml...) previews all; changes that cannot
 * alter a deployment (docs, tests, CI definitions) preview none.
 */
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";

const STACK_FILE = /^Pulumi\.([A-Za-z0-9_.-]+)\.yaml$/;

/** Paths that never change what `pulumi up` does. Everything else is treated as program input. */
const NO_DEPLOY_IMPACT: RegExp[] = [
  /(^|\/)[^/]+\.md$/,
  /^LICENSE$/,
  /^test\//,
  /^\.github\//,
  /^\.ci\//,
  /^\.gitignore$/,
  /^\.prettier(rc|ignore)/,
  /^eslint\.config\.mjs$/,
  /^vitest\.config\.mts$/,
];

export interface Affected {
  stacks: string[];
  reason: string;
}

export function affectedStacks(changedFiles: readonly string[], allStacks: readonly string[]): Affected {
  const shared = changedFiles.filter((f) => !STACK_FILE.test(f) && !NO_DEPLOY_IMPACT.some((re) => re.test(f)));
  if (shared.length) {
    const shown = shared.slice(0, 5).join(", ") + (shared.length > 5 ? `, … ${shared.length - 5} more` : "");
    return { stacks: [...allStacks].sort(), reason: `shared code or config changed (${shown}): every stack` };
  }
  const touched = new Set<string>();
  for (const f of changedFiles) {
    const m = STACK_FILE.exec(f);
    if (m && allStacks.includes(m[1])) touched.add(m[1]);
  }
  const stacks = [...touched].sort();
  return {
    stacks,
    reason: stacks.length ? `stack files changed: ${stacks.join(", ")}` : "no change that affects a deployment",
  };
}

export function listStacks(root: string): string[] {
  return fs
    .readdirSync(root)
    .map((f) => STACK_FILE.exec(f)?.[1])
    .filter((s): s is string => s !== undefined)
    .sort();
}

function main(argv: string[]): number {
  const root = path.resolve(__dirname, "../..");
  const stacks = listStacks(root);
  const arg = (name: string) => {
    const i = argv.indexOf(name);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  let result: Affected;
  if (argv.includes("--all")) {
    result = { stacks, reason: "every stack" };
  } else {
    const base = arg("--base");
    if (!base) {
      console.error("usage: affected-stacks.ts --base <sha> [--head <sha>] | --all");
      return 2;
    }
    const head = arg("--head") ?? "HEAD";
    const diff = execFileSync("git", ["diff", "--name-only", `${base}...${head}`], { cwd: root, encoding: "utf8" });
    result = affectedStacks(diff.split("\n").filter(Boolean), stacks);
  }
  console.error(`affected stacks: ${result.reason}`);
  console.log(JSON.stringify(result.stacks));
  return 0;
}

if (require.main === module) process.exitCode = main(process.argv.slice(2));
