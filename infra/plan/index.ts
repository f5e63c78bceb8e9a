/**
 * The one plan: everything derived from a resolved stack, computed once by the
 * composition roots (infra/program.ts for `pulumi up`, scripts/synth.ts
 * offline). The components receive slices of it and never recompute; `synth`
 * writes it as plan.json (`planDocument`).
 *
 *   config -> resolved stack (validate.ts) -> plan (here) -> artifacts (render/) -> resources (components/) -> outputs
 */
import { ftServing } from "../model/family";
import type { Family, ModelArch } from "../model/types";

import { renderModelRepository, type RenderedRepository, type RepositoryOptions } from "./modelRepository";
import type { ResolvedStack } from "../config/stack";
import { conversionPlan, type ConversionPlan } from "./conversion";
import { fetchPlan, type FetchPlan } from "./fetch";
import { gemmPlan, type GemmPlan } from "./gemm";
import { launchPlan, vllmLaunchPlan, type LaunchPlan } from "./launch";
import { maxPromptBytes } from "./modelRepository";
import { renderVllmRepository, type ShippedTree } from "./vllmRepository";
import { vllmBaseImage, vllmStepDefinitions } from "./vllmSteps";
import { cpuBuilderPlan, type CpuBuilderPlan } from "./cpuBuilder";
import type { ResolvedVllm } from "../config/stack";
import {
  MODEL_REPOSITORY_DIR,
  TOKENIZER_DIR,
  VLLM_MODEL_DIR,
  builderWorkTree,
  serverCheckpointPath,
  type BuilderWorkTree,
} from "./paths";
import { stepInputHashes, topologicalOrder, type PathHasher, type StepDefinition, type StepId } from "./stepGraph";
import { MODEL_STEP_IDS, scopeSteps } from "./scope";
import { stackSmList, stepDefinitions } from "./steps";
import { expectedWeights, type ExpectedWeights } from "./weights";
import { fingerprintOf, imageFingerprint, type ImageFingerprint } from "./fingerprint";
import { planWorkload, type WorkloadPlan } from "../resolve/workload";
import { stackAutoscalingPlan, type AutoscalingPlan } from "../resolve/scaling";

import { CANARY_NODE_TAINT_KEY, MODEL_NODE_LABEL_KEY } from "../conventions/workload";
import type { ScalingInput, WorkloadInput } from "./types";
import { workloadInput, scalingInput } from "./renderInputs";
export const PLAN_SCHEMA_VERSION = 1;

/** FT's custom all-reduce only helps at TP 8 over NVSwitch (p4d/p4de); elsewhere it is slower or unsupported. */
export const CUSTOM_ALL_REDUCE_TP = 8;

