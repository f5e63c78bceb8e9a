/**
 * The remote build steps as data: which script each runs, the step config file
 * it reads (bash `KEY='value'` lines and arrays), the files it consumes, the
 * steps it waits for, its time budget, and the hash of all of that.
 *
 * Pure: no Pulumi. The Pulumi program turns each definition into a
 * `remote.Command` whose triggers are the step's input hash, and `synth` writes
 * the same definitions to plan.json, so what a preview would re-run can be read
 * offline.
 *
 * Incrementality rests on the hash: a step's hash covers its script, lib.sh, the
 * files it reads, its rendered config and the hashes of the steps whose output
 * it consumes. Serving-only keys (replicas, load balancer) reach no step config,
 * so they re-run nothing; a model change reaches fetch and flows down to bake;
 * the Triton version reaches triton_with_ft and flows down to everything after.
 */
import { parameterCount } from "../model/catalog";
import { builderDiskGiB, GiB, TRITON_WITH_FT_IMAGE_BYTES } from "../model/sizing";
import type { ResolvedStack } from "../validate";
import { BUILDER_ROOT } from "./paths";
import { sha256 } from "./contentHash";

export const STEP_IDS = ["host-ready", "triton-with-ft", "fetch", "convert", "gemm", "bake"] as const;
export type StepId = (typeof STEP_IDS)[number];

/** Layout on the builder. Scripts and images land where the plans expect them (paths.ts). */
export const REMOTE = {
  root: BUILDER_ROOT,
  scripts: `${BUILDER_ROOT}/scripts`,
  images: `${BUILDER_ROOT}/images`,
  steps: `${BUILDER_ROOT}/steps`,
  plan: `${BUILDER_ROOT}/plan`,
} as const;

/** Source trees shipped verbatim; `remoteParent` receives the folder under its own name. */
export const SHIPPED_TREES = [
  { local: "scripts/remote", remoteParent: REMOTE.scripts },
  { local: "scripts/convert", remoteParent: REMOTE.scripts },
  { local: "images", remoteParent: REMOTE.root },
] as const;

/** Environment variables that carry secrets: set through the SSH session, accepted by the builder's sshd. */
export const SECRET_ENV = ["HF_TOKEN"] as const;
export type SecretEnv = (typeof SECRET_ENV)[number];

/** Values known only once AWS resources exist; rendered as `@{name}` placeholders offline. */
export const DEPLOY_VALUES = [
  "awsRegion",
  "ecrRegistry",
  "tritonWithFtRepositoryUrl",
  "serverRepositoryUrl",
  "tritonWithFtImage",
] as const;
export type DeployValue = (typeof DEPLOY_VALUES)[number];

export type ConfigValue = string | number | readonly string[] | { deploy: DeployValue };

export interface GeneratedFile {
  /** Absolute path on the builder. */
  remotePath: string;
  content: string;
}

export interface StepTimeouts {
  create: string;
  update: string;
  delete: string;
}

export interface StepDefinition {
  id: StepId;
  title: string;
  /** Repo-relative path of the step script. */
  script: string;
  /** Steps whose output this step consumes (or which must have prepared the host). */
  dependsOn: StepId[];
  /** Step config entries in file order. */
  config: Array<[string, ConfigValue]>;
  /** Repo-relative files or folders the step reads besides its script and lib.sh. */
  inputs: string[];
  /** Rendered files the step reads, shipped next to the step config. */
  files: GeneratedFile[];
  secretEnv: SecretEnv[];
  /** The step prints `RESULT image=<ref>` for the image it pushed. */
  producesImage: boolean;
  timeouts: StepTimeouts;
}

