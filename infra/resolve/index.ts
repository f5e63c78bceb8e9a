/**
 * Semantic validation of a parsed stack config into the resolved stack
 * (infra/config/stack.ts) that the plan is computed from. Runs before any resource is registered; it
 * collects every problem so a bad stack file is fixed in one round trip.
 *
 * This file runs the rules in order; each group lives in its own file:
 * model.ts (which model, pinned where), fit.ts (does it fit the hardware),
 * access.ts (who can reach what), cluster.ts (what it runs on), limits.ts
 * (what AWS, Kubernetes or the Hub would refuse), aws.ts (Regions, ARNs, EKS
 * zones, reserved and case-colliding tag keys: once per stack), idleGpus.ts
 * (GPUs paid for and never used), report.ts (how problems are reported). The
 * derived values the rules check live beside them: network.ts,
 * clusterAccess.ts, nodeShape.ts, workload.ts, scaling.ts; the plan reads them
 * from here (docs/architecture.md "Layers").
 */
import { isoDate } from "../catalog/eks";
import { findGpuInstance } from "../catalog/gpus";
import { builderDiskGiB, nodeDiskGiB, vllmBuilderDiskGiB, type GpuMemoryEstimate } from "../model/sizing";
import { autoscalingPlanProblem } from "./scaling";
import { touchesDropped } from "../config/issues";
import { PROJECT, parseConfig, type ConfigProblem, type SecretPresence, type Add } from "../config/schema";
import type { GemmShape, ResolvedCanary, ResolvedStack } from "../config/stack";
import { checkAccess, checkConsumerModels } from "./access";
import { checkEksZones, checkRegion, checkRegionalArns, checkReservedTagKeys, checkTagKeyCase } from "./aws";
import { checkIdleGpus } from "./idleGpus";
import { checkAutoscaling, checkCluster, checkNetwork, checkPlatform } from "./cluster";
import {
  checkArchitecture,
  checkBuilder,
  checkCapacity,
  checkGpuMemory,
  checkInt8Mode,
  checkNodeDisk,
  checkSameGpu,
  checkServingFits,
  checkTensorParallel,
  knownInstance,
} from "./fit";
import {
  checkCidrCounts,
  checkExposureWarnings,
  checkGemm,
  checkNames,
  checkNamespace,
  checkNodeGroupSize,
  checkRepoId,
  checkSshKey,
  checkStackReference,
  checkTags,
  checkVolumes,
} from "./limits";
import { resolveModel } from "./model";
import { buildsOnCpu, canaryNamedAfter, modelViews, type ModelView } from "../config/models";
import { checkCanary } from "./canary";
import { checkPromotion, checkTritonWithFtFrom, isBuildOnlyKey, isPromoted } from "./promotion";
import { resolveVllm } from "./vllm";
import {
  checkBuilderOwners,
  checkCpuBuilder,
  checkEngineFamily,
  checkEngineSettings,
  checkEngineSource,
  checkVllm,
} from "./engine";
import type { ResolvedVllm } from "../config/stack";

export { ConfigError, formatProblems, formatWarnings } from "./report";

export interface ResolveOptions {
  /** ISO date the EKS support windows are judged at; today (UTC) by default. */
  today?: string;
  /**
   * The Pulumi stack name: the program builds AWS and Kubernetes names from
   * it (naming.ts), so with it given those names are checked too.
   */
  stackName?: string;
  /**
   * `aws:region`, the AWS provider's Region: with it, the Region itself, the
   * Region of ARNs, the AZs EKS can use and the price of idle GPUs are checked.
   */
  region?: string;
}

/** The resolved models of a stack, first to last as the config lists them (a one-model stack has one). */
export interface ResolvedModels {
  /** The first model: the whole stack of a one-model stack. */
  stack?: ResolvedStack;
  /** Every model, each in the one-model shape. */
  models?: ResolvedStack[];
  problems: ConfigProblem[];
  warnings: ConfigProblem[];
}

/**
 * Parse and validate raw config values; returns the resolved models or every
 * problem found. Each model of `triton-ft:models` is validated as a one-model
 * stack of its own (infra/config/models.ts), its problems named where they
 * were written (`models.<id>.<key>`); a stack-wide problem is reported once.
 */
