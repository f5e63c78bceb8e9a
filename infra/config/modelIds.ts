/**
 * The rule for the keys of `triton-ft:models`. A model id is what clients send
 * as the OpenAI `model` and the name inside the model's AWS and Kubernetes
 * resources, so it follows model.name's rule (schema.ts MODEL_ID). A bad id is
 * one problem that names what breaks the rule and offers a valid id; the
 * model itself is still checked, under that valid id, so the rest of its
 * settings are reported in the same round and nothing else complains about a
 * model that went missing.
 *
 * Pure.
 */
import { MODEL_ID, MODEL_ID_MAX_CHARS } from "./schema";

export const MODEL_ID_RULE = `lowercase letters, digits and '-', starting with a letter or digit, at most ${MODEL_ID_MAX_CHARS} characters (it names the model's AWS and Kubernetes resources)`;

/** What breaks the rule, in words: `upper case letters (K, G, P, T)`, `a '.'`, `70 characters`. */
export function modelIdFaults(id: string): string[] {
  if (MODEL_ID.test(id)) return [];
  const faults: string[] = [];
  if (id.length === 0) return ["no characters"];
  const upper = [...new Set(id.match(/[A-Z]/g) ?? [])];
  if (upper.length > 0) faults.push(`upper case letters (${upper.join(", ")})`);
  const others = [...new Set(id.match(/[^A-Za-z0-9-]/g) ?? [])];
  for (const c of others) faults.push(c === " " ? "a space" : `a '${c}'`);
  if (id.startsWith("-")) faults.push("a '-' at the start");
  if (id.length > MODEL_ID_MAX_CHARS) faults.push(`${id.length} characters`);
  return faults;
}

/** A valid id close to `id`, different from every id in `taken`. */
export function suggestModelId(id: string, taken: readonly string[]): string {
  const base =
    id
      .toLowerCase()
      .replace(/[^a-z0-9-]+/g, "-")
      .replace(/^-+/, "")
      .slice(0, MODEL_ID_MAX_CHARS)
      .replace(/-+$/, "") || "model";
  if (!taken.includes(base)) return base;
  for (let n = 2; ; n++) {
    const suffix = `-${n}`;
    const candidate = base.slice(0, MODEL_ID_MAX_CHARS - suffix.length).replace(/-+$/, "") + suffix;
    if (!taken.includes(candidate)) return candidate;
  }
}