/** What the step definitions need from the plans (conversion, gemm, weights, launch, model repository). */
export interface BuildPlans {
  fetch: {
    /** Absolute folder of the fetched checkpoint on the builder. */
    modelDir: string;
    /** Paths or globs relative to modelDir a complete download holds. */
    expectedFiles: string[];
    hfInclude: string[];
    hfExclude: string[];
    archiveSubdir?: string;
    /** Separate tokenizer source (archive checkpoints ship none). */
    tokenizer?: { repo: string; revision: string; dir: string; files: string[]; required: string[] };
    /** Architecture the downloaded config.json must state (checked by check_model_config.py). */
    expectedArch: Record<string, unknown>;
  };
  convert: {
    /** Final converted root; the weights end up in `<outputDir>/<TP>-gpu`. */
    outputDir: string;
    tensorParallel: number;
    consolidateArgv: string[];
    relayoutArgv: string[];
    convertArgv: string[];
    fp16Argv: string[];
    /** Shipped config.ini for converters that write none. */
    configIni?: string;
    /** Verifier input (ExpectedWeights JSON). */
    expectedWeights: unknown;
    /** Repo-relative helper scripts the argv run (hashed into the step). */
    helperScripts: string[];
  };
  gemm: { binary: string; args: string[]; output: string };
  bake: {
    checkpointPath: string;
    serverWorkdir: string;
    modelRepositoryPath: string;
    tokenizerPath: string;
    tokenizerSourceDir: string;
    tokenizerFiles: string[];
    tokenizerOptionalFiles: string[];
    launchArgv: string[];
    cudaVisibleDevices: string;
    /** Rendered model repository: path relative to the repository root → content. */
    modelRepository: Record<string, string>;
  };
}

const SCRIPT = (name: string) => `scripts/remote/${name}.sh`;
export const LIB_SCRIPT = "scripts/remote/lib.sh";

/** The remote path of a step's config file. */
export function stepConfigPath(id: StepId): string {
  return `${REMOTE.steps}/${id}.conf`;
}

/** The command a step's resource runs: the script with its config file, nothing secret. */
export function stepCommand(step: StepDefinition): string {
  return `bash ${REMOTE.root}/${step.script} ${stepConfigPath(step.id)}`;
}

/** nvidia-smi's name for each catalog GPU model (a substring of `--query-gpu=name`). */
export const NVIDIA_SMI_NAME: Record<ResolvedStack["builderInstance"]["gpuModel"], string> = {
  A10G: "A10G",
  "A100-40GB": "A100-SXM4-40GB",
  "A100-80GB": "A100-SXM4-80GB",
};

/** Minutes, rounded up, for `bytes` at `bytesPerSecond`. */
function minutesFor(bytes: number, bytesPerSecond: number): number {
  return Math.ceil(bytes / bytesPerSecond / 60);
}

function timeouts(minutes: number): StepTimeouts {
  const t = `${minutes}m`;
  return { create: t, update: t, delete: "10m" };
}

/**
 * Per-step time budgets (minutes), from the model size and the builder's cores.
 * - triton_with_ft: base image pull and pip installs (~60 min) plus the FT
 *   compile, about 16 core-hours, so 960 / vCPUs minutes: 5.5 h on 4 vCPUs,
 *   2.5 h on 16. Always above an hour.
 * - fetch: the checkpoint at up to 4 bytes per parameter, at a pessimistic
 *   25 MB/s, plus 20 min.
 * - convert: pulling triton_with_ft (30 min) plus the fp32 CPU conversion at
 *   about 1 min per 100 M parameters.
 * - gemm: image pull plus gpt_gemm's sweep, which grows with batch × input length.
 * - bake: building and pushing the server image (base + fp16 weights) at
 *   a pessimistic 25 MB/s, plus 30 min.
 */
export function stepMinutes(stack: ResolvedStack): Record<StepId, number> {
  const p = parameterCount(stack.model.family, stack.model.arch);
  const slow = 25e6;
  return {
    "host-ready": 45,
    "triton-with-ft": 60 + Math.ceil(960 / stack.builderInstance.vcpus) + 30,
    fetch: 20 + minutesFor(p * 4, slow),
    convert: 30 + Math.ceil(p / 1e8) + 15,
    gemm: 45 + Math.ceil((stack.gemm.batchSize * stack.gemm.beamWidth * stack.gemm.maxInputLen) / 256),
    bake: 30 + minutesFor(TRITON_WITH_FT_IMAGE_BYTES + p * 2, slow),
  };
}

/**
 * Free disk host-ready insists on: the model-derived builder footprint before
 * its 50 % headroom and the 40 GiB OS allowance (see sizing.ts).
 */