export interface Plan {
  schemaVersion: number;
  model: {
    name: string;
    preset?: string;
    family: Family;
    /** FT's model_type; absent for a vLLM model. */
    ftModelType?: string;
    source: ResolvedStack["model"]["source"];
    tokenizerSource?: { repo: string; revision: string };
    arch: ModelArch;
    /** Token ids the Python models use; pad_id is end_id (FT pads finished beams with end_id). */
    tokens: { startId: number; endId: number; padId: number };
  };
  serving: {
    instanceType: string;
    gpuModel: string;
    tensorParallel: number;
    maxBatchSize: number;
    maxInputLen: number;
    maxOutputLen: number;
    customAllReduce: boolean;
    dynamicBatching: boolean;
    /** FT decoupled: the ensemble streams (a Python BLS model then runs its steps). */
    streaming: boolean;
    /** Estimated memory per GPU, GiB (weights + KV cache + headroom). */
    gpuMemoryGiB: { weights: number; kvCache: number; headroom: number; total: number };
  };
  build: {
    tritonVersion: string;
    backendCommit: string;
    ftCommit: string;
    builderInstanceType: string;
    builderDiskGiB: number;
    /** CUDA archs (FT `-DSM`) triton_with_ft is compiled for: every GPU that runs the image. */
    smList: number[];
    /**
     * build.tritonWithFtFrom: the stack whose triton_with_ft this one takes by
     * digest; the triton-with-ft step is then hashed (its consumers' hashes are
     * the building stack's) but never run here.
     */
    tritonWithFtFrom?: string;
  };
  fetch: FetchPlan;
  /** FT only: the conversion convert.sh runs. */
  conversion?: ConversionPlan;
  /** FT only: the verifier's list, what a complete conversion holds (shipped to convert and bake). */
  expectedWeights?: ExpectedWeights;
  /** FT only: gpt_gemm. */
  gemm?: GemmPlan;
  launch: LaunchPlan;
  modelRepository: RenderedRepository & {
    /** Absolute path in the server image. */
    root: string;
    tokenizerPath: string;
    checkpointPath: string;
    /** vLLM: repository files copied in beside the rendered config (model.py and its packages). */
    shipped?: ShippedTree[];
  };
  /**
   * A vLLM model (issue 37): its engine settings and the digest-pinned base of its
   * server image. Absent for an FT model, whose plan.json stays as it was.
   */
  vllm?: { engine: "vllm"; settings: ResolvedVllm; baseImage: string };
  /** The Kubernetes workload's numbers (resolve/workload.ts). */
  kubernetes: WorkloadPlan;
  /** With serving.autoscaling: the scaling numbers (resolve/scaling.ts). */
  autoscaling?: AutoscalingPlan;
  /** The remote build steps in graph order, each with its input hash. */
  buildSteps: BuildStep[];
  /**
   * What the model's server image is built from (plan/fingerprint.ts): the bake step's hashed inputs
   * and its upstream steps', minus deploy-time values; a promoted stack serves an image only when the
   * building stack exported the same `fingerprint`.
   */
  image: { fingerprint: string; document: ImageFingerprint };
  /**
   * The sections above arranged as each renderer takes them (all but the
   * images, known after the bake), so the composition roots and synth render
   * from the plan and never reassemble an input. Not in plan.json: every
   * number in it is already there (`PLAN_DOCUMENT_OMITS`).
   */
  renderInputs: RenderInputs;
}

/** An FT model's plan: the conversion, the expected weights and gpt_gemm are there. */
export type FtPlan = Plan & Required<Pick<Plan, "conversion" | "expectedWeights" | "gemm">>;

/** `plan` as an FT model's; throws for a vLLM model's (a bug in the caller, not a config mistake). */
export function ftPlan(plan: Plan): FtPlan {
  const { conversion, expectedWeights, gemm } = plan;
  if (!conversion || !expectedWeights || !gemm) throw new Error(`model ${plan.model.name} is not served by FT`);
  return { ...plan, conversion, expectedWeights, gemm };
}

export interface RenderInputs {
  /** The Triton workload (render/tritonManifests.ts). */
  triton: WorkloadInput;
  /** The model's own autoscaling and GPU nodes, and its share of the observability (render/scaling.ts). */
  scaling: ScalingInput;
}

/** Plan keys plan.json leaves out: derived arrangements of the keys it shows. */
export const PLAN_DOCUMENT_OMITS = ["renderInputs"] as const satisfies ReadonlyArray<keyof Plan>;

export interface BuildStep extends StepDefinition {
  inputHash: string;
}

const GiB = 1024 ** 3;
const gib = (bytes: number) => Math.round((bytes / GiB) * 100) / 100;

export function repositoryOptions(stack: ResolvedStack): RepositoryOptions {
  const s = stack.config.serving;
  const a = stack.model.arch;
  return {
    family: stack.model.family,
    tensorParallel: s.tensorParallel,
    maxBatchSize: s.maxBatchSize,
    maxInputLen: s.maxInputLen,
    maxOutputLen: s.maxOutputLen,
    checkpointPath: serverCheckpointPath(s.tensorParallel),
    tokenizerPath: TOKENIZER_DIR,
    startId: a.startId,
    endId: a.endId,
    padId: a.endId,
    customAllReduce: s.tensorParallel === CUSTOM_ALL_REDUCE_TP && stack.servingInstance.nvswitch,
    vocab: a.vocab,
    decoupled: s.streaming,
    ...(s.int8Mode ? { int8Mode: s.int8Mode } : {}),
  };
}

/**
 * The plan of a resolved stack. `stackName` labels the workload (two stacks in
 * one cluster stay apart); `hashPath` hashes repository files (the step
 * scripts, images/, scripts/convert/) for the build steps' input hashes; the
 * composition roots inject the file-system one (infra/repoFiles.ts).
 */
