/**
 * The default of an optional config key that has no zod `.default()`: what the stack does when
 * the key is left out, in words ("derived from the model", "none: a key pair is generated"). It
 * travels as JSON Schema metadata, so the generated config reference shows it in its default
 * column and Pulumi.yaml's field list repeats it; test/unit/architecture.test.ts fails on an
 * optional key that states neither a zod default nor this.
 */

/** The metadata key, as it appears in the schema's JSON Schema output. */
export const STATED_DEFAULT = "defaultText";

/** `.meta(unsetMeans("…"))`: the key's default when a stack leaves it out. */
export function unsetMeans(text: string): { [STATED_DEFAULT]: string } {
  return { [STATED_DEFAULT]: text };
}
