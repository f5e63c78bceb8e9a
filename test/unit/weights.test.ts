import { describe, expect, it } from "vitest";
import { findPreset, parameterCount } from "../../infra/model/catalog";
import type { Family, ModelArch } from "../../infra/model/types";
import { expectedConfigIni, expectedWeightFiles, expectedWeights } from "../../infra/plan/weights";

/** A 2-layer model like the ones the facts sheet's complete file lists were measured on. */
const tiny: ModelArch = {
  layers: 2,
  hidden: 64,
  heads: 4,
  ffn: 256,
  vocab: 1000,
  rotaryDims: 8,
  maxPositions: 128,
  startId: 0,
  endId: 0,
};

// Counts from the facts sheet, config.ini included.
const COMPLETE_SET: Array<[Family, number, number]> = [
  ["gptneox", 1, 31],
  ["gptneox", 2, 43],
  ["gptj", 1, 22],
  ["gptj", 2, 32],
  ["gpt", 1, 29],
  ["gpt", 2, 41],
  ["codegen", 1, 22],
  ["codegen", 2, 32],
];

const names = (family: Family, tp: number) => expectedWeightFiles(family, tiny, tp).map((f) => f.name);

describe("expected weight files", () => {
  it.each(COMPLETE_SET)("%s at TP%i is a complete set of %i files with config.ini", (family, tp, total) => {
    const files = expectedWeightFiles(family, tiny, tp);
    expect(files.length + 1).toBe(total);
    expect(new Set(files.map((f) => f.name)).size).toBe(files.length);
    expect(files.map((f) => f.name)).not.toContain("config.ini");
  });

  it("requires lm_head for GPT-NeoX (the transformers-5 converter silently dropped it)", () => {
    expect(names("gptneox", 1)).toContain("model.lm_head.weight.bin");
    expect(names("gptneox", 1)).not.toContain("model.lm_head.bias.bin");
    expect(names("gptneox", 1)).toContain("model.layers.1.mlp.attention.bias.sum.bin");
  });

  it("has lm_head weight and bias for GPT-J, none for GPT-2 (tied to wte) which has wpe", () => {
    expect(names("gptj", 1)).toEqual(expect.arrayContaining(["model.lm_head.weight.bin", "model.lm_head.bias.bin"]));
    expect(
      names("gptj", 1).some((n) => n.includes("post_attention_layernorm") || n.includes("query_key_value.bias")),
    ).toBe(false);
    expect(names("gpt", 1).some((n) => n.startsWith("model.lm_head"))).toBe(false);
    expect(names("gpt", 1)).toContain("model.wpe.bin");
  });

  it("splits exactly the tensor-parallel tensors per rank", () => {
    const tp2 = names("gptneox", 2);
    for (const t of [
      "attention.dense.weight",
      "attention.query_key_value.bias",
      "attention.query_key_value.weight",
      "mlp.dense_h_to_4h.bias",
      "mlp.dense_h_to_4h.weight",
      "mlp.dense_4h_to_h.weight",
    ]) {
      expect(tp2).toEqual(expect.arrayContaining([`model.layers.0.${t}.0.bin`, `model.layers.0.${t}.1.bin`]));
      expect(tp2).not.toContain(`model.layers.0.${t}.bin`);
    }
    for (const t of [
      "attention.dense.bias",
      "mlp.dense_4h_to_h.bias",
      "input_layernorm.weight",
      "post_attention_layernorm.bias",
    ]) {
      expect(tp2).toContain(`model.layers.0.${t}.bin`);
    }
  });

  it("gives per-rank element counts from the architecture", () => {
    const byName = Object.fromEntries(expectedWeightFiles("gptj", tiny, 2).map((f) => [f.name, f.elements]));
    expect(byName["model.wte.bin"]).toBe(1000 * 64);
    expect(byName["model.lm_head.bias.bin"]).toBe(1000);
    expect(byName["model.layers.0.attention.query_key_value.weight.1.bin"]).toBe(64 * 3 * 32);
    expect(byName["model.layers.0.attention.dense.weight.0.bin"]).toBe(32 * 64);
    expect(byName["model.layers.1.mlp.dense_h_to_4h.weight.1.bin"]).toBe(64 * 128);
    expect(byName["model.layers.1.mlp.dense_h_to_4h.bias.0.bin"]).toBe(128);
    expect(byName["model.layers.1.mlp.dense_4h_to_h.weight.0.bin"]).toBe(128 * 64);
  });

  // The file sizes add up to the model's parameters (GPT-J's lm_head bias included, as in
  // the measured KoGPT count) plus what FT stores twice: GPT-NeoX's pre-summed output bias per layer.
  it.each([
    ["gpt-j-6b", () => 0],
    ["kogpt-6b", () => 0],
    ["gpt2-medium", () => 0],
    ["h2ogpt-oig-oasst1-512-6_9b", (a: ModelArch) => a.layers * a.hidden],
    ["codegen-2b-mono", () => 0],
  ])("%s: elements sum to the parameter count at every TP size", (preset, extra) => {
    const p = findPreset(preset);
    if (!p) throw new Error(`no preset ${preset}`);
    const want = parameterCount(p.family, p.arch) + extra(p.arch);
    for (const tp of [1, 2, 4]) {
      const sum = expectedWeightFiles(p.family, p.arch, tp).reduce((s, f) => s + f.elements, 0);
      expect(sum).toBe(want);
    }
  });

  it("refuses a split FT cannot do", () => {
    expect(() => expectedWeightFiles("gpt", { ...tiny, heads: 6, hidden: 60 }, 4)).toThrow(
      /6 attention heads cannot be split over 4 GPUs/,
    );
    expect(() => expectedWeightFiles("gpt", tiny, 0)).toThrow(/positive integer/);
  });
});

describe("expected config.ini", () => {
  it("lists the keys each converter writes, as exact strings", () => {
    expect(expectedConfigIni("gptneox", tiny, 2)).toEqual({
      head_num: "4",
      size_per_head: "16",
      inter_size: "256",
      num_layer: "2",
      vocab_size: "1000",
      start_id: "0",
      end_id: "0",
      weight_data_type: "fp16",
      rotary_embedding: "8",
      use_gptj_residual: "1",
    });
    expect(expectedConfigIni("gpt", tiny, 2)).toMatchObject({ max_pos_seq_len: "128", tensor_para_size: "2" });
    expect(expectedConfigIni("gpt", tiny, 2)).not.toHaveProperty("rotary_embedding");
    expect(expectedConfigIni("codegen", tiny, 1)).toEqual(expectedConfigIni("gptj", tiny, 1));
  });

  it("emits the verifier's JSON shape with the config.ini section", () => {
    const e = expectedWeights("codegen", tiny, 2);
    expect(Object.keys(e)).toEqual(["family", "tensorParallel", "section", "config", "files"]);
    expect(e).toMatchObject({ family: "codegen", tensorParallel: 2, section: "gptj" });
    expect(JSON.parse(JSON.stringify(e))).toEqual(e);
  });
});
