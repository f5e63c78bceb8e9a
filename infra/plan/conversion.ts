/**
 * Conversion plan: the ordered commands that turn the fetched checkpoint into FT
 * weights for the planned tensor-parallel size, run from the pinned FT checkout
 * inside triton_with_ft. It encodes the converters' traps:
 * - they refuse an existing output folder, so every attempt converts into a
 *   fresh temp folder that replaces the previous result only once verified;
 * - the GPT-J converter reads one `pytorch_model.bin` and the GPT-NeoX one needs
 *   several `.bin` shards, so sharded/safetensors checkpoints are consolidated first;
 * - the GPT-J converters always write fp32, so an fp16 rewrite follows;
 * - the GPT-J converter assumes 28 layers unless told otherwise;
 * - the JAX slim converter writes no config.ini, so the plan writes it;
 * - a config.ini or weight set that does not match the planned architecture
 *   fails the verifier, which gates the bake.
 */
import type { GpuInstance } from "../catalog/gpus";
import type { Family, ModelArch } from "../model/types";
import type { ResolvedModel } from "../validate";
import {
  BUILDER_CONVERT_SCRIPTS_DIR,
  BUILDER_WORK_ROOT,
  FT_SOURCE_DIR,
  builderWorkTree,
  checkpointFolderName,
  serverCheckpointPath,
  type BuilderWorkTree,
} from "./paths";
import { expectedWeights, type ExpectedWeights } from "./weights";

export type ConversionStep =
  | {
      id: string;
      kind: "exec";
      /** `host`: plain command on the builder; `triton_with_ft`: inside the image (see ConversionPlan.container). */
      runIn: "host" | "triton_with_ft";
      argv: string[];
      description: string;
    }
  | { id: string; kind: "write-file"; path: string; content: string; description: string };

export interface ContainerMount {
  hostPath: string;
  containerPath: string;
  readOnly: boolean;
}

export interface ConversionPlan {
  family: Family;
  sourceKind: "huggingface" | "archive";
  /** The FT converter script this plan runs (absolute, inside triton_with_ft). */
  converter: string;
  tensorParallel: number;
  work: BuilderWorkTree;
  /** How `triton_with_ft` steps run: these mounts, no GPU (the converters work on the CPU). */
  container: { image: "triton_with_ft"; mounts: ContainerMount[]; gpus: false };
  steps: ConversionStep[];
  /** Folder handed to the converter as its output root (it creates <N>-gpu inside). */
  outputDir: string;
  /** The verified result on the builder, copied into the server image by the bake step. */
  checkpointDir: string;
  /** Where that folder lives in the server image: model_checkpoint_path. */
  serverCheckpointPath: string;
  expectedWeights: ExpectedWeights;
}

export const FT_CONVERTERS = {
  gptneox: `${FT_SOURCE_DIR}/examples/pytorch/gptneox/utils/huggingface_gptneox_convert.py`,
  gptjHf: `${FT_SOURCE_DIR}/examples/pytorch/gptj/utils/huggingface_gptj_ckpt_convert.py`,
  gptjJax: `${FT_SOURCE_DIR}/examples/pytorch/gptj/utils/gptj_ckpt_convert.py`,
  gpt: `${FT_SOURCE_DIR}/examples/pytorch/gpt/utils/huggingface_gpt_convert.py`,
} as const;

/** The project's own helpers (scripts/convert/), shipped to the builder. */
export const CONVERT_SCRIPTS = {
  consolidate: `${BUILDER_CONVERT_SCRIPTS_DIR}/consolidate_checkpoint.py`,
  codegenToGptj: `${BUILDER_CONVERT_SCRIPTS_DIR}/codegen_to_gptj.py`,
  toFp16: `${BUILDER_CONVERT_SCRIPTS_DIR}/to_fp16.py`,
  verify: `${BUILDER_CONVERT_SCRIPTS_DIR}/verify_weights.py`,
} as const;

/**
 * Worker processes for the converters that take `-p`: one per 4 vCPUs. Each
 * spawned worker imports torch and holds tensors in flight, and the g5/p4 hosts
 * have 4+ GiB of RAM per vCPU, which keeps the workers inside the RAM headroom
 * that validation reserves beyond the fp32 checkpoint.
 */
