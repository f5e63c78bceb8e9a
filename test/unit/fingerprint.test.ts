/**
 * The image fingerprint (plan/fingerprint.ts) is derived, not curated: every
 * entry of every step the bake consumes is in it, except the deploy-time
 * values and the named build-host entries, and every config key that shapes
 * the image moves it. The enumeration runs over the seed stacks' real step
 * definitions, so a step entry added tomorrow is checked without a test edit.
 */
import { describe, expect, it } from "vitest";
import { resolveStack } from "../../infra/resolve";
import { buildPlan } from "../../infra/plan";
import {
  FINGERPRINTED_STEP,
  NOT_FINGERPRINTED,
  NOT_FINGERPRINTED_ARGS,
  NOT_FINGERPRINTED_STEPS,
  fingerprintOf,
  imageFingerprint,
} from "../../infra/plan/fingerprint";
import { buildStackPlan } from "../../infra/plan/stack";
import type { ConfigValue, StepDefinition } from "../../infra/plan/stepGraph";
import { SEED_MODELS_STACK, stackFileConfig } from "../lib/modelsForm";
import { gpt2Config, onVllm, tinyllamaModel, withOverrides, type RawConfig } from "../lib/fixtures";
import { SEED_CASES } from "./seedCases";

const hasher = (p: string) => `h:${p}`;

function plan(cfg: RawConfig) {
  const { stack, problems } = resolveStack(cfg, {}, { today: "2026-11-25" });
  if (!stack) throw new Error(JSON.stringify(problems));
  return buildPlan(stack, "test", hasher);
}

const fp = (steps: readonly StepDefinition[]) => fingerprintOf(imageFingerprint(steps, hasher));

/** `value` changed, keeping its kind. */
function mutate(value: ConfigValue): ConfigValue {
  if (typeof value === "number") return value + 1;
  if (typeof value === "string") return `${value}-changed`;
  if (Array.isArray(value)) return [...(value as readonly string[]), "changed"];
  return value;
}

/** The steps the bake consumes, by walking dependsOn from it (host-ready included). */
function upstreamOfBake(steps: readonly StepDefinition[]): Set<string> {
  const byId = new Map(steps.map((s) => [s.id, s]));
  const seen = new Set<string>();
  const visit = (id: string) => {
    if (seen.has(id)) return;
    seen.add(id);
    for (const d of byId.get(id as StepDefinition["id"])?.dependsOn ?? []) visit(d);
  };
  visit(FINGERPRINTED_STEP);
  return seen;
}

/** vLLM models (issue 37): their bake's config and files are held to the same rule (issue 32). */
const TINYLLAMA = tinyllamaModel("vllm");
const CODEGEN_VLLM = {
  preset: "codegen-350m-mono",
  engine: "vllm",
  source: {
    huggingface: { repo: "Salesforce/codegen-350M-mono", revision: "0a1b2c3d4e5f60718293a4b5c6d7e8f901234567" },
  },
};
const VLLM_CASES: Array<readonly [string, RawConfig]> = [
  ["gpt2-vllm", onVllm(withOverrides(gpt2Config(), { model: { engine: "vllm" } }))],
  ["tinyllama-vllm", onVllm(withOverrides(gpt2Config(), { model: TINYLLAMA }))],
  ["codegen-350m-vllm", onVllm(withOverrides(gpt2Config(), { model: CODEGEN_VLLM }))],
];

describe.each([...SEED_CASES.map((c) => [c.id, c.config] as const), ...VLLM_CASES])(
  "the fingerprint of %s",
  (_id, cfg) => {
    // A one-model stack's pipeline runs every step, unscoped: the definitions the fingerprint reads.
    const steps: StepDefinition[] = plan(cfg).buildSteps;
    const base = fp(steps);
    const consumed = upstreamOfBake(steps);

    it("moves with every entry of every step the bake consumes, except the named ones", () => {
      const unexplained: string[] = [];
      let checked = 0;
      for (const step of steps.filter((s) => consumed.has(s.id))) {
        const excludedStep = step.id in NOT_FINGERPRINTED_STEPS;
        const change = (mutated: StepDefinition) => fp(steps.map((s) => (s === step ? mutated : s))) !== base;
        for (const [n, [key, value]] of step.config.entries()) {
          const deploy = typeof value === "object" && !Array.isArray(value);
          const excluded = excludedStep || deploy || key in NOT_FINGERPRINTED;
          const config = step.config.map((e, i): [string, ConfigValue] => (i === n ? [key, mutate(value)] : e));
          const moved = change({ ...step, config });
          checked++;
          // In the fingerprint exactly when not named as left out.
          if (moved === excluded)
            unexplained.push(
              `${step.id}.${key}: ${moved ? "moves it, yet is listed as left out" : "is neither in it nor listed"}`,
            );
        }
        for (const [n, f] of step.files.entries()) {
          const files = step.files.map((x, i) => (i === n ? { ...f, content: `${f.content}\n` } : x));
          if (change({ ...step, files }) === excludedStep) unexplained.push(`${step.id} file ${f.remotePath}`);
          checked++;
        }
        const rehashed = (p: string) => `other:${p}`;
        for (const input of [step.script, ...step.inputs]) {
          const moved = fingerprintOf(imageFingerprint(steps, (p) => (p === input ? rehashed(p) : hasher(p)))) !== base;
          if (moved === excludedStep) unexplained.push(`${step.id} input ${input}`);
          checked++;
        }
      }
      expect(checked).toBeGreaterThan(30);
      expect(unexplained).toEqual([]);
    });

    it("leaves out only what the builder host needs: a changed worker count keeps it", () => {
      const convert = steps.find((s) => s.id === "convert");
      const argv = convert?.config.find(([k]) => k === "CONVERT_ARGV")?.[1] as readonly string[] | undefined;
      if (!convert || !argv || !argv.includes("-p")) return;
      const p = argv.indexOf("-p");
      const more = argv.map((v, i) => (i === p + 1 ? String(Number(v) + 7) : v));
      const config = convert.config.map(([k, v]): [string, ConfigValue] => [k, k === "CONVERT_ARGV" ? more : v]);
      expect(fp(steps.map((s) => (s === convert ? { ...convert, config } : s)))).toBe(base);
      expect(NOT_FINGERPRINTED_ARGS.CONVERT_ARGV?.flags).toContain("-p");
    });
  },
);

