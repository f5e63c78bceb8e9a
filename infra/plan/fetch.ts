/**
 * Fetch plan: what the fetch step downloads onto the builder and what a
 * complete download holds: the weights in a format the converters accept, the
 * tokenizer files the pre/post-processing models load, and the architecture the
 * downloaded config.json must state.
 */
import { findPreset } from "../model/catalog";
import type { ResolvedModel } from "../config";
import type { BuilderWorkTree } from "./paths";

/** Auxiliary files repos ship or not (a model without a preset still needs tokenizer.json or vocab.json: the bake checks). */
export const OPTIONAL_TOKENIZER_FILES = [
  "tokenizer.json",
  "vocab.json",
  "merges.txt",
  "tokenizer_config.json",
  "special_tokens_map.json",
  "added_tokens.json",
];

/**
 * Tokenizer files the bake must find: config.json (it names the model type,
 * which is how AutoTokenizer picks the class for vocab.json + merges.txt repos)
 * and the preset's vocabulary. Auxiliary files are taken when the repo has them.
 */
export function tokenizerFiles(preset: string | undefined): { required: string[]; optional: string[] } {
  const required = ["config.json", ...((preset && findPreset(preset)?.vocabulary) ?? [])];
  return { required, optional: OPTIONAL_TOKENIZER_FILES.filter((f) => !required.includes(f)) };
}

/** What a Hugging Face download keeps: weights in any format the converters accept, configs and tokenizer files. */
export const HF_INCLUDE = ["*.json", "*.bin", "*.safetensors", "*.txt", "*.model"];
/** Other frameworks' copies of the weights, which would double the download. */
export const HF_EXCLUDE = ["*.msgpack", "*.h5", "*.ot", "flax_model*", "tf_model*", "rust_model*", "*.onnx"];

/** The JAX slim archive unpacks to `step_<n>/shard_<i>/`; the converter reads the shards' parent. */
export function archiveSubdir(url: string): string {
  const base = url.split("/").pop() ?? "";
  const m = /^(step_\d+)_slim\.tar\.zstd?$/.exec(base);
  if (!m?.[1])
    throw new Error(`cannot tell the folder inside archive ${url}; expected a name like step_383500_slim.tar.zstd`);
  return m[1];
}
/** mesh-transformer-jax slim checkpoints of GPT-J 6B are written by 8 model-parallel shards. */
export const JAX_SLIM_SHARDS = 8;

export interface TokenizerFetch {
  repo: string;
  revision: string;
  dir: string;
  files: string[];
  required: string[];
}

export interface FetchPlan {
  /** Absolute folder of the fetched checkpoint on the builder. */
  modelDir: string;
  /** Paths or globs relative to modelDir a complete download holds. */
  expectedFiles: string[];
  hfInclude: string[];
  hfExclude: string[];
  archiveSubdir?: string;
  /** Separate tokenizer source (archive checkpoints ship none). */
  tokenizer?: TokenizerFetch;
  /** Where the bake takes the tokenizer files from: the tokenizer download, or the checkpoint itself. */
  tokenizerSourceDir: string;
  tokenizerFiles: { required: string[]; optional: string[] };
  /** Architecture the downloaded config.json must state (checked by check_model_config.py). */
  expectedArch: Record<string, unknown>;
}

export function fetchPlan(model: ResolvedModel, work: BuilderWorkTree): FetchPlan {
  const files = tokenizerFiles(model.preset);
  const tokenizer = model.tokenizerSource
    ? {
        repo: model.tokenizerSource.repo,
        revision: model.tokenizerSource.revision,
        dir: work.tokenizer,
        files: [...files.required, ...files.optional],
        required: files.required,
      }
    : undefined;
  const archive = model.source.kind === "archive";
  return {
    modelDir: work.source,
    expectedFiles: archive ? Array.from({ length: JAX_SLIM_SHARDS }, (_, i) => `shard_${i}/*`) : files.required,
    hfInclude: HF_INCLUDE,
    hfExclude: HF_EXCLUDE,
    archiveSubdir: model.source.kind === "archive" ? archiveSubdir(model.source.url) : undefined,
    tokenizer,
    tokenizerSourceDir: tokenizer ? tokenizer.dir : work.source,
    tokenizerFiles: files,
    expectedArch: { family: model.family, ...model.arch },
  };
}
