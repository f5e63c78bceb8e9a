/**
 * Conversion plan: the phases `scripts/remote/convert.sh` runs, in its order,
 * inside triton_with_ft, turning the fetched checkpoint into FT weights for the
 * planned tensor-parallel size:
 *
 *   consolidate | re-layout  ->  convert  ->  config.ini  ->  fp16  ->  verify
 *
 * Each argv is exactly what the script executes, with placeholders only for
 * the staging folders the script owns (CONVERT_PLACEHOLDERS): it converts into
 * a fresh attempt folder, resumes after the last finished phase, and swaps the
 * result into `outputDir` only once the verifier passed. The phases encode the
 * converters' traps:
 * - the GPT-J converter reads one `pytorch_model.bin` and the GPT-NeoX one needs
 *   several `.bin` shards, so sharded/safetensors checkpoints are consolidated first;
 * - CodeGen's fused qkv is re-laid out as a GPT-J checkpoint;
 * - the GPT-J converters always write fp32, so an fp16 rewrite follows;
 * - the GPT-J converter assumes 28 layers unless told otherwise;
 * - the JAX slim converter writes a config.ini with GPT-J 6B's numbers hard-coded
 *   (fp32, model_name gptj-6B, and a bare except that only prints if the write
 *   fails), so the plan ships one derived from the model that replaces it;
 * - a config.ini or weight set that does not match the planned architecture
 *   fails the verifier, which gates the bake.
 */
import { importClosure } from "./pythonImports";
import type { GpuInstance } from "../catalog/gpus";
import type { Family, ModelArch } from "../model/types";
import type { ResolvedModel } from "../config";
import {
  BUILDER_CONVERT_SCRIPTS_DIR,
  FT_SOURCE_DIR,
  REMOTE,
  checkpointFolderName,
  serverCheckpointPath,
  type BuilderWorkTree,
} from "./paths";
import type { ExpectedWeights } from "./weights";

/** The staging folders convert.sh owns, as the placeholders it substitutes in every phase's argv. */
export const CONVERT_PLACEHOLDERS = {
  /** The fetched checkpoint (the step's SOURCE_DIR). */
  source: "{{SRC}}",
  /** The attempt's converter output root; the weights land in `{{OUT}}/<TP>-gpu`. */
  out: "{{OUT}}",
  consolidateOut: "{{CONSOLIDATE_OUT}}",
  relayoutOut: "{{RELAYOUT_OUT}}",
  /** The shipped scripts root, mounted read-only in the container. */
  scripts: "{{SCRIPTS}}",
} as const;
const P = CONVERT_PLACEHOLDERS;

export interface ConversionPhase {
  argv: string[];
  description: string;
  /** The project helper (repo-relative) the phase runs; editing it re-runs the convert step. */
  helper?: string;
}

/** A file the plan ships to the builder for a phase. */
export interface ShippedFile {
  remotePath: string;
  content: string;
}

export interface ConversionPhases {
  consolidate?: ConversionPhase;
  relayout?: ConversionPhase;
  convert: ConversionPhase;
  /** Installed into `{{OUT}}/<TP>-gpu` right after the converter, replacing the JAX slim converter's hard-coded one. */
  configIni?: ShippedFile & { description: string };
  /** fp16 rewrite of the converter output; checks its input and result against the shipped `anyTypeExpected` list. */
  fp16?: ConversionPhase & { anyTypeExpected: string };
  verify: ConversionPhase;
}

/**
 * The step-config key convert.sh reads each phase from, in the order it runs
 * them. Typed over every phase: a phase added to the plan without a key (and so
 * without a place in the script) does not compile; test/scripts/convert.bats
 * checks that the script executes exactly these phases' argv, in this order.
 */
export const CONVERT_PHASE_KEYS: { readonly [K in keyof Required<ConversionPhases>]: string } = {
  consolidate: "CONSOLIDATE_ARGV",
  relayout: "RELAYOUT_ARGV",
  convert: "CONVERT_ARGV",
  configIni: "CONFIG_INI",
  fp16: "FP16_ARGV",
  verify: "VERIFY_ARGV",
};

