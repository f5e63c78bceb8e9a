/**
 * Glue between the plans (conversion, gemm, weights, launch, model repository)
 * and the step scripts' config interface: the plans speak in builder paths, the
 * convert script in placeholders ({{SRC}}, {{OUT}}, ...) for the staging
 * folders it owns, so each path the plan names is mapped to its placeholder.
 * Pure: no Pulumi.
 */
import { findPreset } from "../model/catalog";
import { buildPlan, type Plan } from "./index";
import { REPO_ROOT, repoPathHasher } from "./contentHash";
import {
  REMOTE,
  stepDefinitions,
  stepInputHashes,
  type BuildPlans,
  type PathHasher,
  type StepDefinition,
  type StepId,
} from "./steps";
import type { ResolvedStack } from "../validate";

/**
 * Tokenizer files the pre/post-processing models load, per preset, as the
 * model repos ship them; models without a preset use tokenizer.json (every
 * fast tokenizer has it) and tokenizer_config.json.
 */
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

/** Replace each builder path with its placeholder, longest path first so nested paths map correctly. */
export function toPlaceholders(argv: string[], map: Array<[string, string]>): string[] {
  const ordered = [...map].sort(([a], [b]) => b.length - a.length);
  return argv.map((arg) => {
    for (const [path, ph] of ordered) {
      if (arg === path || arg.startsWith(path + "/")) return ph + arg.slice(path.length);
    }
    return arg;
  });
}

/**
 * The convert script's phases from the conversion plan. The plan's own
 * clean/swap steps are the script's job (it stages and swaps itself), and the
 * plan's verify step is the script's built-in verifier. A config.ini the plan
 * writes into the converter output (the JAX slim converter writes none) is
 * shipped and named in CONFIG_INI, which the script installs after converting.
 */
export function convertArgv(
  plan: Plan,
): Pick<BuildPlans["convert"], "consolidateArgv" | "relayoutArgv" | "convertArgv" | "fp16Argv"> {
  const c = plan.conversion;
  const map: Array<[string, string]> = [
    [c.work.source, "{{SRC}}"],
    [c.work.stage, c.family === "codegen" ? "{{RELAYOUT_OUT}}" : "{{CONSOLIDATE_OUT}}"],
    [c.work.convertTmp, "{{OUT}}"],
    // The fp16 rewrite's input check reads a shipped copy (the plan folder is mounted read-only).
    [c.work.expectedWeightsAnyType, EXPECTED_ANY_TYPE_REMOTE],
  ];
  const exec = (id: string): string[] => {
    const step = c.steps.find((s) => s.id === id);
    return step && step.kind === "exec" ? toPlaceholders(step.argv, map) : [];
  };
  const known = new Set([
    "clean",
    "expected-weights",
    "expected-weights-any-type",
    "consolidate",
    "codegen-to-gptj",
    "convert",
    "config-ini",
    "fp16",
    "verify",
    "swap-prepare",
    "swap-ensure",
    "swap-aside",
    "swap-in",
    "swap-cleanup",
  ]);
  const unknown = c.steps.filter((s) => !known.has(s.id)).map((s) => s.id);
  if (unknown.length > 0)
    throw new Error(`conversion plan has steps the convert script cannot run: ${unknown.join(", ")}`);
  const converterArgv = exec("convert");
  if (converterArgv.length === 0) throw new Error("conversion plan has no convert step");
  return {
    consolidateArgv: exec("consolidate"),
    relayoutArgv: exec("codegen-to-gptj"),
    convertArgv: converterArgv,
    fp16Argv: exec("fp16"),
  };
}

/** Where the JAX slim plan's config.ini is shipped on the builder. */
export const CONFIG_INI_REMOTE = `${REMOTE.plan}/config.ini`;
/** Where the dtype-agnostic expected-weights list (the fp16 rewrite's input check) is shipped. */
export const EXPECTED_ANY_TYPE_REMOTE = `${REMOTE.plan}/expected-weights.any-type.json`;

