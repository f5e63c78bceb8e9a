/**
 * The remote build steps of a stack, one function per step: which script
 * each runs, the step config it reads, the files it consumes, the steps it
 * waits for and its time budget. Every value comes from the plan's sections
 * (fetch, conversion, expected weights, gemm, launch, model repository); the
 * graph machinery (config rendering, hashes, order) is in stepGraph.ts.
 *
 * Pure: no Pulumi. The Pulumi program turns each definition into a
 * `remote.Command` whose triggers are the step's input hash, and `synth` writes
 * the same definitions to plan.json, so what a preview would re-run can be read
 * offline.
 */
import { compileHostFor } from "../catalog/compileHosts";
import { GPU_MODELS, smList } from "../catalog/gpus";
import { parameterCount } from "../model/catalog";
import { isFtFamily } from "../model/types";
import { HOST_READY_FREE_DISK_GIB, bakeFreeDiskGiB, fetchFreeDiskGiB } from "../model/sizing";
import type { ResolvedStack } from "../config";
import { stepBudgetMinutes, type BudgetInputs } from "./budgets";
import {
  CONVERT_FILES,
  CONVERT_PHASE_KEYS,
  conversionFiles,
  conversionHelpers,
  type ConversionPlan,
  verifierArgv,
} from "./conversion";
import type { FetchPlan } from "./fetch";
import type { GemmPlan } from "./gemm";
import type { LaunchPlan } from "./launch";
import { REMOTE } from "./paths";
import type { ConfigValue, GeneratedFile, StepDefinition, StepId, StepTimeouts } from "./stepGraph";
import type { ExpectedWeights } from "./weights";

/** The plan sections the step definitions are built from. */
export interface StepSources {
  stack: ResolvedStack;
  fetch: FetchPlan;
  conversion: ConversionPlan;
  expectedWeights: ExpectedWeights;
  gemm: GemmPlan;
  launch: LaunchPlan;
  modelRepository: { root: string; tokenizerPath: string; checkpointPath: string; files: GeneratedRepoFile[] };
  /** CUDA archs triton_with_ft is built for: every GPU of the stack (all its models). */
  smList: number[];
}
interface GeneratedRepoFile {
  path: string;
  content: string;
}

const SCRIPT = (name: string) => `scripts/remote/${name}.sh`;
const PLAN_FILE = (name: string) => `${REMOTE.plan}/${name}`;
const REGION = { deploy: "awsRegion" } as const;
const TRITON_IMAGE = { deploy: "tritonWithFtImage" } as const;
const WORK_ROOT: [string, ConfigValue] = ["WORK_ROOT", REMOTE.root];
const MODEL_REPOSITORY_DIR = PLAN_FILE("model-repository");

export function timeouts(minutes: number): StepTimeouts {
  const t = `${minutes}m`;
  return { create: t, update: t, delete: "10m" };
}

/**
 * Per-step time budgets (minutes): BUDGET_FACTOR × an estimate of each step's
 * work (infra/plan/budgets.ts). The conversion estimate comes from the measured
 * rates of the real FT converters plus the image pull; the others from assumed
 * transfer rates and the FT compile's core-hours. A hung step fails in minutes.
 */
export function stepMinutes(stack: ResolvedStack, sms: readonly number[]): Record<StepId, number> {
  return stepBudgetMinutes(budgetInputs(stack, sms));
}

/**
 * What the budgets (and the cost module's time estimate) are computed from: one stack's model, its
 * builder, and the compile host the plan picks for the SM list triton_with_ft is built for.
 */
export function budgetInputs(stack: ResolvedStack, sms: readonly number[]): BudgetInputs {
  return {
    family: stack.model.family,
    parameters: parameterCount(stack.model.family, stack.model.arch),
    vcpus: stack.builderInstance.vcpus,
    compile: { smCount: sms.length, vcpus: compileHostFor(sms).vcpus },
    gemm: stack.gemm,
    source: stack.model.source.kind,
  };
}

const json = (value: unknown) => JSON.stringify(value, null, 2) + "\n";

/** The verifier's list, shipped once and read by convert and bake. */
function expectedWeightsFile(src: StepSources): GeneratedFile {
  return { remotePath: CONVERT_FILES.expectedWeights, content: json(src.expectedWeights) };
}