export interface ConversionPlan {
  family: Family;
  sourceKind: "huggingface" | "archive";
  /** The FT converter script the convert phase runs (absolute, inside triton_with_ft). */
  converter: string;
  tensorParallel: number;
  /** The fetched checkpoint on the builder (the step's SOURCE_DIR, `{{SRC}}`). */
  sourceDir: string;
  /** The verified result's root on the builder; the weights are in `checkpointDir`. */
  outputDir: string;
  checkpointDir: string;
  /** Where that folder lives in the server image: model_checkpoint_path. */
  serverCheckpointPath: string;
  phases: ConversionPhases;
}

export const FT_CONVERTERS = {
  gptneox: `${FT_SOURCE_DIR}/examples/pytorch/gptneox/utils/huggingface_gptneox_convert.py`,
  gptjHf: `${FT_SOURCE_DIR}/examples/pytorch/gptj/utils/huggingface_gptj_ckpt_convert.py`,
  gptjJax: `${FT_SOURCE_DIR}/examples/pytorch/gptj/utils/gptj_ckpt_convert.py`,
  gpt: `${FT_SOURCE_DIR}/examples/pytorch/gpt/utils/huggingface_gpt_convert.py`,
} as const;

/** The project's own helpers (scripts/convert/), shipped to the builder. */
const helper = (file: string) => ({
  repo: `scripts/convert/${file}`,
  builder: `${BUILDER_CONVERT_SCRIPTS_DIR}/${file}`,
});
export const CONVERT_SCRIPTS = {
  consolidate: helper("consolidate_checkpoint.py"),
  codegenToGptj: helper("codegen_to_gptj.py"),
  toFp16: helper("to_fp16.py"),
  verify: helper("verify_weights.py"),
} as const;

