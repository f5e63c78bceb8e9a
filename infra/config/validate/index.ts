/**
 * Semantic validation of a parsed stack config into the resolved stack
 * (infra/config/stack.ts) that the plan is computed from. Runs before any resource is registered; it
 * collects every problem so a bad stack file is fixed in one round trip.
 *
 * This file runs the rules in order; each group lives in its own file:
 * model.ts (which model, pinned where), fit.ts (does it fit the hardware),
 * access.ts (who can reach what), cluster.ts (what it runs on), limits.ts
 * (what AWS, Kubernetes or the Hub would refuse), report.ts (how problems
 * are reported).
 */
import { isoDate } from "../../catalog/eks";
import { builderDiskGiB, nodeDiskGiB, type GpuMemoryEstimate } from "../../model/sizing";
import { autoscalingPlanProblem } from "../../plan/scaling";
import { touchesDropped } from "../issues";
import { PROJECT, parseConfig, type ConfigProblem, type SecretPresence } from "../schema";
import type { GemmShape, ResolvedStack } from "../stack";
import { checkAccess } from "./access";
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
import { checkPromotion, isBuildOnlyKey, isPromoted } from "./promotion";
import type { Add } from "./report";

export { ConfigError, formatProblems, formatWarnings } from "./report";

export interface ResolveOptions {
  /** ISO date the EKS support windows are judged at; today (UTC) by default. */
  today?: string;
  /**
   * The Pulumi stack name: the program builds AWS and Kubernetes names from
   * it (naming.ts), so with it given those names are checked too.
   */
  stackName?: string;
}

/** Parse and validate raw config values; returns the resolved stack or every problem found. */
export function resolveStack(
  raw: Record<string, unknown>,
  secrets: SecretPresence,
  opts: ResolveOptions = {},
): { stack?: ResolvedStack; problems: ConfigProblem[]; warnings: ConfigProblem[] } {
  const parsed = parseConfig(raw);
  if (!parsed.config) return { problems: parsed.problems, warnings: [] };
  const config = parsed.config;
  const problems: ConfigProblem[] = [...parsed.problems];
  const warnings: ConfigProblem[] = [];
  // Schema problems and rule problems are reported together; a rule about a
  // value the schema refused (and replaced by its default) would only confuse.
  const add: Add = (key, value, message, fix) => {
    const full = `${PROJECT}:${key}`;
    if (!touchesDropped(full, parsed.dropped)) problems.push({ key: full, value, message, fix });
  };
  const warn: Add = (key, value, message, fix) => {
    const full = `${PROJECT}:${key}`;
    if (!touchesDropped(full, parsed.dropped)) warnings.push({ key: full, value, message, fix });
  };

  // A promoted stack (build.promoteFrom) builds nothing: the rules about building are left out.
  const promoted = isPromoted(config);
  const forBuild =
    (to: Add): Add =>
    (key, value, message, fix) => {
      if (!(promoted && isBuildOnlyKey(key))) to(key, value, message, fix);
    };
  const model = resolveModel(config, add);
  const servingInstance = knownInstance(config.serving.instanceType, "serving.instanceType", add);
  const builderInstance = knownInstance(config.build.builderInstanceType, "build.builderInstanceType", add);
  checkPlatform(config, opts.today ?? isoDate(new Date()), forBuild(add), forBuild(warn));
  checkPromotion(raw, config, add);
  checkAccess(config, secrets, add);
  checkCluster(config, secrets, add);
  checkNetwork(config, add);
  checkAutoscaling(raw, config, add);
  // What AWS, Kubernetes or the Hub would refuse mid-deploy, refused here.
  checkTags(config, add, warn);
  checkVolumes(config, add);
  checkRepoId(config, add, warn);
  checkNamespace(config, add);
  checkGemm(config, add);
  checkCidrCounts(config, add);
  checkSshKey(config, add);
  checkStackReference(config, add);
  checkExposureWarnings(config, warn);
  if (servingInstance) checkNodeGroupSize(config, servingInstance, add);
  const gemm: GemmShape = {
    batchSize: config.gemm.batchSize ?? config.serving.maxBatchSize,
    beamWidth: config.gemm.beamWidth,
    maxInputLen: config.gemm.maxInputLen ?? config.serving.maxInputLen,
  };
  let memory: GpuMemoryEstimate | undefined;
  if (model) {
    checkArchitecture(config, model, gemm, add);
    checkTensorParallel(config, model, servingInstance, add);
    checkInt8Mode(config, model, servingInstance, add);
    if (servingInstance) memory = checkGpuMemory(config, model, gemm, servingInstance, add);
    if (builderInstance && !promoted) checkBuilder(config, model, builderInstance, servingInstance, add);
    checkNodeDisk(config, model, add);
    // Reported under the stack name itself, which is not a config key.
    const addName: Add = (key, value, message, fix) => problems.push({ key, value, message, fix });
    if (opts.stackName !== undefined) checkNames(opts.stackName, model.name, addName, add);
  }
  if (servingInstance && builderInstance && !promoted) checkSameGpu(servingInstance, builderInstance, add);
  if (servingInstance) checkCapacity(config, servingInstance, warn);

  if (problems.length > 0 || !model || !servingInstance || !builderInstance || !memory) return { problems, warnings };
  const stack: ResolvedStack = {
    config,
    model,
    servingInstance,
    builderInstance,
    gemm,
    memory,
    builderDiskGiB: config.build.builderDiskGiB ?? builderDiskGiB(model.family, model.arch),
    nodeDiskGiB: config.cluster.nodeRootVolumeGiB ?? nodeDiskGiB(model.family, model.arch),
    secrets,
  };
  checkServingFits(stack, add);
  // Needs the resolved stack: the scaling plan is derived from the workload's cold start.
  const scaling = autoscalingPlanProblem(stack);
  if (scaling) add(scaling.key, scaling.value, scaling.message, scaling.fix);
  if (problems.length > 0) return { problems, warnings };
  return { stack, problems, warnings };
}
