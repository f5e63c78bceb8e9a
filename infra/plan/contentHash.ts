/**
 * Content hashes of strings and of repo files/folders, for the build steps'
 * input hashes. Folder hashes walk the tree in a stable order and cover names
 * and bytes, so a renamed, added or edited file changes the hash.
 */
import { createHash } from "node:crypto";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, resolve } from "node:path";

export function sha256(content: string | Buffer): string {
  return createHash("sha256").update(content).digest("hex");
}

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
export function repoPathHasher(root: string): (repoRelativePath: string) => string {
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

/** The repository root, from this module's location (infra/plan/). */
export const REPO_ROOT = resolve(__dirname, "..", "..");
