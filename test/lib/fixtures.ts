/** Known-good stack configs that tests start from and then break one key at a time. */
/** Upstream's final, known-good pair (infra/catalog/upstream.ts). */
export const BACKEND_COMMIT = "c6936c39be6fc57c161db34cfe5c45d1bef81ee2";
export const FT_COMMIT = "df4a7534860137e060e18d2ebf019906120ea204";
export const GPT2_REVISION = "607a30d783dfa663caf39e06633721c8d4cfcd7e";
export const GPTJ_REVISION = "47e169305d2e8376be1d31e765533382721b2cc1";
export const TINYLLAMA_REVISION = "036fa4651240b9a1487f709833b9e4b96b4c1574";

/** The Llama preset's `model` block (vLLM only, issue 37): `engine` as given, absent = FT's default. */
export function tinyllamaModel(engine?: string): Record<string, unknown> {
  return {
    preset: "tinyllama-1.1b",
    ...(engine ? { engine } : {}),
    source: {
      huggingface: { repo: "TinyLlama/TinyLlama-1.1B-intermediate-step-1431k-3T", revision: TINYLLAMA_REVISION },
    },
  };
}

export type RawConfig = Record<string, Record<string, unknown>>;

/** GPT-2 on a single A10G, built on a g5.xlarge: the cheapest complete stack. */
export function gpt2Config(): RawConfig {
  return {
    model: { preset: "gpt2", source: { huggingface: { repo: "openai-community/gpt2", revision: GPT2_REVISION } } },
    build: {
      backendCommit: BACKEND_COMMIT,
      ftCommit: FT_COMMIT,
      builderInstanceType: "g5.xlarge",
      sshAllowedCidrs: ["198.51.100.7/32"],
    },
    serving: { instanceType: "g5.xlarge" },
  };
}

/**
 * A config whose every model is served by vLLM, as such a stack is written: without
 * build.builderInstanceType (its builder is the plan's CPU builder, and the key is
 * refused there: resolve/engine.ts checkCpuBuilder).
 */
export function onVllm(cfg: RawConfig): RawConfig {
  const out: RawConfig = structuredClone(cfg);
  const build: Record<string, unknown> = { ...(out.build ?? {}) };
  delete build.builderInstanceType;
  out.build = build;
  return out;
}

/** Deep-merge overrides into a config (objects merge, everything else replaces). */
export function withOverrides(base: RawConfig, overrides: Record<string, Record<string, unknown>>): RawConfig {
  const out: RawConfig = structuredClone(base);
  for (const [k, v] of Object.entries(overrides)) out[k] = { ...(out[k] ?? {}), ...v };
  return out;
}