/** How a model's plan sits in a stack of several (infra/plan/stack.ts); a one-model stack passes none. */
export interface PlanOptions {
  /**
   * A further model on a builder that converts several: its model steps move
   * under its id (plan/scope.ts). Unset for the first model and one-model stacks.
   */
  scope?: string;
  /**
   * CUDA archs of the triton_with_ft this model's convert, gemm and bake use: its builder's, built for every
   * model that builder converts (one GPU family). Default: this model's serving and builder GPUs.
   */
  smList?: number[];
  /** The builder's root volume when it converts several models. Default: this model's. */
  builderDiskGiB?: number;
  /**
   * A vLLM-only stack's CPU builder (plan/cpuBuilder.ts): the model's steps run there, with its host check.
   * @default none: the model builds on its GPU model's builder
   */
  cpuBuilder?: CpuBuilderPlan;
  /**
   * Which steps this model's pipeline runs: every step (the first model's,
   * which also builds the gateway image), the host check, its builder's
   * triton_with_ft and its model steps (first model on a builder of its own),
   * or only its model steps.
   */
  steps?: "all" | "builder-and-model" | "model";
  /** The stack serves several models: each gets GPU nodes of its own (conventions/workload.ts MODEL_NODE_LABEL_KEY). */
  severalModels?: boolean;
  /**
   * A canary in a one-model stack (plan/canary.ts): its GPU nodes carry a taint
   * of its own (conventions/workload.ts CANARY_NODE_TAINT_KEY) that its pods
   * tolerate, since the stable pods select no model label.
   * @default false: no taint but the GPU one
   */
  ownNodesTaint?: boolean;
  /**
   * Whether the cluster has the Prometheus Operator, decided for the whole
   * stack: one autoscaled model installs it, and then every model's Triton gets
   * its ServiceMonitor (its dashboard row and alerts read those series).
   * Default: this model's own settings decide (config/autoscaling.ts prometheusOperatorPresent).
   */
  prometheusOperator?: boolean;
  /**
   * A canary's build (plan/canary.ts): where its steps read and write on the
   * builder (the stable's folders for the steps it shares with the stable, its
   * own for the others), and the shared steps' hashes, which its own steps'
   * hashes cover. The shared steps are not in its buildSteps: the stable's
   * pipeline runs them.
   * @default none: the model's own work tree, every step hashed and run here
   */
  canary?: { workTree: BuilderWorkTree; shared: Partial<Record<StepId, string>> };
}

/** The steps a builder runs once for every model it hosts: its host check, triton_with_ft and its recipe layers. */
const BUILDER_STEP_IDS: readonly StepId[] = ["host-ready", "triton-with-ft", "twf-layers", "twf-layers-pull"];

const PIPELINE_STEPS: Record<NonNullable<PlanOptions["steps"]>, (id: StepId) => boolean> = {
  all: () => true,
  "builder-and-model": (id) => BUILDER_STEP_IDS.includes(id) || MODEL_STEP_IDS.includes(id),
  model: (id) => MODEL_STEP_IDS.includes(id),
};

/** The renderers' inputs of a model's plan, whichever engine serves it: assembled here, once. */
function renderInputsOf(
  stack: ResolvedStack,
  stackName: string,
  launch: LaunchPlan,
  workload: WorkloadPlan,
  autoscaling: AutoscalingPlan | undefined,
  opts: PlanOptions,
): RenderInputs {
  const name = stack.model.name;
  const triton: WorkloadInput = {
    ...workloadInput(stack, stackName, launch, workload),
    ...(opts.prometheusOperator !== undefined ? { serviceMonitor: opts.prometheusOperator } : {}),
    ...(opts.severalModels ? { modelNodeLabel: { key: MODEL_NODE_LABEL_KEY, value: name } } : {}),
    ...(opts.ownNodesTaint ? { nodeTaint: { key: CANARY_NODE_TAINT_KEY, value: name } } : {}),
  };
  return { triton, scaling: scalingInput(stack, triton, autoscaling) };
}

/** The plan's `serving` section: the same for both engines but for how the engine batches and reduces. */
function servingSection(
  stack: ResolvedStack,
  engine: Pick<Plan["serving"], "customAllReduce" | "dynamicBatching">,
): Plan["serving"] {
  const s = stack.config.serving;
  const m = stack.memory;
  return {
    instanceType: stack.servingInstance.type,
    gpuModel: stack.servingInstance.gpuModel,
    tensorParallel: s.tensorParallel,
    maxBatchSize: s.maxBatchSize,
    maxInputLen: s.maxInputLen,
    maxOutputLen: s.maxOutputLen,
    customAllReduce: engine.customAllReduce,
    dynamicBatching: engine.dynamicBatching,
    streaming: s.streaming,
    gpuMemoryGiB: {
      weights: gib(m.weightsBytes),
      kvCache: gib(m.kvCacheBytes),
      headroom: gib(m.headroomBytes),
      total: gib(m.totalBytes),
    },
  };
}