export function hostReadyStep(src: Pick<StepSources, "stack">, minutes: number): StepDefinition {
  const builder = src.stack.builderInstance;
  return {
    id: "host-ready",
    title: "wait for cloud-init; check GPUs, Docker + NVIDIA runtime, disk; git-lfs; ECR login",
    script: SCRIPT("host-ready"),
    dependsOn: [],
    config: [
      WORK_ROOT,
      ["AWS_REGION", REGION],
      ["ECR_REGISTRY", { deploy: "ecrRegistry" }],
      // Model-independent on purpose (see HOST_READY_FREE_DISK_GIB); fetch checks the model's own disk needs.
      ["REQUIRED_FREE_GIB", HOST_READY_FREE_DISK_GIB],
      ["EXPECTED_GPU_NAME", GPU_MODELS[builder.gpuModel].nvidiaSmiName],
      ["EXPECTED_GPU_COUNT", builder.gpuCount],
    ],
    inputs: [],
    files: [],
    secretEnv: [],
    producesImage: false,
    timeouts: timeouts(minutes),
  };
}

/**
 * The CUDA archs triton_with_ft is built for: the serving GPUs and the builder's (it runs gpt_gemm in the image).
 * A promoted stack (build.promoteFrom) has no builder: the serving GPU's alone, which is the building
 * stack's list too, since its builder must have the serving GPU model (validate/fit.ts checkSameGpu).
 */
export function stackSmList(
  stack: Pick<ResolvedStack, "servingInstance" | "builderInstance"> & {
    config?: { build: { promoteFrom?: unknown } };
  },
): number[] {
  return smList(
    stack.config?.build.promoteFrom ? [stack.servingInstance] : [stack.servingInstance, stack.builderInstance],
  );
}

function tritonWithFtStep(src: StepSources, minutes: number): StepDefinition {
  return {
    id: "triton-with-ft",
    title: "build triton_with_ft from the pinned backend and FT commits for the serving GPU; push",
    script: SCRIPT("build-triton-with-ft"),
    // Runs on the compile host (catalog/compileHosts.ts). Its hash still covers the GPU builder's host check,
    // which keeps every live stack's step hashes, but it does not wait for it: the SM list comes from the
    // configured instance types, not from the builder's GPU, and the compile host has its own readiness check.
    dependsOn: ["host-ready"],
    runsAfter: [],
    host: "compiler",
    config: contentTagConfig(src),
    inputs: ["images/triton_with_ft"],
    files: [],
    secretEnv: [],
    producesImage: true,
    timeouts: timeouts(minutes),
  };
}

/**
 * The inputs of triton_with_ft's content tag, in its step's config order (its
 * hash renders them so): the compile's config, and the layers steps' too
 * (scripts/remote/twf/tags.sh computes the tag as build-triton-with-ft.sh
 * does), so they find the full image's tag and name the layers alike.
 */
function contentTagConfig(src: StepSources): Array<[string, ConfigValue]> {
  const b = src.stack.config.build;
  return [
    WORK_ROOT,
    ["AWS_REGION", REGION],
    ["ECR_REPOSITORY_URL", { deploy: "tritonWithFtRepositoryUrl" }],
    ["TRITON_VERSION", b.tritonVersion],
    ["FT_BACKEND_COMMIT", b.backendCommit ?? ""],
    ["FT_COMMIT", b.ftCommit ?? ""],
    ["SM_LIST", src.smList.join(",")],
    ["DOCKERFILE_DIR", `${REMOTE.images}/triton_with_ft`],
  ];
}

/** The shared helper both layers steps source besides lib.sh (outside lib/, which every step's hash covers). */
export const TWF_TAGS_SCRIPT = "scripts/remote/twf/tags.sh";

/**
 * triton_with_ft's recipe layers (the NGC base, apt, pip) built on the compile
 * host beside the compile and pushed under their own tag, so the full image's
 * push moves only the compile's layers. A new step: no existing step's
 * definition or hash changes with it (plan/budgets.ts RECIPE_LAYERS).
 */