export function resolveStack(
  raw: Record<string, unknown>,
  secrets: SecretPresence,
  opts: ResolveOptions = {},
): ResolvedModels {
  const parsed = parseConfig(raw);
  // The Region is not a triton-ft key: checked whatever the namespace's values are.
  const regionProblems: ConfigProblem[] = [];
  checkRegion(opts.region, (key, value, message, fix) => regionProblems.push({ key, value, message, fix }));
  if (!parsed.config) return { problems: [...parsed.problems, ...regionProblems], warnings: [] };
  const problems: ConfigProblem[] = [...parsed.problems, ...regionProblems];
  const warnings: ConfigProblem[] = [];
  const seen = new Set<string>();
  const collect =
    (into: ConfigProblem[]): Add =>
    (key, value, message, fix) => {
      const full = `${PROJECT}:${key}`;
      // A rule about a value the schema refused (and replaced by its default) would only confuse.
      if (touchesDropped(full, parsed.dropped)) return;
      // Stack-wide rules run once per model: say each once.
      const id = `${full}\u0000${message}`;
      if (seen.has(id)) return;
      seen.add(id);
      into.push({ key: full, value, message, fix });
    };
  const add = collect(problems);
  const warn = collect(warnings);
  const views = modelViews(parsed.config, raw, add);
  // Every model on vLLM: one CPU builder for the stack (issue 37), and the GPU builder's keys refused once.
  const cpuBuilder = buildsOnCpu(parsed.config);
  if (cpuBuilder) checkCpuBuilder(raw, add);
  const models: ResolvedStack[] = [];
  for (const view of views) {
    const mapped =
      (to: Add): Add =>
      (key, value, message, fix) =>
        to(view.keyOf(key), value, message, fix);
    // Reported under the stack name itself, which is not a config key.
    const addName: Add = (key, value, message, fix) => {
      const id = `${key}\u0000${message}`;
      if (seen.has(id)) return;
      seen.add(id);
      problems.push({ key, value, message, fix });
    };
    const stack = resolveModelView(view, secrets, opts, mapped(add), mapped(warn), addName, cpuBuilder);
    // models.<id>.canary: the canary is resolved as a model of its own view, then checked as a second build.
    const named = stack ? canaryNamedAfter(view, stack.model.name) : view;
    const canary = named.canary
      ? resolveCanary(named, views, secrets, opts, add, warn, addName, cpuBuilder)
      : undefined;
    if (stack && view.canary && !canary) continue;
    if (stack) models.push(canary ? { ...stack, canary } : stack);
  }
  // Teams' model scopes name the stack's models: every model id, so checked once for the stack.
  const first = views[0];
  // What AWS's geography and its controllers refuse is about the stack: checked once.
  if (first) {
    checkRegionalArns(first.config, opts.region, add);
    checkEksZones(first.config, opts.region, add);
    checkTagKeyCase(first.config, add);
    checkReservedTagKeys(first.config, add);
  }
  const served = first?.id !== undefined ? views.map((v) => v.id ?? "") : models.map((m) => m.model.name);
  if (first && served.length > 0) checkConsumerModels(first.config, served, add);
  if (models.length > 1) checkBuilderOwners(models, add);
  if (problems.length > 0 || models.length === 0 || models.length !== views.length) return { problems, warnings };
  return { stack: models[0], models, problems, warnings };
}

/** A model's canary: its rules as a second build, and its own view validated as a model. */
function resolveCanary(
  view: ModelView,
  views: readonly ModelView[],
  secrets: SecretPresence,
  opts: ResolveOptions,
  add: Add,
  warn: Add,
  addName: Add,
  cpuBuilder: boolean,
): ResolvedCanary | undefined {
  const canary = view.canary;
  if (!canary) return undefined;
  let failed = false;
  const addAndFail: Add = (...args) => {
    failed = true;
    add(...args);
  };
  checkCanary(
    view,
    views.map((v) => v.id ?? ""),
    addAndFail,
  );
  const own = canary.view;
  const mapped =
    (to: Add): Add =>
    (key, value, message, fix) =>
      to(own.keyOf(key), value, message, fix);
  const stack = resolveModelView(own, secrets, opts, mapped(addAndFail), mapped(warn), addName, cpuBuilder);
  if (failed || !stack) return undefined;
  const c = canary.settings;
  return { stack, weight: c.weight, rollback: c.rollback, promote: c.promote };
}