describe("the fingerprint follows the config keys that shape the image", () => {
  const base = plan(gpt2Config()).image.fingerprint;
  const cases: Array<[string, Record<string, Record<string, unknown>>]> = [
    ["serving.maxBatchSize", { serving: { maxBatchSize: 4 } }],
    ["serving.maxInputLen", { serving: { maxInputLen: 256 } }],
    ["serving.maxOutputLen", { serving: { maxOutputLen: 128 } }],
    ["serving.streaming", { serving: { streaming: false } }],
    [
      "serving.instanceType",
      { serving: { instanceType: "g6.xlarge" }, build: { ...gpt2Config().build, builderInstanceType: "g6.4xlarge" } },
    ],
    ["gemm.batchSize", { gemm: { batchSize: 4 } }],
    [
      "model.source revision",
      {
        model: {
          ...gpt2Config().model,
          source: { huggingface: { repo: "openai-community/gpt2", revision: "1".repeat(40) } },
        },
      },
    ],
    ["build.ftCommit", { build: { ...gpt2Config().build, ftCommit: "2".repeat(40) } }],
  ];
  it.each(cases)("%s moves it", (_key, overrides) => {
    expect(plan(withOverrides(gpt2Config(), overrides)).image.fingerprint).not.toBe(base);
  });
  const tiny = onVllm(withOverrides(gpt2Config(), { model: TINYLLAMA }));
  const tinyBase = plan(tiny).image.fingerprint;
  it.each([
    ["serving.vllm.maxLogprobs", { serving: { vllm: { maxLogprobs: 5 } } }],
    ["serving.vllm.kvCacheGiB", { serving: { vllm: { kvCacheGiB: 4 } } }],
    ["serving.vllm.maxModelLen", { serving: { vllm: { maxModelLen: 1024 } } }],
    ["serving.vllm.gpuMemoryUtilization", { serving: { vllm: { gpuMemoryUtilization: 0.8 } } }],
    ["serving.vllm.dtype", { serving: { vllm: { dtype: "float16" } } }],
    ["serving.maxBatchSize (max_num_seqs)", { serving: { maxBatchSize: 4 } }],
  ])("a vLLM model's %s moves it", (_key, overrides) => {
    expect(plan(withOverrides(tiny, overrides)).image.fingerprint).not.toBe(tinyBase);
  });
  it.each([
    ["serving.replicas", { serving: { replicas: 3 } }],
    ["serving.gatewayReplicas", { serving: { gatewayReplicas: 3 } }],
    ["build.builderDiskGiB", { build: { ...gpt2Config().build, builderDiskGiB: 400 } }],
  ])("%s (serving or builder only) keeps it", (_key, overrides) => {
    expect(plan(withOverrides(gpt2Config(), overrides)).image.fingerprint).toBe(base);
  });

  it("a tokenizer-only change of an archive source moves it (GPT-J from the JAX checkpoint)", () => {
    const jax = SEED_CASES.find((c) => c.id === "gptj-jax-tp4-g5.12xlarge")?.config;
    if (!jax) throw new Error("no JAX seed case");
    const source = (jax.model as { source: { archive: Record<string, unknown> } }).source.archive;
    const other = withOverrides(jax, {
      model: { ...jax.model, source: { archive: { ...source, tokenizerRevision: "3".repeat(40) } } },
    });
    expect(plan(other).image.fingerprint).not.toBe(plan(jax).image.fingerprint);
  });

  it("is the same for a model whether it is its stack's first or a further one (scoped paths left out)", () => {
    const raw = stackFileConfig(SEED_MODELS_STACK) as Record<string, Record<string, unknown>>;
    const fingerprints = (r: Record<string, unknown>) => {
      const { models, problems } = resolveStack(r, {}, { today: "2026-11-25" });
      if (!models) throw new Error(JSON.stringify(problems));
      const sp = buildStackPlan(models, "seed-models", hasher);
      return Object.fromEntries(sp.models.map((m) => [m.id, m.plan.image.fingerprint]));
    };
    const several = fingerprints(raw);
    // KoGPT alone: the first (unscoped) model of its stack, on the same A10G builder.
    const alone = fingerprints({
      ...raw,
      models: { "kogpt-6b": raw.models?.["kogpt-6b"] },
      build: { ...raw.build, builderInstanceType: ["g5.4xlarge"] },
    });
    expect(alone["kogpt-6b"]).toBe(several["kogpt-6b"]);
    expect(new Set(Object.values(several)).size).toBe(3);
  });
});