export function requiredFreeGiB(stack: ResolvedStack): number {
  return Math.ceil((builderDiskGiB(stack.model.family, stack.model.arch) - 40) / 1.5);
}

/** Free disk host-ready insists on: the triton_with_ft image plus as much again for its build layers. */
export const HOST_READY_FREE_GIB = Math.ceil((2 * TRITON_WITH_FT_IMAGE_BYTES) / GiB);

/** The six steps of the build graph, from the resolved stack and its plans. */
export function stepDefinitions(stack: ResolvedStack, plans: BuildPlans): StepDefinition[] {
  const minutes = stepMinutes(stack);
  const region = { deploy: "awsRegion" } as const;
  const tritonImage = { deploy: "tritonWithFtImage" } as const;
  const workRoot: [string, ConfigValue] = ["WORK_ROOT", REMOTE.root];
  const b = stack.config.build;
  const m = stack.model;
  const plan = (name: string) => `${REMOTE.plan}/${name}`;
  const disk = requiredFreeGiB(stack);

  const archFile: GeneratedFile = { remotePath: plan("expected-arch.json"), content: json(plans.fetch.expectedArch) };
  const weightsFile: GeneratedFile = {
    remotePath: plan("expected-weights.json"),
    content: json(plans.convert.expectedWeights),
  };
  const modelRepoDir = plan("model-repository");
  const modelRepoFiles: GeneratedFile[] = Object.entries(plans.bake.modelRepository)
    .sort(([a], [c]) => a.localeCompare(c))
    .map(([rel, content]) => ({ remotePath: `${modelRepoDir}/${rel}`, content }));

  const fetchSource: Array<[string, ConfigValue]> =
    m.source.kind === "huggingface"
      ? [
          ["SOURCE_KIND", "hf"],
          ["HF_REPO_ID", m.source.repo],
          ["HF_REVISION", m.source.revision],
          ["HF_INCLUDE", plans.fetch.hfInclude],
          ["HF_EXCLUDE", plans.fetch.hfExclude],
        ]
      : [
          ["SOURCE_KIND", "archive"],
          ["ARCHIVE_URL", m.source.url],
          ["ARCHIVE_SHA256", m.source.sha256],
          ...(plans.fetch.archiveSubdir
            ? ([["ARCHIVE_SUBDIR", plans.fetch.archiveSubdir]] as Array<[string, ConfigValue]>)
            : []),
        ];
  const tok = plans.fetch.tokenizer;
  const fetchTokenizer: Array<[string, ConfigValue]> = tok
    ? [
        ["TOKENIZER_REPO_ID", tok.repo],
        ["TOKENIZER_REVISION", tok.revision],
        ["TOKENIZER_DIR", tok.dir],
        ["TOKENIZER_INCLUDE", tok.files],
        ["TOKENIZER_REQUIRED", tok.required],
      ]
    : [];

  return [
    {
      id: "host-ready",
      title: "wait for cloud-init; check GPUs, Docker + NVIDIA runtime, disk; git-lfs; ECR login",
      script: SCRIPT("host-ready"),
      dependsOn: [],
      config: [
        workRoot,
        ["AWS_REGION", region],
        ["ECR_REGISTRY", { deploy: "ecrRegistry" }],
        // Model-independent on purpose: host-ready precedes the triton_with_ft
        // build, so a model-derived number here would rebuild the image on every
        // model change. The model's own disk needs are checked by fetch.
        ["REQUIRED_FREE_GIB", HOST_READY_FREE_GIB],
        ["EXPECTED_GPU_NAME", NVIDIA_SMI_NAME[stack.builderInstance.gpuModel]],
        ["EXPECTED_GPU_COUNT", stack.builderInstance.gpuCount],
      ],
      inputs: [],
      files: [],
      secretEnv: [],
      producesImage: false,
      timeouts: timeouts(minutes["host-ready"]),
    },
    {
      id: "triton-with-ft",
      title: "build triton_with_ft from the pinned backend and FT commits for the serving GPU; push",
      script: SCRIPT("build-triton-with-ft"),
      dependsOn: ["host-ready"],
      config: [
        workRoot,
        ["AWS_REGION", region],
        ["ECR_REPOSITORY_URL", { deploy: "tritonWithFtRepositoryUrl" }],
        ["TRITON_VERSION", b.tritonVersion],
        ["FT_BACKEND_COMMIT", b.backendCommit ?? ""],
        ["FT_COMMIT", b.ftCommit ?? ""],
        ["SM_LIST", String(stack.servingInstance.sm)],
        ["DOCKERFILE_DIR", `${REMOTE.images}/triton_with_ft`],
      ],
      inputs: ["images/triton_with_ft"],
      files: [],
      secretEnv: [],
      producesImage: true,
      timeouts: timeouts(minutes["triton-with-ft"]),
    },
    {
      id: "fetch",
      title: "download the model at its pinned revision and verify it",
      script: SCRIPT("fetch"),
      // Deliberately not after triton-with-ft: downloading runs on the host while the image builds.
      dependsOn: ["host-ready"],
      config: [
        workRoot,
        ...fetchSource,
        ["MODEL_DIR", plans.fetch.modelDir],
        ...fetchTokenizer,
        ["EXPECTED_FILES", plans.fetch.expectedFiles],
        // The JAX slim archive has no config.json to check; its shapes are fixed by its converter.
        ...(m.source.kind === "huggingface"
          ? ([
              ["CHECK_FAMILY", m.family],
              ["CHECK_EXPECTED_JSON", archFile.remotePath],
            ] as Array<[string, ConfigValue]>)
          : []),
        ["REQUIRED_FREE_GIB", disk],
      ],
      inputs: ["scripts/convert/check_model_config.py"],
      files: [archFile],
      secretEnv: ["HF_TOKEN"],
      producesImage: false,
      timeouts: timeouts(minutes.fetch),
    },
    {
      id: "convert",
      title: "convert to FT weights inside triton_with_ft, then verify the weight set",
      script: SCRIPT("convert"),
      dependsOn: ["triton-with-ft", "fetch"],
      config: [
        workRoot,
        ["IMAGE", tritonImage],
        ["AWS_REGION", region],
        ["SOURCE_DIR", plans.fetch.modelDir],
        ["OUTPUT_DIR", plans.convert.outputDir],
        ["TP", plans.convert.tensorParallel],
        ["CONSOLIDATE_ARGV", plans.convert.consolidateArgv],
        ["RELAYOUT_ARGV", plans.convert.relayoutArgv],
        ["CONVERT_ARGV", plans.convert.convertArgv],
        ["FP16_ARGV", plans.convert.fp16Argv],
        ["EXPECTED_WEIGHTS_JSON", weightsFile.remotePath],
        ...(plans.convert.configIni ? ([["CONFIG_INI", plans.convert.configIni]] as Array<[string, ConfigValue]>) : []),
      ],
      inputs: ["scripts/convert/verify_weights.py", ...plans.convert.helperScripts],
      files: [weightsFile],
      secretEnv: [],
      producesImage: false,
      timeouts: timeouts(minutes.convert),
    },
    {
      id: "gemm",
      title: "tune GEMMs with the image's gpt_gemm on the builder GPU",
      script: SCRIPT("gemm"),
      // Needs only the image and the architecture numbers, not the weights.
      dependsOn: ["triton-with-ft"],
      config: [
        workRoot,
        ["IMAGE", tritonImage],
        ["AWS_REGION", region],
        ["GEMM_BINARY", plans.gemm.binary],
        ["GEMM_ARGV", plans.gemm.args],
        ["GEMM_OUTPUT", plans.gemm.output],
      ],
      inputs: [],
      files: [],
      secretEnv: [],
      producesImage: false,
      timeouts: timeouts(minutes.gemm),
    },
    {
      id: "bake",
      title: "build the server image FROM triton_with_ft@digest with weights, gemm_config.in, models, tokenizer; push",
      script: SCRIPT("bake"),
      // convert ran the weight verifier; fetch holds the tokenizer files.
      dependsOn: ["triton-with-ft", "fetch", "convert", "gemm"],
      config: [
        workRoot,
        ["AWS_REGION", region],
        ["BASE_IMAGE", tritonImage],
        ["ECR_REPOSITORY_URL", { deploy: "serverRepositoryUrl" }],
        ["DOCKERFILE_DIR", `${REMOTE.images}/server`],
        ["WEIGHTS_DIR", `${plans.convert.outputDir}/${plans.convert.tensorParallel}-gpu`],
        ["EXPECTED_WEIGHTS_JSON", weightsFile.remotePath],
        ["CHECKPOINT_PATH", plans.bake.checkpointPath],
        ["GEMM_CONFIG", plans.gemm.output],
        ["SERVER_WORKDIR", plans.bake.serverWorkdir],
        ["MODEL_REPOSITORY_DIR", modelRepoDir],
        ["MODEL_REPOSITORY_PATH", plans.bake.modelRepositoryPath],
        ["PYTHON_PACKAGE_DIR", `${REMOTE.images}/server/python`],
        ["PYTHON_MODELS_DIR", `${REMOTE.images}/server/model_repository`],
        ["TOKENIZER_SOURCE_DIR", plans.bake.tokenizerSourceDir],
        ["TOKENIZER_FILES", plans.bake.tokenizerFiles],
        ["TOKENIZER_OPTIONAL_FILES", plans.bake.tokenizerOptionalFiles],
        ["TOKENIZER_PATH", plans.bake.tokenizerPath],
        ["LAUNCH_ARGV", plans.bake.launchArgv],
        ["LAUNCH_CUDA_VISIBLE_DEVICES", plans.bake.cudaVisibleDevices],
        ["REQUIRED_FREE_GIB", Math.ceil((TRITON_WITH_FT_IMAGE_BYTES + 2 * parameterCount(m.family, m.arch) * 2) / GiB)],
      ],
      inputs: ["images/server", "scripts/convert/verify_weights.py"],
      files: [weightsFile, ...modelRepoFiles],
      secretEnv: [],
      producesImage: true,
      timeouts: timeouts(minutes.bake),
    },
  ];
}