function twfLayersStep(src: StepSources, minutes: number): StepDefinition {
  return {
    id: "twf-layers",
    title: "build triton_with_ft's recipe layers (base, apt, pip) beside the compile; push them under their own tag",
    script: SCRIPT("build-twf-layers"),
    // Waits only for the compile host's readiness (the pipeline's host setup), as the compile does.
    dependsOn: [],
    host: "compiler",
    config: contentTagConfig(src),
    inputs: ["images/triton_with_ft", TWF_TAGS_SCRIPT],
    files: [],
    secretEnv: [],
    producesImage: false,
    timeouts: timeouts(minutes),
  };
}

/** The recipe layers pulled onto the GPU builder before gemm pulls the full image by digest. */
function twfLayersPullStep(src: StepSources, minutes: number): StepDefinition {
  return {
    id: "twf-layers-pull",
    title: "pull triton_with_ft's recipe layers onto the builder while the compile runs",
    script: SCRIPT("pull-twf-layers"),
    dependsOn: ["twf-layers"],
    // On the builder: after its host check (docker, the ECR login) too.
    runsAfter: ["host-ready", "twf-layers"],
    config: contentTagConfig(src),
    inputs: ["images/triton_with_ft", TWF_TAGS_SCRIPT],
    files: [],
    secretEnv: [],
    producesImage: false,
    timeouts: timeouts(minutes),
  };
}

function fetchSourceConfig(src: Pick<StepSources, "stack" | "fetch">): Array<[string, ConfigValue]> {
  const m = src.stack.model;
  const f = src.fetch;
  if (m.source.kind === "huggingface") {
    return [
      ["SOURCE_KIND", "hf"],
      ["HF_REPO_ID", m.source.repo],
      ["HF_REVISION", m.source.revision],
      ["HF_INCLUDE", f.hfInclude],
      ["HF_EXCLUDE", f.hfExclude],
    ];
  }
  return [
    ["SOURCE_KIND", "archive"],
    ["ARCHIVE_URL", m.source.url],
    ["ARCHIVE_SHA256", m.source.sha256],
    ...(f.archiveSubdir ? ([["ARCHIVE_SUBDIR", f.archiveSubdir]] as Array<[string, ConfigValue]>) : []),
  ];
}

function fetchTokenizerConfig(src: Pick<StepSources, "fetch">): Array<[string, ConfigValue]> {
  const tok = src.fetch.tokenizer;
  return tok
    ? [
        ["TOKENIZER_REPO_ID", tok.repo],
        ["TOKENIZER_REVISION", tok.revision],
        ["TOKENIZER_DIR", tok.dir],
        ["TOKENIZER_INCLUDE", tok.files],
        ["TOKENIZER_REQUIRED", tok.required],
      ]
    : [];
}

/**
 * `requiredFreeGiB`: the free disk fetch insists on.
 * @default the GPU builder's model-derived footprint (model/sizing.ts fetchFreeDiskGiB)
 */
export function fetchStep(
  src: Pick<StepSources, "stack" | "fetch">,
  minutes: number,
  requiredFreeGiB?: number,
): StepDefinition {
  const m = src.stack.model;
  const archFile: GeneratedFile = {
    remotePath: PLAN_FILE("expected-arch.json"),
    content: json(src.fetch.expectedArch),
  };
  return {
    id: "fetch",
    title: "download the model at its pinned revision and verify it",
    script: SCRIPT("fetch"),
    // Deliberately not after triton-with-ft: downloading runs on the host while the image builds.
    dependsOn: ["host-ready"],
    config: [
      WORK_ROOT,
      ...fetchSourceConfig(src),
      ["MODEL_DIR", src.fetch.modelDir],
      ...fetchTokenizerConfig(src),
      ["EXPECTED_FILES", src.fetch.expectedFiles],
      // The JAX slim archive has no config.json to check; its shapes are fixed by its converter.
      // A llama model's config is checked by the vLLM bake (check_llama_config.py): this script stays FT's.
      ...(m.source.kind === "huggingface" && isFtFamily(m.family)
        ? ([
            ["CHECK_FAMILY", m.family],
            ["CHECK_EXPECTED_JSON", archFile.remotePath],
          ] as Array<[string, ConfigValue]>)
        : []),
      ["REQUIRED_FREE_GIB", requiredFreeGiB ?? fetchFreeDiskGiB(m.family, m.arch)],
    ],
    inputs: ["scripts/convert/check_model_config.py"],
    files: [archFile],
    secretEnv: ["HF_TOKEN"],
    producesImage: false,
    timeouts: timeouts(minutes),
  };
}

