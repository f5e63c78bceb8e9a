/**
 * Top-level keys of the stack's config namespace. Pulumi hands a program
 * every key of the stack file (`pulumi.runtime.allConfig()`), but a program
 * that reads only the keys it knows ignores the rest: `triton-ft:servng`, or
 * `triton-ft:serving.replicas` written by `pulumi config set` without
 * `--path` (one key with a dot in its name), would deploy the defaults
 * without a word. These functions find such keys and say how to fix them.
 *
 * Pure: the caller passes the key names. Values of unknown keys are never
 * shown: a secret typed under a misspelt key would otherwise be printed.
 */
import { didYouMean, type Problem } from "./issues";

/** The names under `<project>:` among all config keys (other namespaces, e.g. `aws:region`, are not ours). */
export function namespaceKeys(allKeys: Iterable<string>, project: string): string[] {
  const prefix = `${project}:`;
  return [...allKeys].filter((k) => k.startsWith(prefix)).map((k) => k.slice(prefix.length));
}

export interface KnownKeys {
  /** Top-level keys the program reads (objects, scalars and secrets). */
  topLevel: readonly string[];
  /** Keys inside each object-valued top-level key, for `--path` hints. */
  nested: (topLevel: string) => readonly string[];
}

/** One problem per unknown top-level key, with a did-you-mean and, for dotted names, the `--path` hint. */
export function unknownKeyProblems(keys: readonly string[], known: KnownKeys, project: string): Problem[] {
  const problems: Problem[] = [];
  for (const key of keys) {
    if (known.topLevel.includes(key)) continue;
    const full = `${project}:${key}`;
    const dot = key.indexOf(".");
    const head = dot > 0 ? key.slice(0, dot) : key;
    const headMatch = known.topLevel.includes(head) ? head : didYouMean(head, known.topLevel);
    if (dot > 0 && headMatch) {
      const rest = key.slice(dot + 1);
      const inner = known.nested(headMatch);
      const first = rest.split(".")[0] ?? rest;
      const innerMatch = inner.includes(first) ? first : didYouMean(first, inner);
      const intended = `${headMatch}.${innerMatch ? rest.replace(first, innerMatch) : rest}`;
      problems.push({
        key: full,
        value: undefined,
        hideValue: true,
        message:
          `is one key whose name contains a dot, so the program never reads it (\`pulumi config set\` without --path ` +
          `stores "${key}" as a single name, not as ${intended.split(".").join(" → ")})`,
        fix:
          `pulumi config rm ${full} && pulumi config set --path '${project}:${intended}' <value>` +
          (innerMatch || inner.length === 0 ? "" : `; keys of ${project}:${headMatch}: ${inner.join(", ")}`),
      });
      continue;
    }
    const near = didYouMean(key, known.topLevel);
    problems.push({
      key: full,
      value: undefined,
      hideValue: true,
      message: `is not a configuration key of this stack, so it would be ignored`,
      fix: `${near ? `did you mean ${project}:${near}? ` : ""}rename or remove it (pulumi config rm ${full}); keys: ${known.topLevel.join(", ")}`,
    });
  }
  return problems;
}