function json(value: unknown): string {
  return JSON.stringify(value, null, 2) + "\n";
}

/** Single-quoted bash word: the only character needing care inside '' is ' itself. */
export function bashQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

const NAME = /^[A-Z][A-Z0-9_]*$/;

/**
 * The step config file. `resolve` supplies deploy-time values; offline callers
 * pass `placeholder` and get `@{name}` in their place.
 */
export function renderStepConfig(step: StepDefinition, resolve: (v: DeployValue) => string): string {
  const lines = [`# triton-ft step config for ${step.id} (${step.script}); generated, do not edit.`];
  for (const [key, value] of step.config) {
    if (!NAME.test(key)) throw new Error(`step ${step.id}: ${key} is not a shell variable name`);
    if (Array.isArray(value)) {
      lines.push(`${key}=(${(value as readonly string[]).map(bashQuote).join(" ")})`);
    } else if (typeof value === "object") {
      lines.push(`${key}=${bashQuote(resolve((value as { deploy: DeployValue }).deploy))}`);
    } else {
      lines.push(`${key}=${bashQuote(String(value))}`);
    }
  }
  return lines.join("\n") + "\n";
}

export const placeholder = (v: DeployValue): string => `@{${v}}`;

/** The deploy-time values a step's config uses, in a stable order. */
export function deployValuesOf(step: StepDefinition): DeployValue[] {
  const used = new Set<DeployValue>();
  for (const [, v] of step.config)
    if (typeof v === "object" && !Array.isArray(v)) used.add((v as { deploy: DeployValue }).deploy);
  return DEPLOY_VALUES.filter((v) => used.has(v));
}