/** One model's view, validated as a one-model stack; `cpuBuilder`: the stack builds on a CPU builder (buildsOnCpu). */
function resolveModelView(
  view: ModelView,
  secrets: SecretPresence,
  opts: ResolveOptions,
  add: Add,
  warn: Add,
  addName: Add,
  cpuBuilder: boolean,
): ResolvedStack | undefined {
  const { config, raw } = view;
  let failed = false;
  const addAndFail: Add = (...args) => {
    failed = true;
    add(...args);
  };
  // A promoted stack (build.promoteFrom) builds nothing: the rules about building are left out.
  const promoted = isPromoted(config);
  const forBuild =
    (to: Add): Add =>
    (key, value, message, fix) => {
      if (!(promoted && isBuildOnlyKey(key))) to(key, value, message, fix);
    };
  const model = resolveModel(config, addAndFail);
  const servingInstance = knownInstance(config.serving.instanceType, "serving.instanceType", addAndFail);
  // On a CPU-built stack the key is refused where it is set (checkCpuBuilder): not checked again as a GPU type.
  const builderInstance = cpuBuilder
    ? findGpuInstance(config.build.builderInstanceType)
    : knownInstance(config.build.builderInstanceType, "build.builderInstanceType", addAndFail);
  checkPlatform(config, opts.today ?? isoDate(new Date()), forBuild(addAndFail), forBuild(warn));
  checkPromotion(raw, config, addAndFail);
  checkTritonWithFtFrom(config, addAndFail);
  checkAccess(config, secrets, addAndFail);
  checkCluster(config, secrets, addAndFail);
  checkNetwork(config, addAndFail);
  checkAutoscaling(raw, config, addAndFail);
  // What AWS, Kubernetes or the Hub would refuse mid-deploy, refused here.
  checkTags(config, addAndFail, warn);
  checkVolumes(config, addAndFail);
  checkRepoId(config, addAndFail, warn);
  checkNamespace(config, addAndFail);
  const engine = config.model.engine ?? "ft";
  checkEngineSettings(raw, engine, addAndFail);
  if (engine === "ft") checkGemm(config, addAndFail);
  checkCidrCounts(config, addAndFail);
  checkSshKey(config, addAndFail);
  checkStackReference(config, addAndFail);
  checkExposureWarnings(config, warn);
  if (servingInstance) checkNodeGroupSize(config, servingInstance, addAndFail);
  const gemm: GemmShape = {
    batchSize: config.gemm.batchSize ?? config.serving.maxBatchSize,
    beamWidth: config.gemm.beamWidth,
    maxInputLen: config.gemm.maxInputLen ?? config.serving.maxInputLen,
  };
  let memory: GpuMemoryEstimate | undefined;
  let vllm: ResolvedVllm | undefined;
  if (model) {
    checkArchitecture(config, model, gemm, addAndFail);
    checkTensorParallel(config, model, servingInstance, addAndFail);
    checkEngineFamily(config, model, engine, addAndFail);
    checkEngineSource(model, engine, addAndFail);
    if (engine === "ft") {
      checkInt8Mode(config, model, servingInstance, addAndFail);
      if (servingInstance) memory = checkGpuMemory(config, model, gemm, servingInstance, addAndFail);
    } else if (servingInstance) {
      vllm = resolveVllm(config, model, servingInstance);
      memory = checkVllm(config, model, servingInstance, vllm, addAndFail);
    }
    if (builderInstance && !promoted)
      checkBuilder(config, model, builderInstance, servingInstance, addAndFail, engine, cpuBuilder);
    checkNodeDisk(config, model, addAndFail);
    if (opts.stackName !== undefined)
      checkNames(opts.stackName, model.name, (...a) => ((failed = true), addName(...a)), addAndFail);
  }
  // gpt_gemm's GPU rule: a CPU-built stack runs no gemm and launches no GPU builder.
  if (servingInstance && builderInstance && !promoted && !cpuBuilder)
    checkSameGpu(servingInstance, builderInstance, addAndFail);
  if (servingInstance) checkCapacity(config, servingInstance, warn);
  if (servingInstance && model) checkIdleGpus(config, servingInstance, opts.region, warn);

  if (failed || !model || !servingInstance || !builderInstance || !memory) return undefined;
  const stack: ResolvedStack = {
    config,
    engine,
    ...(vllm ? { vllm } : {}),
    model,
    servingInstance,
    builderInstance,
    ...(cpuBuilder ? { cpuBuilder: true as const } : {}),
    gemm,
    memory,
    builderDiskGiB:
      config.build.builderDiskGiB ??
      (cpuBuilder ? vllmBuilderDiskGiB([model]) : builderDiskGiB(model.family, model.arch)),
    nodeDiskGiB: config.cluster.nodeRootVolumeGiB ?? nodeDiskGiB(model.family, model.arch),
    secrets,
  };
  checkServingFits(stack, addAndFail);
  // Needs the resolved stack: the scaling plan is derived from the workload's cold start.
  const scaling = autoscalingPlanProblem(stack);
  if (scaling) addAndFail(scaling.key, scaling.value, scaling.message, scaling.fix);
  return failed ? undefined : stack;
}
