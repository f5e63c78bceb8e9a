/**
 * The project's Python helpers a step runs, plus every helper they import
 * (transitively): editing `hf_checkpoint.py`, which the consolidate and
 * re-layout helpers import, must re-run the convert step like editing the
 * helpers themselves. Pure: the caller supplies a reader for repo files.
 */

/** Top-level module names a Python source imports (`import a, b.c` → a, b; `from d.e import f` → d). Relative imports are skipped. */
export function importedModules(source: string): string[] {
  const out = new Set<string>();
  for (const raw of source.split(/\r?\n/)) {
    const line = raw.replace(/#.*$/, "").trim();
    const from = /^from\s+([A-Za-z_][\w.]*)\s+import\b/.exec(line);
    if (from?.[1]) out.add(from[1].split(".")[0] as string);
    const imp = /^import\s+(.+)$/.exec(line);
    if (imp?.[1]) {
      for (const part of imp[1].split(",")) {
        const name = part.trim().split(/\s+/)[0]?.split(".")[0];
        if (name && /^[A-Za-z_]\w*$/.test(name)) out.add(name);
      }
    }
  }
  return [...out].sort();
}

/**
 * `entries` (repo-relative .py paths) and the helpers of the same folder they
 * import, transitively; sorted. `read` returns a file's text, or undefined when
 * it does not exist (standard-library and third-party modules have no file).
 */
export function importClosure(entries: readonly string[], read: (repoPath: string) => string | undefined): string[] {
  const seen = new Set<string>();
  const queue = [...entries];
  while (queue.length > 0) {
    const file = queue.shift() as string;
    if (seen.has(file)) continue;
    const text = read(file);
    if (text === undefined) throw new Error(`helper script ${file} does not exist`);
    seen.add(file);
    const dir = file.includes("/") ? file.slice(0, file.lastIndexOf("/")) : ".";
    for (const mod of importedModules(text)) {
      const candidate = `${dir}/${mod}.py`;
      if (!seen.has(candidate) && read(candidate) !== undefined) queue.push(candidate);
    }
  }
  return [...seen].sort();
}