export function converterProcesses(builder: GpuInstance): number {
  return Math.max(1, Math.floor(builder.vcpus / 4));
}

/** INI text of the [gptj] config.ini the JAX slim converter does not write (fp32, like its weights). */
export function gptjConfigIni(modelName: string, arch: ModelArch): string {
  const entries: Array<[string, string]> = [
    ["model_name", modelName],
    ["head_num", String(arch.heads)],
    ["size_per_head", String(arch.hidden / arch.heads)],
    ["inter_size", String(arch.ffn)],
    ["num_layer", String(arch.layers)],
    ["rotary_embedding", String(arch.rotaryDims)],
    ["vocab_size", String(arch.vocab)],
    ["start_id", String(arch.startId)],
    ["end_id", String(arch.endId)],
    ["weight_data_type", "fp32"],
  ];
  return `[gptj]\n${entries.map(([k, v]) => `${k} = ${v}`).join("\n")}\n\n`;
}

export function conversionPlan(model: ResolvedModel, tensorParallel: number, builder: GpuInstance): ConversionPlan {
  const { family, arch } = model;
  const work = builderWorkTree(model.name);
  const tp = String(tensorParallel);
  const expected = expectedWeights(family, arch, tensorParallel);
  const converted = `${work.convertTmp}/${checkpointFolderName(tensorParallel)}`;
  const procs = String(converterProcesses(builder));
  const steps: ConversionStep[] = [];
  const exec = (id: string, runIn: "host" | "triton_with_ft", argv: string[], description: string) =>
    steps.push({ id, kind: "exec", runIn, argv, description });

  exec(
    "clean",
    "host",
    ["rm", "-rf", work.convertTmp, work.stage],
    "start from an empty temp output: the FT converters refuse an existing <N>-gpu folder",
  );
  steps.push({
    id: "expected-weights",
    kind: "write-file",
    path: work.expectedWeights,
    content: JSON.stringify(expected, null, 2) + "\n",
    description: "the verifier's expected files, element counts and config.ini values",
  });

  // to_fp16.py verifies its fp32 input and its fp16 result against one list, so it
  // gets the list without weight_data_type; the final verify checks fp16 itself.
  const fp16Step = () => {
    const anyType = Object.fromEntries(Object.entries(expected.config).filter(([key]) => key !== "weight_data_type"));
    steps.push({
      id: "expected-weights-any-type",
      kind: "write-file",
      path: work.expectedWeightsAnyType,
      content: JSON.stringify({ ...expected, config: anyType }, null, 2) + "\n",
      description: "the expected list without weight_data_type, for the fp16 rewrite's own checks",
    });
    exec(
      "fp16",
      "triton_with_ft",
      ["python3", CONVERT_SCRIPTS.toFp16, converted, "--expected", work.expectedWeightsAnyType],
      "rewrite the fp32 weights as fp16 and set weight_data_type (verified before and after)",
    );
  };

  let converter: string;
  if (model.source.kind === "archive") {
    if (family !== "gptj") throw new Error(`archive sources are GPT-J JAX slim checkpoints, not ${family}`);
    converter = FT_CONVERTERS.gptjJax;
    // The slim converter hard-codes GPT-J 6B (28 layers) and appends "shard_<i>/"
    // to --ckpt-dir verbatim, hence the trailing slash.
    if (arch.layers !== 28) throw new Error(`the JAX slim converter only handles 28 layers, not ${arch.layers}`);
    exec(
      "convert",
      "triton_with_ft",
      [
        "python3",
        converter,
        "--ckpt-dir",
        `${work.source}/`,
        "--output-dir",
        work.convertTmp,
        "--n-inference-gpus",
        tp,
      ],
      "convert the mesh-transformer-jax slim shards (fp32 output)",
    );
    steps.push({
      id: "config-ini",
      kind: "write-file",
      path: `${converted}/config.ini`,
      content: gptjConfigIni(model.name, arch),
      description: "the JAX slim converter writes no config.ini, and FT refuses to load without one",
    });
    fp16Step();
  } else {
    switch (family) {
      case "gptneox":
        converter = FT_CONVERTERS.gptneox;
        exec(
          "consolidate",
          "triton_with_ft",
          [
            "python3",
            CONVERT_SCRIPTS.consolidate,
            "--input",
            work.source,
            "--output",
            work.stage,
            "--layout",
            "shards",
            "--min-shards",
            "2",
          ],
          "give the GPT-NeoX converter >= 2 .bin shards (it crashes on safetensors-only or single-file checkpoints)",
        );
        exec(
          "convert",
          "triton_with_ft",
          [
            "python3",
            converter,
            "-i",
            work.stage,
            "-o",
            work.convertTmp,
            "-i_g",
            tp,
            "-m_n",
            model.name,
            "-p",
            procs,
            "-weight_data_type",
            "fp16",
          ],
          "convert to FT GPT-NeoX weights in fp16",
        );
        break;
      case "gptj":
      case "codegen":
        converter = FT_CONVERTERS.gptjHf;
        if (family === "codegen") {
          exec(
            "codegen-to-gptj",
            "triton_with_ft",
            ["python3", CONVERT_SCRIPTS.codegenToGptj, "--input", work.source, "--output", work.stage],
            "re-lay out CodeGen's fused qkv as a GPT-J checkpoint (one pytorch_model.bin)",
          );
        } else {
          exec(
            "consolidate",
            "triton_with_ft",
            [
              "python3",
              CONVERT_SCRIPTS.consolidate,
              "--input",
              work.source,
              "--output",
              work.stage,
              "--layout",
              "single",
            ],
            "give the GPT-J converter the single pytorch_model.bin it reads",
          );
        }
        // --n-layers is always passed: the converter silently converts only 28 layers otherwise.
        exec(
          "convert",
          "triton_with_ft",
          [
            "python3",
            converter,
            "--ckpt-dir",
            work.stage,
            "--output-dir",
            work.convertTmp,
            "--n-inference-gpus",
            tp,
            "--n-layers",
            String(arch.layers),
          ],
          "convert to FT GPT-J weights (fp32 output)",
        );
        fp16Step();
        break;
      case "gpt":
        converter = FT_CONVERTERS.gpt;
        exec(
          "convert",
          "triton_with_ft",
          [
            "python3",
            converter,
            "-i",
            work.source,
            "-o",
            work.convertTmp,
            "-i_g",
            tp,
            "-t_g",
            "1",
            "-p",
            procs,
            "-weight_data_type",
            "fp16",
          ],
          "convert to FT GPT weights in fp16",
        );
        break;
    }
  }

  exec(
    "verify",
    "triton_with_ft",
    ["python3", CONVERT_SCRIPTS.verify, converted, "--expected", work.expectedWeights],
    "refuse an incomplete weight set or a config.ini that does not match the planned architecture",
  );
  // Swap: the previous verified result stays in place until the new one is complete.
  exec("swap-prepare", "host", ["rm", "-rf", work.ftOld], "drop a leftover from an interrupted swap");
  exec("swap-ensure", "host", ["mkdir", "-p", work.ft], "make sure there is a previous result to move aside");
  exec("swap-aside", "host", ["mv", "-T", work.ft, work.ftOld], "move the previous result aside");
  exec("swap-in", "host", ["mv", "-T", work.convertTmp, work.ft], "put the verified conversion in place");
  exec(
    "swap-cleanup",
    "host",
    ["rm", "-rf", work.ftOld, work.stage],
    "free the disk held by the previous result and the staged checkpoint",
  );

  return {
    family,
    sourceKind: model.source.kind,
    converter,
    tensorParallel,
    work,
    container: {
      image: "triton_with_ft",
      mounts: [
        { hostPath: BUILDER_WORK_ROOT, containerPath: BUILDER_WORK_ROOT, readOnly: false },
        { hostPath: BUILDER_CONVERT_SCRIPTS_DIR, containerPath: BUILDER_CONVERT_SCRIPTS_DIR, readOnly: true },
      ],
      gpus: false,
    },
    steps,
    outputDir: work.convertTmp,
    checkpointDir: `${work.ft}/${checkpointFolderName(tensorParallel)}`,
    serverCheckpointPath: serverCheckpointPath(tensorParallel),
    expectedWeights: expected,
  };
}