/** The plan's `build` section (a vLLM model never takes triton_with_ft from another stack). */
function buildSection(
  stack: ResolvedStack,
  opts: PlanOptions,
  smList: Plan["build"]["smList"],
  taken: string | undefined,
): Plan["build"] {
  const b = stack.config.build;
  return {
    tritonVersion: b.tritonVersion,
    backendCommit: b.backendCommit ?? "",
    ftCommit: b.ftCommit ?? "",
    builderInstanceType: opts.cpuBuilder?.instanceType ?? stack.builderInstance.type,
    builderDiskGiB: opts.cpuBuilder?.diskGiB ?? opts.builderDiskGiB ?? stack.builderDiskGiB,
    smList,
    ...(taken ? { tritonWithFtFrom: taken } : {}),
  };
}

/** The plan's build steps that this pipeline runs, each with its input hash, and the image's fingerprint: both engines. */
function stepsSection(
  steps: Parameters<typeof topologicalOrder>[0],
  runs: (id: StepId) => boolean,
  hashes: ReturnType<typeof stepInputHashes>,
  fingerprint: Parameters<typeof fingerprintOf>[0],
): Pick<Plan, "buildSteps" | "image"> {
  return {
    buildSteps: topologicalOrder(steps)
      .filter((st) => runs(st.id))
      .map((st) => ({ ...st, inputHash: hashes[st.id] })),
    image: { fingerprint: fingerprintOf(fingerprint), document: fingerprint },
  };
}

export function buildPlan(stack: ResolvedStack, stackName: string, hashPath: PathHasher, opts: PlanOptions = {}): Plan {
  if (stack.vllm) return buildVllmPlan(stack, stack.vllm, stackName, hashPath, opts);
  const { model, config } = stack;
  const smList = opts.smList ?? stackSmList(stack);
  const tp = config.serving.tensorParallel;
  const repo = repositoryOptions(stack);
  const work = opts.canary?.workTree ?? builderWorkTree(model.name);
  const expected = expectedWeights(model.family, model.arch, tp);
  const fetch = fetchPlan(model, work);
  const conversion = conversionPlan(model, tp, stack.builderInstance, work);
  const gemm = gemmPlan(model.arch, stack.gemm, tp, work.gemm);
  const launch = launchPlan(tp);
  const workload = planWorkload(stack);
  const autoscaling = stackAutoscalingPlan(stack, workload);
  const inputs = renderInputsOf(stack, stackName, launch, workload, autoscaling, opts);
  const modelRepository = {
    root: MODEL_REPOSITORY_DIR,
    tokenizerPath: repo.tokenizerPath,
    checkpointPath: repo.checkpointPath,
    ...renderModelRepository(repo),
  };
  const defined = stepDefinitions({
    stack,
    fetch,
    conversion,
    expectedWeights: expected,
    gemm,
    launch,
    modelRepository,
    smList,
  });
  const steps = opts.scope ? scopeSteps(defined, opts.scope) : defined;
  // Unscoped: the same model fingerprints alike whether it is its stack's first or not.
  const fingerprint = imageFingerprint(defined, hashPath);
  // Hashed as one graph (a model's convert hashes the shared triton_with_ft step), then cut to this pipeline's.
  const shared = opts.canary?.shared ?? {};
  const hashes = stepInputHashes(steps, hashPath, shared);
  const pipelineRuns = PIPELINE_STEPS[opts.steps ?? "all"];
  const taken = config.build.tritonWithFtFrom?.stackReference;
  const runs = (id: StepId) => pipelineRuns(id) && !(taken && id === "triton-with-ft") && shared[id] === undefined;
  return {
    schemaVersion: PLAN_SCHEMA_VERSION,
    model: {
      name: model.name,
      preset: model.preset,
      family: model.family,
      ftModelType: ftServing(model.family).modelType,
      source: model.source,
      tokenizerSource: model.tokenizerSource,
      arch: model.arch,
      tokens: { startId: repo.startId, endId: repo.endId, padId: repo.padId },
    },
    serving: servingSection(stack, {
      customAllReduce: repo.customAllReduce,
      dynamicBatching: ftServing(model.family).dynamicBatching,
    }),
    build: buildSection(stack, opts, smList, taken),
    fetch,
    conversion,
    expectedWeights: expected,
    gemm,
    launch,
    modelRepository,
    kubernetes: workload,
    ...(autoscaling ? { autoscaling } : {}),
    ...stepsSection(steps, runs, hashes, fingerprint),
    renderInputs: inputs,
  };
}

