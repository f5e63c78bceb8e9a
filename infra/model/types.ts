/**
 * Domain types for the model being served. Pure: no Pulumi imports, so plans and
 * renderers built on them run in `synth` and in unit tests without a runtime.
 */

/**
 * The engines a model can be served with (issue 37): FasterTransformer (`ft`, the
 * default) or vLLM (`vllm`), both as Triton backends behind the same `ensemble`.
 */
export const ENGINES = ["ft", "vllm"] as const;
export type Engine = (typeof ENGINES)[number];

/**
 * Model families this stack drives. `codegen` is served as GPT-J after a re-layout.
 * `llama` (Llama architecture: RMSNorm, gated MLP, rotary, grouped-query attention)
 * is served by vLLM only: FT has no Llama model (resolve/engine.ts refuses it).
 */
export const FAMILIES = ["gptneox", "gptj", "gpt", "codegen", "llama"] as const;
export type Family = (typeof FAMILIES)[number];
/** The families FasterTransformer serves: every FT-only path (conversion, weights, FT config) takes these. */
export const FT_FAMILIES = ["gptneox", "gptj", "gpt", "codegen"] as const satisfies readonly Family[];
export type FtFamily = (typeof FT_FAMILIES)[number];
/** The families each engine serves. */
export const ENGINE_FAMILIES: Readonly<Record<Engine, readonly Family[]>> = {
  ft: FT_FAMILIES,
  vllm: FAMILIES,
};
export function isFtFamily(f: Family): f is FtFamily {
  return (FT_FAMILIES as readonly Family[]).includes(f);
}

/** Architecture numbers, exactly as the model's own config.json states them. */
export interface ModelArch {
  layers: number;
  hidden: number;
  heads: number;
  /**
   * Key/value heads (config.json `num_key_value_heads`, grouped-query attention);
   * unset: `heads` (multi-head attention, every family but llama).
   */
  kvHeads?: number;
  /** Feed-forward inner size (intermediate_size / n_inner, or 4 × hidden when the config leaves it null). */
  ffn: number;
  vocab: number;
  /** Rotary embedding dimensions per head; 0 for learned positions (GPT-2). */
  rotaryDims: number;
  maxPositions: number;
  startId: number;
  endId: number;
}

/** Where the checkpoint comes from. Both kinds are pinned: a commit-ish revision, or an archive digest. */
export type ModelSource =
  | { kind: "huggingface"; repo: string; revision: string }
  | { kind: "archive"; url: string; sha256: string; format: "gptj-jax-slim" };

/** Numerical type of the served weights and of FT's compute. */
export type DataType = "fp16" | "fp32";