/** Hash of a repo-relative file or folder's content (supplied by the caller: tests fake it). */
export type PathHasher = (repoRelativePath: string) => string;

/**
 * Input hash per step: script, lib.sh, consumed repo files, the rendered config
 * with deploy-time values as placeholders, generated files, and the hashes of
 * the steps it depends on (their outputs are its inputs). Deploy-time values
 * are added to the resource triggers separately, by value.
 */
export function stepInputHashes(steps: StepDefinition[], hashPath: PathHasher): Record<StepId, string> {
  const out = {} as Record<StepId, string>;
  for (const step of topologicalOrder(steps)) {
    const material = {
      id: step.id,
      script: [step.script, hashPath(step.script)],
      lib: hashPath(LIB_SCRIPT),
      inputs: step.inputs.map((p) => [p, hashPath(p)]),
      config: renderStepConfig(step, placeholder),
      files: step.files.map((f) => [f.remotePath, sha256(f.content)]),
      secretEnv: step.secretEnv,
      upstream: step.dependsOn.map((d) => [d, out[d]]),
    };
    out[step.id] = sha256(JSON.stringify(material));
  }
  return out;
}

/** Steps ordered so every step follows the steps it depends on; rejects cycles and unknown ids. */
export function topologicalOrder(steps: StepDefinition[]): StepDefinition[] {
  const byId = new Map(steps.map((s) => [s.id, s]));
  const done = new Set<StepId>();
  const visiting = new Set<StepId>();
  const order: StepDefinition[] = [];
  const visit = (s: StepDefinition) => {
    if (done.has(s.id)) return;
    if (visiting.has(s.id)) throw new Error(`build steps form a cycle through ${s.id}`);
    visiting.add(s.id);
    for (const d of s.dependsOn) {
      const dep = byId.get(d);
      if (!dep) throw new Error(`step ${s.id} depends on unknown step ${d}`);
      visit(dep);
    }
    visiting.delete(s.id);
    done.add(s.id);
    order.push(s);
  };
  steps.forEach(visit);
  return order;
}

