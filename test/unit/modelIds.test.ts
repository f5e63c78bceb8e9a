/**
 * The keys of `triton-ft:models` (model ids): a bad id is one problem that
 * names the rule, what breaks it and a valid id; nothing else is reported
 * because of it (a team scoped to it, the builder of its GPU), and the rest of
 * its settings are still checked in the same round.
 */
import { describe, expect, it } from "vitest";
import { resolveStack } from "../../infra/resolve";
import { modelIdFaults, suggestModelId } from "../../infra/config/modelIds";
import { SEED_MODELS_STACK, stackFileConfig } from "../lib/modelsForm";

type Raw = Record<string, Record<string, unknown>>;

/** The seed stack with model `from` renamed to `to`, in its place in the map. */
function renamed(from: string, to: string): Raw {
  const raw = stackFileConfig(SEED_MODELS_STACK) as Raw;
  raw.models = Object.fromEntries(Object.entries(raw.models ?? {}).map(([id, m]) => [id === from ? to : id, m]));
  return raw;
}

const problems = (raw: Raw) => resolveStack(raw, {}, { today: "2026-11-25", stackName: "seed-models" }).problems;

describe("model ids", () => {
  const cases: Array<[string, string, string]> = [
    ["upper case", "KoGPT-6b", "upper case letters (K, G, P, T)"],
    ["a dot", "kogpt.6b", "a '.'"],
    ["an underscore", "kogpt_6b", "a '_'"],
    ["70 characters", "k".repeat(70), "70 characters"],
  ];
  for (const [what, id, fault] of cases)
    it(`refuses an id with ${what} in one problem naming the rule, the id and a valid one`, () => {
      const p = problems(renamed("kogpt-6b", id));
      expect(p).toHaveLength(1);
      expect(p[0]?.key).toBe(`triton-ft:models.${id}`);
      expect(p[0]?.value).toBe(id);
      expect(p[0]?.message).toContain(fault);
      expect(p[0]?.message).toContain("lowercase letters, digits and '-'");
      expect(p[0]?.message).toContain("at most 39 characters");
      expect(p[0]?.message).not.toMatch(/invalid key/i);
      const suggested = suggestModelId(id, []);
      expect(modelIdFaults(suggested)).toEqual([]);
      expect(p[0]?.fix).toContain(suggested);
    });

  it("adds no follow-on problem: a team scoped to the id, the only model on a GPU's builder", () => {
    // CodeGen is the seed stack's only L4 model: were it dropped, its builder would be "unused".
    const raw = renamed("codegen-2b-mono", "CodeGen_2B");
    raw.serving = {
      ...raw.serving,
      consumers: { search: { models: ["CodeGen_2B", "h2ogpt-6-9b"] }, novelists: {} },
    };
    expect(problems(raw).map((p) => p.key)).toEqual(["triton-ft:models.CodeGen_2B"]);
  });

  it("still checks the rest of the model's settings, under the id as written", () => {
    const raw = renamed("kogpt-6b", "KoGPT");
    // KoGPT has 16 heads: TP 3 does not divide them (nor has its g5.2xlarge 3 GPUs).
    (raw.models?.KoGPT as Record<string, unknown>).tensorParallel = 3;
    expect([...new Set(problems(raw).map((p) => p.key))]).toEqual([
      "triton-ft:models.KoGPT",
      "triton-ft:models.KoGPT.tensorParallel",
    ]);
  });

  it("offers an id no other model has", () => {
    expect(suggestModelId("Kogpt-6b", ["kogpt-6b"])).toBe("kogpt-6b-2");
    expect(suggestModelId("x".repeat(50), ["x".repeat(39)])).toBe(`${"x".repeat(37)}-2`);
    expect(suggestModelId("__", [])).toBe("model");
  });

  it("accepts the ids the rule allows", () => {
    for (const id of ["a", "gpt-j-6b", "9", "m".repeat(39)]) expect(modelIdFaults(id)).toEqual([]);
  });
});