/** Where the plan's files for the convert step are shipped on the builder. */
export const CONVERT_FILES = {
  expectedWeights: `${REMOTE.plan}/expected-weights.json`,
  /** The dtype-agnostic expected-weights list (the fp16 rewrite's input check). */
  expectedWeightsAnyType: `${REMOTE.plan}/expected-weights.any-type.json`,
  /** The JAX slim plan's config.ini. */
  configIni: `${REMOTE.plan}/config.ini`,
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

/** INI text of the [gptj] config.ini that replaces the JAX slim converter's hard-coded GPT-J 6B one (fp32, like its weights). */
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

const json = (value: unknown) => JSON.stringify(value, null, 2) + "\n";

/** The converter's output folder inside the attempt: `{{OUT}}/<TP>-gpu`. */
function convertedDir(tp: number): string {
  return `${P.out}/${checkpointFolderName(tp)}`;
}

function consolidatePhase(layout: "shards" | "single"): ConversionPhase {
  const s = CONVERT_SCRIPTS.consolidate;
  return layout === "shards"
    ? {
        argv: [
          "python3",
          s.builder,
          "--input",
          P.source,
          "--output",
          P.consolidateOut,
          "--layout",
          "shards",
          "--min-shards",
          "2",
        ],
        description:
          "give the GPT-NeoX converter >= 2 .bin shards (it crashes on safetensors-only or single-file checkpoints)",
        helper: s.repo,
      }
    : {
        argv: ["python3", s.builder, "--input", P.source, "--output", P.consolidateOut, "--layout", "single"],
        description: "give the GPT-J converter the single pytorch_model.bin it reads",
        helper: s.repo,
      };
}

function relayoutPhase(): ConversionPhase {
  const s = CONVERT_SCRIPTS.codegenToGptj;
  return {
    argv: ["python3", s.builder, "--input", P.source, "--output", P.relayoutOut],
    description: "re-lay out CodeGen's fused qkv as a GPT-J checkpoint (one pytorch_model.bin)",
    helper: s.repo,
  };
}

/** to_fp16.py verifies its fp32 input and its fp16 result against one list: the expected weights without weight_data_type. */
export function anyTypeExpectedWeights(expected: ExpectedWeights): ExpectedWeights {
  const config = Object.fromEntries(Object.entries(expected.config).filter(([key]) => key !== "weight_data_type"));
  return { ...expected, config };
}

function fp16Phase(tp: number): ConversionPhases["fp16"] {
  const s = CONVERT_SCRIPTS.toFp16;
  return {
    argv: ["python3", s.builder, convertedDir(tp), "--expected", CONVERT_FILES.expectedWeightsAnyType],
    description: "rewrite the fp32 weights as fp16 and set weight_data_type (verified before and after)",
    helper: s.repo,
    anyTypeExpected: CONVERT_FILES.expectedWeightsAnyType,
  };
}

/**
 * The weight-set verifier on a folder: the shipped copy under `{{SCRIPTS}}`,
 * against the shipped expected list. convert.sh runs it on the converter's
 * output, bake.sh again on the installed weights before baking them.
 */
export function verifierArgv(weightsDir: string): string[] {
  return ["python3", `${P.scripts}/convert/verify_weights.py`, "--expected", CONVERT_FILES.expectedWeights, weightsDir];
}

function verifyPhase(tp: number): ConversionPhase {
  return {
    argv: verifierArgv(convertedDir(tp)),
    description: "refuse an incomplete weight set or a config.ini that does not match the planned architecture",
    helper: CONVERT_SCRIPTS.verify.repo,
  };
}

/** The JAX slim converter: hard-codes GPT-J 6B (28 layers), appends `shard_<i>/` to --ckpt-dir verbatim. */
function jaxSlimPhases(model: ResolvedModel, tp: number): ConversionPhases {
  if (model.family !== "gptj") throw new Error(`archive sources are GPT-J JAX slim checkpoints, not ${model.family}`);
  if (model.arch.layers !== 28)
    throw new Error(`the JAX slim converter only handles 28 layers, not ${model.arch.layers}`);
  return {
    convert: {
      argv: [
        "python3",
        FT_CONVERTERS.gptjJax,
        "--ckpt-dir",
        `${P.source}/`,
        "--output-dir",
        P.out,
        "--n-inference-gpus",
        String(tp),
      ],
      description: "convert the mesh-transformer-jax slim shards (fp32 output)",
    },
    configIni: {
      remotePath: CONVERT_FILES.configIni,
      content: gptjConfigIni(model.name, model.arch),
      description: "replace the JAX slim converter's hard-coded GPT-J 6B config.ini with the model's own numbers",
    },
    fp16: fp16Phase(tp),
    verify: verifyPhase(tp),
  };
}

function gptneoxPhases(model: ResolvedModel, tp: number, procs: string): ConversionPhases {
  return {
    consolidate: consolidatePhase("shards"),
    convert: {
      argv: [
        "python3",
        FT_CONVERTERS.gptneox,
        "-i",
        P.consolidateOut,
        "-o",
        P.out,
        "-i_g",
        String(tp),
        "-m_n",
        model.name,
        "-p",
        procs,
        "-weight_data_type",
        "fp16",
      ],
      description: "convert to FT GPT-NeoX weights in fp16",
    },
    verify: verifyPhase(tp),
  };
}

/** GPT-J and CodeGen (re-laid out as GPT-J). --n-layers is always passed: the converter silently converts only 28 otherwise. */
function gptjPhases(model: ResolvedModel, tp: number): ConversionPhases {
  const codegen = model.family === "codegen";
  return {
    ...(codegen ? { relayout: relayoutPhase() } : { consolidate: consolidatePhase("single") }),
    convert: {
      argv: [
        "python3",
        FT_CONVERTERS.gptjHf,
        "--ckpt-dir",
        codegen ? P.relayoutOut : P.consolidateOut,
        "--output-dir",
        P.out,
        "--n-inference-gpus",
        String(tp),
        "--n-layers",
        String(model.arch.layers),
      ],
      description: "convert to FT GPT-J weights (fp32 output)",
    },
    fp16: fp16Phase(tp),
    verify: verifyPhase(tp),
  };
}

function gptPhases(tp: number, procs: string): ConversionPhases {
  return {
    convert: {
      argv: [
        "python3",
        FT_CONVERTERS.gpt,
        "-i",
        P.source,
        "-o",
        P.out,
        "-i_g",
        String(tp),
        "-t_g",
        "1",
        "-p",
        procs,
        "-weight_data_type",
        "fp16",
      ],
      description: "convert to FT GPT weights in fp16",
    },
    verify: verifyPhase(tp),
  };
}

function phasesFor(model: ResolvedModel, tp: number, builder: GpuInstance): ConversionPhases {
  if (model.source.kind === "archive") return jaxSlimPhases(model, tp);
  const procs = String(converterProcesses(builder));
  switch (model.family) {
    case "gptneox":
      return gptneoxPhases(model, tp, procs);
    case "gptj":
    case "codegen":
      return gptjPhases(model, tp);
    case "gpt":
      return gptPhases(tp, procs);
    case "llama":
      // Served by vLLM only, which converts nothing: resolve refuses llama on FT.
      throw new Error("family llama has no FT conversion");
  }
}

/** The converter script a phase list runs (its convert phase's program). */
function converterOf(phases: ConversionPhases): string {
  return phases.convert.argv[1] ?? "";
}

export function conversionPlan(
  model: ResolvedModel,
  tensorParallel: number,
  builder: GpuInstance,
  work: BuilderWorkTree,
): ConversionPlan {
  const phases = phasesFor(model, tensorParallel, builder);
  return {
    family: model.family,
    sourceKind: model.source.kind,
    converter: converterOf(phases),
    tensorParallel,
    sourceDir: work.source,
    outputDir: work.ft,
    checkpointDir: `${work.ft}/${checkpointFolderName(tensorParallel)}`,
    serverCheckpointPath: serverCheckpointPath(tensorParallel),
    phases,
  };
}

/**
 * The project helpers each helper imports (`from hf_checkpoint import …`). The
 * plan reads no files, so this is declared here; test/unit/pythonImports.test.ts
 * fails when it disagrees with the helpers' real imports.
 */
export const HELPER_IMPORTS: Readonly<Record<string, readonly string[]>> = {
  // Run by the vLLM bake (plan/vllmSteps.ts), never by an FT step.
  "scripts/convert/check_llama_config.py": ["scripts/convert/check_model_config.py"],
  "scripts/convert/check_model_config.py": [],
  "scripts/convert/codegen_to_gptj.py": ["scripts/convert/hf_checkpoint.py"],
  "scripts/convert/consolidate_checkpoint.py": ["scripts/convert/hf_checkpoint.py"],
  "scripts/convert/hf_checkpoint.py": [],
  "scripts/convert/to_fp16.py": ["scripts/convert/verify_weights.py"],
  "scripts/convert/verify_weights.py": [],
};

/**
 * Repo-relative project helpers the phases run and every helper they import
 * (editing any of them re-runs convert), sorted. The convert step hashes
 * exactly these files on both sides: the Pulumi step hash and convert.sh's
 * marker hash (its CONVERT_HELPERS list).
 */
export function conversionHelpers(plan: ConversionPlan): string[] {
  const p = plan.phases;
  const used = [p.consolidate, p.relayout, p.convert, p.fp16, p.verify].flatMap((phase) =>
    phase?.helper ? [phase.helper] : [],
  );
  return importClosure([CONVERT_SCRIPTS.verify.repo, ...used], (file) => {
    const imports = HELPER_IMPORTS[file];
    return imports === undefined
      ? undefined
      : imports.map((i) => `import ${i.slice(i.lastIndexOf("/") + 1, -3)}`).join("\n");
  });
}

/** The files the convert step ships besides the expected-weights list, in shipping order. */
export function conversionFiles(plan: ConversionPlan, expected: ExpectedWeights): ShippedFile[] {
  const p = plan.phases;
  return [
    ...(p.configIni ? [{ remotePath: p.configIni.remotePath, content: p.configIni.content }] : []),
    ...(p.fp16 ? [{ remotePath: p.fp16.anyTypeExpected, content: json(anyTypeExpectedWeights(expected)) }] : []),
  ];
}