/** Every step that (transitively) depends on `id`. */
export function downstreamOf(steps: StepDefinition[], id: StepId): StepId[] {
  const out = new Set<StepId>();
  let grew = true;
  while (grew) {
    grew = false;
    for (const s of steps) {
      if (!out.has(s.id) && s.dependsOn.some((d) => d === id || out.has(d))) {
        out.add(s.id);
        grew = true;
      }
    }
  }
  return STEP_IDS.filter((s) => out.has(s));
}

/** The `RESULT image=<ref>` line of a step's stdout; the last one wins. */
export function parseImageResult(stdout: string): string | undefined {
  let found: string | undefined;
  for (const line of stdout.split(/\r?\n/)) {
    const m = /^RESULT image=(\S+)\s*$/.exec(line);
    if (m) found = m[1];
  }
  return found;
}

/** Digest-pinned image reference `<repo>@sha256:<64 hex>`. */
export const DIGEST_REF = /^[a-z0-9.-]+(:\d+)?\/[a-z0-9._/-]+@sha256:[0-9a-f]{64}$/;

/** Parses and checks the image a step pushed; a missing or tag-only reference fails the update. */
export function requireImageResult(step: StepId, stdout: string): string {
  const ref = parseImageResult(stdout);
  if (!ref)
    throw new Error(`build step ${step} finished without printing "RESULT image=<ref>"; see its log on the builder`);
  if (!DIGEST_REF.test(ref))
    throw new Error(`build step ${step} printed image ${ref}, which is not pinned by digest (<repo>@sha256:<digest>)`);
  return ref;
}

/** What synth writes to plan.json for each step. */
export interface StepPlanEntry {
  id: StepId;
  title: string;
  script: string;
  args: string[];
  command: string;
  dependsOn: StepId[];
  inputHash: string;
  /** Config file content with deploy-time values as `@{name}`. */
  config: string;
  deployValues: DeployValue[];
  inputs: string[];
  files: string[];
  secretEnv: string[];
  timeouts: StepTimeouts;
}

export function stepPlanEntries(steps: StepDefinition[], hashPath: PathHasher): StepPlanEntry[] {
  const hashes = stepInputHashes(steps, hashPath);
  return topologicalOrder(steps).map((s) => ({
    id: s.id,
    title: s.title,
    script: s.script,
    args: [stepConfigPath(s.id)],
    command: stepCommand(s),
    dependsOn: s.dependsOn,
    inputHash: hashes[s.id],
    config: renderStepConfig(s, placeholder),
    deployValues: deployValuesOf(s),
    inputs: s.inputs,
    files: s.files.map((f) => f.remotePath),
    secretEnv: s.secretEnv,
    timeouts: s.timeouts,
  }));
}