/** `recipeLayersAhead`: as for gemm, convert's pull of the full image waits for the recipe layers' pull (outside its hash). */
function convertStep(src: StepSources, minutes: number, recipeLayersAhead: boolean): StepDefinition {
  const c = src.conversion;
  const p = c.phases;
  const K = CONVERT_PHASE_KEYS;
  const weightsFile = expectedWeightsFile(src);
  return {
    id: "convert",
    title: "convert to FT weights inside triton_with_ft, then verify the weight set",
    script: SCRIPT("convert"),
    dependsOn: ["triton-with-ft", "fetch"],
    ...(recipeLayersAhead ? { runsAfter: ["triton-with-ft", "fetch", "twf-layers-pull"] as StepId[] } : {}),
    config: [
      WORK_ROOT,
      ["IMAGE", TRITON_IMAGE],
      ["AWS_REGION", REGION],
      ["SOURCE_DIR", c.sourceDir],
      ["OUTPUT_DIR", c.outputDir],
      ["TP", c.tensorParallel],
      // Every phase convert.sh executes, as the plan states it (CONVERT_PHASE_KEYS names one key per phase).
      [K.consolidate, p.consolidate?.argv ?? []],
      [K.relayout, p.relayout?.argv ?? []],
      [K.convert, p.convert.argv],
      [K.fp16, p.fp16?.argv ?? []],
      [K.verify, p.verify.argv],
      ["EXPECTED_WEIGHTS_JSON", weightsFile.remotePath],
      ...(p.configIni ? ([[K.configIni, p.configIni.remotePath]] as Array<[string, ConfigValue]>) : []),
      // The same files as `inputs`: convert.sh's marker hash and the step hash agree.
      ["CONVERT_HELPERS", conversionHelpers(c)],
    ],
    inputs: conversionHelpers(c),
    files: [weightsFile, ...conversionFiles(c, src.expectedWeights)],
    secretEnv: [],
    producesImage: false,
    timeouts: timeouts(minutes),
  };
}

/**
 * `recipeLayersAhead`: the twf-layers steps run (this stack compiles its own
 * triton_with_ft), and gemm waits for their pull, outside its hash.
 */
function gemmStep(src: StepSources, minutes: number, recipeLayersAhead: boolean): StepDefinition {
  const g = src.gemm;
  return {
    id: "gemm",
    title: "tune GEMMs with the image's gpt_gemm on the builder GPU",
    script: SCRIPT("gemm"),
    // Needs only the image and the architecture numbers, not the weights.
    dependsOn: ["triton-with-ft"],
    // Runs on the builder: after its host check too, which the compile no longer waits for; and after the
    // recipe layers' pull, so that its pull of the full image moves only the compile's layers.
    runsAfter: ["host-ready", "triton-with-ft", ...(recipeLayersAhead ? (["twf-layers-pull"] as StepId[]) : [])],
    config: [
      WORK_ROOT,
      ["IMAGE", TRITON_IMAGE],
      ["AWS_REGION", REGION],
      ["GEMM_BINARY", g.argv[0] ?? ""],
      ["GEMM_ARGV", g.argv.slice(1)],
      ["GEMM_OUTPUT", g.output],
    ],
    inputs: [],
    files: [],
    secretEnv: [],
    producesImage: false,
    timeouts: timeouts(minutes),
  };
}

