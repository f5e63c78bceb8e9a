/**
 * Presets for the models the seed runbooks serve. Each number is the value in the
 * model's own config.json (names differ per family: n_layer/num_hidden_layers,
 * n_inner/intermediate_size, rotary_dim/rotary_pct × head size, ...). The fetch
 * step re-checks every number against the downloaded config.json, so a preset
 * that drifted from its model fails at build time instead of serving garbage.
 */
import type { Family, ModelArch } from "./types";

/**
 * How the model was trained to read a conversation: the gateway renders chat
 * messages with it (POST /v1/chat/completions). Each turn is `<prefix><content>
 * <turnEnd>`; the prompt ends with the assistant prefix; `stop` ends the
 * assistant's turn (the next turn's prefixes).
 */
export interface ChatTemplate {
  /** Prefix of a system turn; without one, system text opens the first user turn. */
  system?: string;
  user: string;
  assistant: string;
  turnEnd: string;
  stop: string[];
}

export interface ModelPreset {
  name: string;
  family: Family;
  /** Hugging Face repo holding the weights, or, for archive presets, the tokenizer. */
  repo: string;
  /** Branch the seeds used; only a hint for finding the commit to pin. */
  branchHint?: string;
  /** A preset whose weights come from a non-HF archive (GPT-J JAX slim). */
  archive?: { url: string; format: "gptj-jax-slim" };
  /** The repo's vocabulary files: a fast `tokenizer.json`, or GPT-2 style `vocab.json` + `merges.txt`. */
  vocabulary: readonly string[];
  arch: ModelArch;
  /** Only for models fine-tuned on a conversation format; others serve completions only. */
  chatTemplate?: ChatTemplate;
}

const BPE_FILES = ["vocab.json", "merges.txt"] as const;
const FAST_TOKENIZER = ["tokenizer.json"] as const;

const gpt2 = (name: string, layers: number, hidden: number, heads: number): ModelPreset => ({
  name,
  family: "gpt",
  repo: `openai-community/${name}`,
  vocabulary: BPE_FILES,
  // GPT-2 leaves n_inner null: FT and transformers both use 4 × n_embd.
  arch: {
    layers,
    hidden,
    heads,
    ffn: 4 * hidden,
    vocab: 50257,
    rotaryDims: 0,
    maxPositions: 1024,
    startId: 50256,
    endId: 50256,
  },
});

const codegen = (
  size: string,
  flavour: "mono" | "multi",
  layers: number,
  hidden: number,
  heads: number,
  rotaryDims: number,
): ModelPreset => ({
  name: `codegen-${size}-${flavour}`.toLowerCase(),
  family: "codegen",
  repo: `Salesforce/codegen-${size}-${flavour}`,
  vocabulary: BPE_FILES,
  // CodeGen configs leave n_inner null (4 × n_embd); bos_token_id 1, eos_token_id 50256.
  arch: {
    layers,
    hidden,
    heads,
    ffn: 4 * hidden,
    vocab: 51200,
    rotaryDims,
    maxPositions: 2048,
    startId: 1,
    endId: 50256,
  },
});

const gptj6b: ModelArch = {
  layers: 28,
  hidden: 4096,
  heads: 16,
  ffn: 16384,
  vocab: 50400,
  rotaryDims: 64,
  maxPositions: 2048,
  startId: 50256,
  endId: 50256,
};