/**
 * The plan of a vLLM model (issue 37): the same sections where they apply
 * (fetch, launch, model repository, workload, steps, fingerprint), no
 * conversion, expected weights or gemm. Its steps: host-ready, fetch, bake
 * (FROM the pinned Triton-with-vLLM image) and, for the stack's first model,
 * the gateway image; never triton-with-ft.
 */
function buildVllmPlan(
  stack: ResolvedStack,
  vllm: ResolvedVllm,
  stackName: string,
  hashPath: PathHasher,
  opts: PlanOptions,
): Plan {
  const { model, config } = stack;
  const s = config.serving;
  const smList = opts.smList ?? stackSmList(stack);
  // A CPU-built stack's model planned on its own (a stack of one) gets its own CPU builder.
  const cpu = opts.cpuBuilder ?? (stack.cpuBuilder ? cpuBuilderPlan([stack]) : undefined);
  const tp = s.tensorParallel;
  const work = opts.canary?.workTree ?? builderWorkTree(model.name);
  const fetch = fetchPlan(model, work);
  const launch = vllmLaunchPlan(tp);
  const workload = planWorkload(stack);
  const autoscaling = stackAutoscalingPlan(stack, workload);
  const inputs = renderInputsOf(stack, stackName, launch, workload, autoscaling, opts);
  const rendered = renderVllmRepository({
    modelPath: VLLM_MODEL_DIR,
    device: "cuda",
    dtype: vllm.dtype,
    tensorParallel: vllm.tensorParallel,
    gpuMemoryUtilization: vllm.gpuMemoryUtilization,
    maxModelLen: vllm.maxModelLen,
    kvCacheGiB: vllm.kvCacheGiB,
    maxNumSeqs: vllm.maxNumSeqs,
    maxInputLen: s.maxInputLen,
    maxOutputLen: s.maxOutputLen,
    maxPromptBytes: maxPromptBytes(s.maxInputLen),
    maxLogprobs: vllm.maxLogprobs,
  });
  const modelRepository = {
    root: MODEL_REPOSITORY_DIR,
    tokenizerPath: VLLM_MODEL_DIR,
    checkpointPath: VLLM_MODEL_DIR,
    ...rendered,
  };
  const defined = vllmStepDefinitions({
    stack,
    fetch,
    launch,
    modelRepository,
    smList,
    ...(cpu ? { cpuBuilder: true } : {}),
  });
  const steps = opts.scope ? scopeSteps(defined, opts.scope) : defined;
  const fingerprint = imageFingerprint(defined, hashPath);
  const shared = opts.canary?.shared ?? {};
  const hashes = stepInputHashes(steps, hashPath, shared);
  const pipelineRuns = PIPELINE_STEPS[opts.steps ?? "all"];
  const runs = (id: StepId) => pipelineRuns(id) && shared[id] === undefined;
  const a = model.arch;
  return {
    schemaVersion: PLAN_SCHEMA_VERSION,
    model: {
      name: model.name,
      preset: model.preset,
      family: model.family,
      source: model.source,
      tokenizerSource: model.tokenizerSource,
      arch: a,
      tokens: { startId: a.startId, endId: a.endId, padId: a.endId },
    },
    // vLLM batches inside the model (one decoupled instance); Triton's dynamic batcher is not used.
    serving: servingSection(stack, { customAllReduce: false, dynamicBatching: false }),
    build: buildSection(stack, { ...opts, ...(cpu ? { cpuBuilder: cpu } : {}) }, smList, undefined),
    fetch,
    launch,
    modelRepository,
    vllm: { engine: "vllm", settings: vllm, baseImage: vllmBaseImage() },
    kubernetes: workload,
    ...(autoscaling ? { autoscaling } : {}),
    ...stepsSection(steps, runs, hashes, fingerprint),
    renderInputs: inputs,
  };
}