export function buildPlansFor(
  stack: ResolvedStack,
  plan: Plan = buildPlan(stack),
): { plans: BuildPlans; extraFiles: Array<{ remotePath: string; content: string }> } {
  const c = plan.conversion;
  const m = stack.model;
  const files = tokenizerFiles(m.preset);
  const shipped = (id: string, remotePath: string) => {
    const step = c.steps.find((s) => s.id === id);
    return step && step.kind === "write-file" ? [{ remotePath, content: step.content }] : [];
  };
  const configIniFile = shipped("config-ini", CONFIG_INI_REMOTE);
  const extraFiles = [...configIniFile, ...shipped("expected-weights-any-type", EXPECTED_ANY_TYPE_REMOTE)];
  const tokenizerDir = `${c.work.root}/tokenizer`;
  const tokenizer = m.tokenizerSource
    ? {
        repo: m.tokenizerSource.repo,
        revision: m.tokenizerSource.revision,
        dir: tokenizerDir,
        files: [...files.required, ...files.optional],
        required: files.required,
      }
    : undefined;
  const expectedFiles =
    m.source.kind === "archive" ? Array.from({ length: JAX_SLIM_SHARDS }, (_, i) => `shard_${i}/*`) : files.required;
  const repo = plan.modelRepository;
  return {
    plans: {
      fetch: {
        modelDir: c.work.source,
        expectedFiles,
        hfInclude: HF_INCLUDE,
        hfExclude: HF_EXCLUDE,
        archiveSubdir: m.source.kind === "archive" ? archiveSubdir(m.source.url) : undefined,
        tokenizer,
        expectedArch: { family: m.family, ...m.arch },
      },
      convert: {
        outputDir: c.work.ft,
        tensorParallel: c.tensorParallel,
        ...convertArgv(plan),
        configIni: configIniFile[0]?.remotePath,
        expectedWeights: plan.expectedWeights,
        helperScripts: convertHelpers(plan),
      },
      gemm: { binary: plan.gemm.argv[0] ?? "", args: plan.gemm.argv.slice(1), output: plan.gemm.output },
      bake: {
        checkpointPath: repo.checkpointPath,
        serverWorkdir: plan.launch.workingDir,
        modelRepositoryPath: repo.root,
        tokenizerPath: repo.tokenizerPath,
        tokenizerSourceDir: tokenizer ? tokenizer.dir : c.work.source,
        tokenizerFiles: files.required,
        tokenizerOptionalFiles: files.optional,
        launchArgv: plan.launch.argv,
        cudaVisibleDevices: plan.launch.env.CUDA_VISIBLE_DEVICES ?? "0",
        modelRepository: Object.fromEntries(repo.files.map((f) => [f.path, f.content])),
      },
    },
    extraFiles,
  };
}

/** Repo-relative project scripts the conversion argv run (so editing one re-runs convert). */
function convertHelpers(plan: Plan): string[] {
  const used = new Set<string>();
  for (const s of plan.conversion.steps) {
    if (s.kind !== "exec") continue;
    for (const a of s.argv) {
      const m = /\/scripts\/(convert\/[\w.-]+\.py)$/.exec(a);
      if (m?.[1]) used.add(`scripts/${m[1]}`);
    }
  }
  return [...used].sort();
}

export interface BuildSteps {
  steps: StepDefinition[];
  hashes: Record<StepId, string>;
}

/** The step graph of a stack, with each step's input hash. */
export function buildSteps(stack: ResolvedStack, hashPath: PathHasher = repoPathHasher(REPO_ROOT)): BuildSteps {
  const { plans, extraFiles } = buildPlansFor(stack);
  const steps = stepDefinitions(stack, plans).map((s) =>
    s.id === "convert" ? { ...s, files: [...s.files, ...extraFiles] } : s,
  );
  return { steps, hashes: stepInputHashes(steps, hashPath) };
}