export const MODEL_PRESETS: readonly ModelPreset[] = [
  {
    name: "h2ogpt-oig-oasst1-512-6_9b",
    family: "gptneox",
    repo: "h2oai/h2ogpt-oig-oasst1-512-6_9b",
    // GPT-NeoX tokenizers exist only as fast tokenizers.
    vocabulary: FAST_TOKENIZER,
    // Pythia-6.9B base: rotary_pct 0.25 of a 128-wide head = 32 rotary dims.
    arch: {
      layers: 32,
      hidden: 4096,
      heads: 32,
      ffn: 16384,
      vocab: 50432,
      rotaryDims: 32,
      maxPositions: 2048,
      startId: 0,
      endId: 0,
    },
    // h2oGPT's `human_bot` prompt type, the format of its OIG/OASST1 fine-tuning data (h2oai/h2ogpt, prompter.py).
    chatTemplate: { user: "<human>: ", assistant: "<bot>: ", turnEnd: "\n", stop: ["<human>:", "<bot>:"] },
  },
  {
    name: "kogpt-6b",
    family: "gptj",
    repo: "kakaobrain/kogpt",
    branchHint: "KoGPT6B-ryan1.5b-float16",
    vocabulary: FAST_TOKENIZER,
    arch: {
      layers: 28,
      hidden: 4096,
      heads: 16,
      ffn: 16384,
      vocab: 64512,
      rotaryDims: 64,
      maxPositions: 2048,
      startId: 0,
      endId: 1,
    },
  },
  { name: "gpt-j-6b", family: "gptj", repo: "EleutherAI/gpt-j-6b", vocabulary: BPE_FILES, arch: gptj6b },
  {
    name: "gpt-j-6b-jax",
    family: "gptj",
    repo: "EleutherAI/gpt-j-6b",
    vocabulary: BPE_FILES,
    archive: { url: "https://mystic.the-eye.eu/public/AI/GPT-J-6B/step_383500_slim.tar.zstd", format: "gptj-jax-slim" },
    arch: gptj6b,
  },
  {
    // vLLM only (family llama): FT has no Llama model. The 3T-token base checkpoint, completions only.
    // config.json (revision 036fa4651240b9a1487f709833b9e4b96b4c1574, the final 3T-token checkpoint;
    // https://huggingface.co/TinyLlama/TinyLlama-1.1B-intermediate-step-1431k-3T, read 2026-11-29):
    // LlamaForCausalLM, 22 layers, hidden 2048, 32 heads, 4 key/value heads (grouped-query),
    // intermediate 5632, vocab 32000, 2048 positions, bos 1, eos 2, tie_word_embeddings false.
    name: "tinyllama-1.1b",
    family: "llama",
    repo: "TinyLlama/TinyLlama-1.1B-intermediate-step-1431k-3T",
    branchHint: "main",
    vocabulary: FAST_TOKENIZER,
    arch: {
      layers: 22,
      hidden: 2048,
      heads: 32,
      kvHeads: 4,
      ffn: 5632,
      vocab: 32000,
      rotaryDims: 64,
      maxPositions: 2048,
      startId: 1,
      endId: 2,
    },
  },
  gpt2("gpt2", 12, 768, 12),
  gpt2("gpt2-medium", 24, 1024, 16),
  gpt2("gpt2-large", 36, 1280, 20),
  gpt2("gpt2-xl", 48, 1600, 25),
  ...(["mono", "multi"] as const).flatMap((f) => [
    codegen("350M", f, 20, 1024, 16, 32),
    codegen("2B", f, 32, 2560, 32, 64),
    codegen("6B", f, 33, 4096, 16, 64),
    codegen("16B", f, 34, 6144, 24, 64),
  ]),
];

export function findPreset(name: string): ModelPreset | undefined {
  return MODEL_PRESETS.find((p) => p.name === name);
}

/** Parameter count from the architecture: what memory, disk and RAM sizing derive from. */
export function parameterCount(family: Family, a: ModelArch): number {
  if (family === "llama") return llamaParameterCount(a);
  const attention = 4 * a.hidden * a.hidden + (family === "gptj" || family === "codegen" ? 0 : 4 * a.hidden);
  const mlp = 2 * a.hidden * a.ffn + a.ffn + a.hidden;
  const norms = (family === "gptj" || family === "codegen" ? 2 : 4) * a.hidden;
  const perLayer = attention + mlp + norms;
  const embeddings = a.vocab * a.hidden;
  // GPT-2 ties lm_head to wte but has learned positions; the others carry a separate lm_head.
  const head = family === "gpt" ? a.maxPositions * a.hidden : a.vocab * a.hidden;
  // GPT-J's (and so CodeGen's) lm_head carries a bias (model.lm_head.bias in FT's weight set).
  const headBias = family === "gptj" || family === "codegen" ? a.vocab : 0;
  return a.layers * perLayer + embeddings + head + headBias + 2 * a.hidden;
}

/**
 * Llama: no biases; q and o are hidden × hidden, k and v hidden × (kvHeads × head size)
 * (grouped-query attention); a gated MLP of three hidden × ffn matrices; two RMSNorms
 * per layer and a final one; an untied lm_head (tie_word_embeddings false).
 */
function llamaParameterCount(a: ModelArch): number {
  const kv = (a.kvHeads ?? a.heads) * (a.hidden / a.heads);
  const attention = 2 * a.hidden * a.hidden + 2 * a.hidden * kv;
  const mlp = 3 * a.hidden * a.ffn;
  const perLayer = attention + mlp + 2 * a.hidden;
  return a.layers * perLayer + 2 * a.vocab * a.hidden + a.hidden;
}
