/**
 * Content hashes of this repository's files and folders: the `PathHasher` the
 * composition roots (infra/program.ts, scripts/synth.ts) inject into the plan,
 * which itself never touches the file system. Folder hashes walk the tree in a
 * stable order and cover names and bytes, so a renamed, added or edited file
 * changes the hash.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { sha256 } from "./plan/hash";
import type { PathHasher } from "./plan/stepGraph";

/** Files whose content never reaches a remote step (editor/cache litter). */
const IGNORED = /(^|\/)(__pycache__|\.pytest_cache|\.mypy_cache|node_modules)(\/|$)|\.pyc$|~$/;

function walk(abs: string, rel: string, out: Array<[string, string]>): void {
  for (const name of readdirSync(abs).sort()) {
    const childAbs = join(abs, name);
    const childRel = rel ? `${rel}/${name}` : name;
    if (IGNORED.test(childRel)) continue;
    const st = statSync(childAbs);
    if (st.isDirectory()) walk(childAbs, childRel, out);
    else if (st.isFile()) out.push([childRel, sha256(readFileSync(childAbs))]);
  }
}

/** A hasher for repo-relative paths under `root`; a missing path is an error, never a silent skip. */
export function repoPathHasher(root: string): PathHasher {
  const cache = new Map<string, string>();
  return (rel) => {
    const hit = cache.get(rel);
    if (hit) return hit;
    const abs = resolve(root, rel);
    let st;
    try {
      st = statSync(abs);
    } catch {
      throw new Error(`build step input ${rel} does not exist under ${root}`);
    }
    let h: string;
    if (st.isDirectory()) {
      const files: Array<[string, string]> = [];
      walk(abs, "", files);
      h = sha256(JSON.stringify(files));
    } else {
      h = sha256(readFileSync(abs));
    }
    cache.set(rel, h);
    return h;
  };
}

/** The repository root, from this module's location (infra/). */
export const REPO_ROOT = resolve(__dirname, "..");
