/**
 * This repository's files as the build sees them: the git-tracked files of a
 * folder are both what a step's input hash covers and what is shipped to the
 * builder, computed by one function (`treeEntries`). An untracked file, a
 * node_modules or __pycache__ folder, an editor backup: none of them is hashed
 * or shipped, so the hash names exactly the bytes the builder gets.
 *
 * `repoPathHasher` is the `PathHasher` the composition roots (infra/program.ts,
 * scripts/synth.ts) inject into the plan, which itself never touches the file
 * system; `stageTree` writes the shipped copy of a folder.
 */
import { execFileSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { sha256 } from "./plan/hash";
import type { PathHasher } from "./plan/stepGraph";

/** Where shipped trees are staged, under the repository root (git-ignored). */
export const STAGE_DIR = ".ship";

/** One file of a tree: its path relative to the tree's folder, and its content hash. */
export type TreeEntry = [path: string, sha256: string];

/** Repo-relative paths of the tracked files under `rel`, sorted; a tracked file deleted in the work tree is left out. */
export function trackedFiles(root: string, rel: string): string[] {
  let out: string;
  try {
    out = execFileSync("git", ["-C", root, "ls-files", "-z", "--", rel], { encoding: "utf8" });
  } catch (err) {
    throw new Error(
      `cannot list the git-tracked files of ${rel} under ${root} (${(err as Error).message.split("\n")[0]}): the build ships and hashes tracked files only, so it needs a git checkout`,
      { cause: err },
    );
  }
  return out
    .split("\0")
    .filter((p) => p.length > 0 && existsSync(join(root, p)) && statSync(join(root, p)).isFile())
    .sort();
}

/** The tracked files of the folder `rel`, relative to it, with their hashes: what is hashed and what is shipped. */
export function treeEntries(root: string, rel: string): TreeEntry[] {
  const prefix = `${rel.replace(/\/+$/, "")}/`;
  return trackedFiles(root, rel).map((p) => [p.slice(prefix.length), sha256(readFileSync(join(root, p)))]);
}

/** The hash of a tree's entries (sorted by path): the step hashes' and synth's inventory's folder hash. */
export function treeHash(entries: readonly TreeEntry[]): string {
  return sha256(JSON.stringify([...entries].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))));
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
    const h = st.isDirectory() ? treeHash(treeEntries(root, rel)) : sha256(readFileSync(abs));
    cache.set(rel, h);
    return h;
  };
}

/**
 * A copy of the folder `rel` holding exactly its tracked files, at
 * `<root>/.ship/<tree hash>/<folder name>`: the copy's folder keeps the
 * tree's name (the builder receives it under that name), and its path changes
 * only when the content does. Written once per content, atomically (a rename),
 * so concurrent runs never see half a tree.
 */
export function stageTree(root: string, rel: string): string {
  const entries = treeEntries(root, rel);
  const hash = treeHash(entries).slice(0, 16);
  const parent = join(root, STAGE_DIR, hash);
  const target = join(parent, basename(rel));
  if (existsSync(target)) return target;
  const tmp = join(root, STAGE_DIR, `.tmp-${process.pid}-${hash}`);
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  for (const [path] of entries) {
    const dest = join(tmp, path);
    mkdirSync(dirname(dest), { recursive: true });
    copyFileSync(join(root, rel, path), dest);
  }
  mkdirSync(parent, { recursive: true });
  try {
    renameSync(tmp, target);
  } catch (err) {
    rmSync(tmp, { recursive: true, force: true });
    if (!existsSync(target)) throw err; // another run staged the same content first
  }
  return target;
}

/** The repository root, from this module's location (infra/). */
export const REPO_ROOT = resolve(__dirname, "..");
