/**
 * Domain types for the model being served. Pure: no Pulumi imports, so plans and
 * renderers built on them run in `synth` and in unit tests without a runtime.
 */

/** FT model families this stack drives. `codegen` is served as GPT-J after a re-layout. */
export const FAMILIES = ["gptneox", "gptj", "gpt", "codegen"] as const;
export type Family = (typeof FAMILIES)[number];

/** Architecture numbers, exactly as the model's own config.json states them. */
export interface ModelArch {
  layers: number;
  hidden: number;
  heads: number;
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
