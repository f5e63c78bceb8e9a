/**
 * What is shipped to the builder is exactly what the step hashes cover: the
 * git-tracked files of each tree. An untracked file, a node_modules folder or
 * a __pycache__ in the work tree changes neither the step hashes, nor the
 * staged copy that CopyToRemote sends, nor synth's inventory hash of it.
 */
import { execFileSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { hashDirectory } from "../../infra/mock/inventory";
import { REPO_ROOT, repoPathHasher, stageTree, trackedFiles, treeEntries, treeHash } from "../../infra/repoFiles";
import { SHIPPED_TREES } from "../../infra/plan/stepGraph";

const TREE = "scripts/convert";
let root = "";

const git = (...args: string[]) => execFileSync("git", ["-C", root, ...args], { stdio: "pipe" });

function listAll(dir: string, rel = ""): string[] {
  return readdirSync(join(dir, rel), { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? listAll(dir, `${rel}${e.name}/`) : [`${rel}${e.name}`],
  );
}

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), "shipped-"));
  cpSync(join(REPO_ROOT, TREE), join(root, TREE), { recursive: true });
  git("init", "-q");
  git("add", TREE);
  git("-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "tree");
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

function litter(): void {
  writeFileSync(join(root, TREE, "junk.txt"), "not tracked\n");
  mkdirSync(join(root, TREE, "node_modules", "left-pad"), { recursive: true });
  writeFileSync(join(root, TREE, "node_modules", "left-pad", "index.js"), "module.exports = 1;\n");
  mkdirSync(join(root, TREE, "__pycache__"), { recursive: true });
  writeFileSync(join(root, TREE, "__pycache__", "x.cpython-38.pyc"), "\0\0");
}

describe("shipped trees are the tracked files, hashed and shipped alike", () => {
  it("untracked files, node_modules and __pycache__ change neither the step hash, the staged copy nor the inventory hash", () => {
    const before = repoPathHasher(root)(TREE);
    const stagedBefore = stageTree(root, TREE);
    const inventoryBefore = hashDirectory(stagedBefore);
    litter();
    expect(repoPathHasher(root)(TREE)).toBe(before);
    const stagedAfter = stageTree(root, TREE);
    expect(stagedAfter).toBe(stagedBefore);
    expect(hashDirectory(stagedAfter)).toEqual(inventoryBefore);
    const shipped = listAll(stagedAfter);
    expect(shipped.some((f) => /junk|node_modules|__pycache__/.test(f))).toBe(false);
  });

  it("the staged copy holds exactly the tracked files, and synth's inventory hash of it is the step hash of the tree", () => {
    litter();
    const staged = stageTree(root, TREE);
    const tracked = trackedFiles(root, TREE).map((p) => p.slice(TREE.length + 1));
    expect(listAll(staged).sort()).toEqual(tracked);
    expect(hashDirectory(staged)).toEqual({ files: tracked.length, sha256: repoPathHasher(root)(TREE) });
  });

  it("an edit to a tracked file, or a newly tracked file, changes the hash and the staged copy", () => {
    const before = repoPathHasher(root)(TREE);
    const stagedBefore = stageTree(root, TREE);
    writeFileSync(join(root, TREE, "new.py"), "print(1)\n");
    git("add", TREE);
    expect(repoPathHasher(root)(TREE)).not.toBe(before);
    expect(stageTree(root, TREE)).not.toBe(stagedBefore);
  });

  it("each tree of this repository is shipped under its own name, from the same entries its hash covers", () => {
    for (const t of SHIPPED_TREES) {
      const staged = stageTree(REPO_ROOT, t.local);
      expect(staged.endsWith(`/${t.local.split("/").pop() ?? ""}`)).toBe(true);
      expect(hashDirectory(staged).sha256).toBe(treeHash(treeEntries(REPO_ROOT, t.local)));
    }
  });
});
