/**
 * The exact weight files a complete FT conversion holds, per family, layer count
 * and tensor-parallel size, with each file's element count. FT only warns about a
 * missing file and then serves garbage, so the verifier (scripts/convert/
 * verify_weights.py) checks the converted folder against this list before any
 * image is baked. Names and shapes follow the FT converters' output (see the
 * facts sheet's complete lists for 2-layer models).
 */
import type { Family, ModelArch } from "../model/types";
import { ftServing } from "../model/family";

export interface ExpectedFile {
  name: string;
  elements: number;
}

/** The verifier's input (agreed JSON shape); config.ini is checked through `config`, not listed in `files`. */
export interface ExpectedWeights {
  family: Family;
  tensorParallel: number;
  section: string;
  /** config.ini key → exact string value the converter (or fp16 rewrite) must have written. */
  config: Record<string, string>;
  files: ExpectedFile[];
}

/** Data type the served weights end up in; every conversion plan ends in fp16. */
export const SERVED_WEIGHT_TYPE = "fp16";

function checkSplit(arch: ModelArch, tp: number): void {
  if (!Number.isInteger(tp) || tp < 1) throw new Error(`tensor-parallel size must be a positive integer, got ${tp}`);
  if (arch.heads % tp !== 0) throw new Error(`${arch.heads} attention heads cannot be split over ${tp} GPUs`);
  if (arch.ffn % tp !== 0) throw new Error(`FFN size ${arch.ffn} cannot be split over ${tp} GPUs`);
}

/** Weight files of one conversion, in a stable order (globals, then layer by layer). */
export function expectedWeightFiles(family: Family, arch: ModelArch, tp: number): ExpectedFile[] {
  checkSplit(arch, tp);
  const layout = ftServing(family).layout;
  const h = arch.hidden;
  const hTp = h / tp;
  const fTp = arch.ffn / tp;
  const files: ExpectedFile[] = [];
  const add = (name: string, elements: number) => files.push({ name: `${name}.bin`, elements });
  const split = (name: string, elements: number) => {
    for (let r = 0; r < tp; r++) add(`${name}.${r}`, elements);
  };

  add("model.wte", arch.vocab * h);
  if (layout === "gpt") add("model.wpe", arch.maxPositions * h);
  add("model.final_layernorm.bias", h);
  add("model.final_layernorm.weight", h);
  // GPT-2 ties the output projection to wte; the other layouts carry lm_head, and
  // GPT-J's also has a bias.
  if (layout !== "gpt") add("model.lm_head.weight", arch.vocab * h);
  if (layout === "gptj") add("model.lm_head.bias", arch.vocab);

  for (let l = 0; l < arch.layers; l++) {
    const p = `model.layers.${l}`;
    add(`${p}.input_layernorm.bias`, h);
    add(`${p}.input_layernorm.weight`, h);
    // Fused QKV laid out [hidden, 3, hidden/tp] per rank.
    split(`${p}.attention.query_key_value.weight`, h * 3 * hTp);
    split(`${p}.attention.dense.weight`, hTp * h);
    split(`${p}.mlp.dense_h_to_4h.weight`, h * fTp);
    split(`${p}.mlp.dense_h_to_4h.bias`, fTp);
    split(`${p}.mlp.dense_4h_to_h.weight`, fTp * h);
    add(`${p}.mlp.dense_4h_to_h.bias`, h);
    if (layout !== "gptj") {
      // GPT-J has no attention biases and a single (parallel) layer norm.
      split(`${p}.attention.query_key_value.bias`, 3 * hTp);
      add(`${p}.attention.dense.bias`, h);
      add(`${p}.post_attention_layernorm.bias`, h);
      add(`${p}.post_attention_layernorm.weight`, h);
    }
    // Parallel-residual GPT-NeoX: FT adds the attention and MLP output biases once.
    if (layout === "gptneox") add(`${p}.mlp.attention.bias.sum`, h);
  }
  return files;
}

/**
 * config.ini values that must match the planned architecture. The keys are the
 * ones each converter writes; `model_name` is left out because the GPT-J and
 * GPT-2 converters copy it from the checkpoint's `_name_or_path`.
 */
export function expectedConfigIni(family: Family, arch: ModelArch, tp: number): Record<string, string> {
  checkSplit(arch, tp);
  const layout = ftServing(family).layout;
  const common: Record<string, string> = {
    head_num: String(arch.heads),
    size_per_head: String(arch.hidden / arch.heads),
    inter_size: String(arch.ffn),
    num_layer: String(arch.layers),
    vocab_size: String(arch.vocab),
    start_id: String(arch.startId),
    end_id: String(arch.endId),
    weight_data_type: SERVED_WEIGHT_TYPE,
  };
  switch (layout) {
    case "gpt":
      return { ...common, max_pos_seq_len: String(arch.maxPositions), tensor_para_size: String(tp) };
    case "gptj":
      return { ...common, rotary_embedding: String(arch.rotaryDims) };
    case "gptneox":
      // The catalog's GPT-NeoX models use parallel residual; a model without it
      // would convert with use_gptj_residual 0 and fail this check loudly.
      return { ...common, rotary_embedding: String(arch.rotaryDims), use_gptj_residual: "1" };
  }
}

export function expectedWeights(family: Family, arch: ModelArch, tp: number): ExpectedWeights {
  return {
    family,
    tensorParallel: tp,
    section: ftServing(family).section,
    config: expectedConfigIni(family, arch, tp),
    files: expectedWeightFiles(family, arch, tp),
  };
}