function bakeStep(src: StepSources, minutes: number): StepDefinition {
  const m = src.stack.model;
  const repo = src.modelRepository;
  const weightsFile = expectedWeightsFile(src);
  const modelRepoFiles: GeneratedFile[] = [...repo.files]
    .sort((a, c) => a.path.localeCompare(c.path))
    .map((f) => ({ remotePath: `${MODEL_REPOSITORY_DIR}/${f.path}`, content: f.content }));
  return {
    id: "bake",
    title: "build the server image FROM triton_with_ft@digest with weights, gemm_config.in, models, tokenizer; push",
    script: SCRIPT("bake"),
    // convert ran the weight verifier; fetch holds the tokenizer files.
    dependsOn: ["triton-with-ft", "fetch", "convert", "gemm"],
    config: [
      WORK_ROOT,
      ["AWS_REGION", REGION],
      ["BASE_IMAGE", TRITON_IMAGE],
      ["ECR_REPOSITORY_URL", { deploy: "serverRepositoryUrl" }],
      ["DOCKERFILE_DIR", `${REMOTE.images}/server`],
      ["WEIGHTS_DIR", src.conversion.checkpointDir],
      ["EXPECTED_WEIGHTS_JSON", weightsFile.remotePath],
      // The same verifier command as convert's last phase, on the installed weights.
      ["VERIFY_ARGV", verifierArgv(src.conversion.checkpointDir)],
      ["CHECKPOINT_PATH", repo.checkpointPath],
      ["GEMM_CONFIG", src.gemm.output],
      ["SERVER_WORKDIR", src.launch.workingDir],
      ["MODEL_REPOSITORY_DIR", MODEL_REPOSITORY_DIR],
      ["MODEL_REPOSITORY_PATH", repo.root],
      ["PYTHON_PACKAGE_DIR", `${REMOTE.images}/server/python`],
      ["PYTHON_MODELS_DIR", `${REMOTE.images}/server/model_repository`],
      ["TOKENIZER_SOURCE_DIR", src.fetch.tokenizerSourceDir],
      ["TOKENIZER_FILES", src.fetch.tokenizerFiles.required],
      ["TOKENIZER_OPTIONAL_FILES", src.fetch.tokenizerFiles.optional],
      ["TOKENIZER_PATH", repo.tokenizerPath],
      ["LAUNCH_ARGV", src.launch.argv],
      ["LAUNCH_CUDA_VISIBLE_DEVICES", src.launch.env.CUDA_VISIBLE_DEVICES ?? "0"],
      ["REQUIRED_FREE_GIB", bakeFreeDiskGiB(m.family, m.arch)],
    ],
    inputs: ["images/server", "scripts/convert/verify_weights.py"],
    files: [weightsFile, ...modelRepoFiles],
    secretEnv: [],
    producesImage: true,
    timeouts: timeouts(minutes),
  };
}

/** The gateway image: model-independent, so no model change ever rebuilds it. */
export function gatewayImageStep(minutes: number): StepDefinition {
  return {
    id: "gateway-image",
    title: "build the gateway image (images/gateway) and push it, tagged by the content hash of its sources",
    script: SCRIPT("build-gateway-image"),
    dependsOn: ["host-ready"],
    config: [
      WORK_ROOT,
      ["AWS_REGION", REGION],
      ["ECR_REPOSITORY_URL", { deploy: "gatewayRepositoryUrl" }],
      ["DOCKERFILE_DIR", `${REMOTE.images}/gateway`],
    ],
    inputs: ["images/gateway"],
    files: [],
    secretEnv: [],
    producesImage: true,
    timeouts: timeouts(minutes),
  };
}

/**
 * The steps of the build graph, from the plan's sections: the seven that make
 * the images, and the two that move triton_with_ft's recipe layers ahead of the
 * compile, unless triton_with_ft is taken from another stack
 * (build.tritonWithFtFrom: nothing is compiled, so nothing to move ahead).
 */
export function stepDefinitions(src: StepSources): StepDefinition[] {
  const minutes = stepMinutes(src.stack, src.smList);
  const layersAhead = src.stack.config.build.tritonWithFtFrom === undefined;
  return [
    hostReadyStep(src, minutes["host-ready"]),
    // Before the compile in the graph's order as they are on the hosts: the layers are pushed and pulled while it runs.
    ...(layersAhead
      ? [twfLayersStep(src, minutes["twf-layers"]), twfLayersPullStep(src, minutes["twf-layers-pull"])]
      : []),
    tritonWithFtStep(src, minutes["triton-with-ft"]),
    fetchStep(src, minutes.fetch),
    convertStep(src, minutes.convert, layersAhead),
    gemmStep(src, minutes.gemm, layersAhead),
    bakeStep(src, minutes.bake),
    gatewayImageStep(minutes["gateway-image"]),
  ];
}
