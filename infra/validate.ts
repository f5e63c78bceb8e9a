/**
 * Semantic validation of a parsed stack config into the resolved stack
 * (infra/stack.ts) that the plan is computed from. Runs before any resource is registered; it
 * collects every problem so a bad stack file is fixed in one round trip.
 */
import { autoscalingProblems } from "./autoscalingConfig";
import { findGpuInstance, gpuInstanceTypes, type GpuInstance } from "./catalog/gpus";
import { PROJECT, parseConfig, type ConfigProblem, type SecretPresence, type StackConfig } from "./config";
import { MODEL_PRESETS, findPreset, type ModelPreset } from "./model/catalog";
import {
  USABLE_GPU_FRACTION,
  builderDiskGiB,
  conversionRamBytes,
  estimateGpuMemory,
  nodeDiskGiB,
  toGiB,
  type GpuMemoryEstimate,
} from "./model/sizing";
import type { Family, ModelSource } from "./model/types";
import type { GemmShape, ResolvedModel, ResolvedStack } from "./stack";
import { endpointAccessProblems } from "./plan/clusterAccess";
import { VPC_PREFIX_RANGE, vpcPrefix } from "./plan/network";
import { isoDate } from "./catalog/eks";
import { touchesDropped } from "./configIssues";
import { platformFindings } from "./platformChecks";
import { servingFitProblem } from "./plan/nodeShape";
import { autoscalingPlanProblem } from "./plan/scaling";
import { planWorkload } from "./plan/workload";
import type { WorkloadPlan } from "./plan/workload";

export class ConfigError extends Error {
  constructor(
    readonly stack: string,
    readonly problems: ConfigProblem[],
  ) {
    super(formatProblems(stack, problems));
    this.name = "ConfigError";
  }
}

export function formatProblems(stack: string, problems: ConfigProblem[]): string {
  const noun = problems.length === 1 ? "problem" : "problems";
  return `${PROJECT}: ${problems.length} configuration ${noun} in stack "${stack}" (nothing was created):\n${problemLines(problems)}`;
}

/** Warnings: the stack can deploy, but its author should know (printed at preview and by synth). */
export function formatWarnings(stack: string, warnings: ConfigProblem[]): string {
  const noun = warnings.length === 1 ? "warning" : "warnings";
  return `${PROJECT}: ${warnings.length} configuration ${noun} in stack "${stack}":\n${problemLines(warnings)}`;
}

function problemLines(problems: ConfigProblem[]): string {
  return problems.map((p, i) => `  ${i + 1}. ${p.key} = ${display(p)}: ${p.message}.\n     fix: ${p.fix}`).join("\n");
}

function display(p: ConfigProblem): string {
  if (p.hideValue) return "(value not shown)";
  if (p.value === undefined) return "(unset)";
  return JSON.stringify(p.value);
}

export interface ResolveOptions {
  /** ISO date the EKS support windows are judged at; today (UTC) by default. */
  today?: string;
}

const COMMIT = /^[0-9a-f]{40}$/;
const SHA256 = /^[0-9a-f]{64}$/;

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

  const model = resolveModel(config, add);
  const servingInstance = instance(config.serving.instanceType, "serving.instanceType", add);
  const builderInstance = instance(config.build.builderInstanceType, "build.builderInstanceType", add);
  checkPlatform(config, opts.today ?? isoDate(new Date()), add, warn);
  checkAccess(config, secrets, add);
  checkCluster(config, secrets, add);
  checkNetwork(config, add);
  checkAutoscaling(raw, config, add);
  const gemm: GemmShape = {
    batchSize: config.gemm.batchSize ?? config.serving.maxBatchSize,
    beamWidth: config.gemm.beamWidth,
    maxInputLen: config.gemm.maxInputLen ?? config.serving.maxInputLen,
  };
  let memory: GpuMemoryEstimate | undefined;
  if (model) {
    checkArchitecture(config, model, gemm, add);
    checkTensorParallel(config, model, servingInstance, add);
    if (servingInstance) memory = checkGpuMemory(config, model, gemm, servingInstance, add);
    if (builderInstance) checkBuilder(config, model, builderInstance, servingInstance, add);
  }
  if (servingInstance && builderInstance) checkSameGpu(servingInstance, builderInstance, add);

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

/**
 * The serving pods as the plan sizes them, next to the node DaemonSets, must
 * fit the serving node's EKS allocatable (infra/plan/nodeShape.ts): a pod that
 * does not stays Pending, and a rollout reports it only at its deadline.
 */
function checkServingFits(stack: ResolvedStack, add: Add): void {
  let w: WorkloadPlan;
  try {
    w = planWorkload(stack);
  } catch (err) {
    add(
      "serving.instanceType",
      stack.servingInstance.type,
      (err as Error).message,
      "pick a serving.instanceType with more memory per GPU, or lower serving.maxBatchSize / maxInputLen / maxOutputLen",
    );
    return;
  }
  const pod = { cpuMillis: w.cpuRequestMillis, memoryBytes: w.memoryRequestBytes, gpus: w.tensorParallel };
  const problem = servingFitProblem(stack.servingInstance, pod, w.podsPerNode);
  if (problem) add("serving.instanceType", stack.servingInstance.type, problem.message, problem.fix);
}

/** serving.autoscaling: the rules that need no model (replicas given too, min/max, cluster mode, capacity). */
function checkAutoscaling(raw: Record<string, unknown>, config: StackConfig, add: Add): void {
  const rawServing = raw.serving;
  // The schema's default hides whether replicas was given: look at the raw value.
  const replicasSet = rawServing !== null && typeof rawServing === "object" && "replicas" in rawServing;
  for (const p of autoscalingProblems(config.serving.autoscaling, { replicasSet, clusterMode: config.cluster.mode }))
    add(p.key, p.value, p.message, p.fix);
}

/**
 * What names things outside this repository: the backend/FT pins (40-hex; a
 * set upstream never built together warns), the EKS version (refused when EKS
 * does not offer it, a warning in extended support) and every CIDR.
 */
function checkPlatform(config: StackConfig, today: string, add: Add, warn: Add): void {
  const f = platformFindings(config, today);
  for (const e of f.errors) add(e.key, e.value, e.message, e.fix);
  for (const w of f.warnings) warn(w.key, w.value, w.message, w.fix);
}

/** Who can reach what: the endpoint's and the builder's source ranges, and the SSH key pair. */
function checkAccess(config: StackConfig, secrets: SecretPresence, add: Add): void {
  const s = config.serving;
  if (s.loadBalancerScheme === "internet-facing" && s.allowedCidrs.length === 0) {
    add(
      "serving.allowedCidrs",
      s.allowedCidrs,
      "is empty while serving.loadBalancerScheme is internet-facing, which would open the endpoint to the whole internet",
      "list the client CIDRs allowed to call the endpoint, or use loadBalancerScheme internal",
    );
  }
  if (s.loadBalancerScheme === "internet-facing" && s.tlsCertificateArn === undefined) {
    add(
      "serving.tlsCertificateArn",
      undefined,
      "is required while serving.loadBalancerScheme is internet-facing: API keys and prompts would cross the internet in plain text",
      "issue an ACM certificate for the endpoint's name and set its ARN, or use loadBalancerScheme internal",
    );
  }
  if (s.loadBalancerScheme === "internet-facing" && s.consumers.length === 0) {
    add(
      "serving.consumers",
      s.consumers,
      "is empty while serving.loadBalancerScheme is internet-facing: no team would hold a key, and the endpoint must not be open",
      "list the teams that call the endpoint (each gets an API key output), or use loadBalancerScheme internal",
    );
  }
  const duplicates = s.consumers.filter((c, i) => s.consumers.indexOf(c) !== i);
  if (duplicates.length > 0) {
    add(
      "serving.consumers",
      s.consumers,
      `lists ${[...new Set(duplicates)].join(", ")} more than once`,
      "list each team once (a team rotates its key by replacing the apiKey resource, not by a second entry)",
    );
  }
  if (config.build.sshPublicKey !== undefined && !secrets.sshPrivateKey) {
    add(
      "sshPrivateKey",
      undefined,
      "is required with build.sshPublicKey: pulumi up runs the build steps over SSH with it",
      `pulumi config set --secret ${PROJECT}:sshPrivateKey < <private key file>, or unset build.sshPublicKey to generate a key pair`,
    );
  }
}

/** The model's own numbers and the requested lengths agree. */
function checkArchitecture(config: StackConfig, model: ResolvedModel, gemm: GemmShape, add: Add): void {
  const s = config.serving;
  const a = model.arch;
  if (s.maxInputLen + s.maxOutputLen > a.maxPositions) {
    add(
      "serving.maxInputLen",
      s.maxInputLen,
      `plus serving.maxOutputLen (${s.maxOutputLen}) exceeds the model's ${a.maxPositions} positions`,
      `keep maxInputLen + maxOutputLen <= ${a.maxPositions}`,
    );
  }
  if (gemm.maxInputLen > a.maxPositions) {
    add(
      "gemm.maxInputLen",
      gemm.maxInputLen,
      `exceeds the model's ${a.maxPositions} positions`,
      `use at most ${a.maxPositions}`,
    );
  }
  if (a.hidden % a.heads !== 0) {
    add(
      "model.arch.hidden",
      a.hidden,
      `is not a multiple of model.arch.heads (${a.heads})`,
      "copy hidden and heads from the model's config.json",
    );
  }
  if (a.rotaryDims > a.hidden / a.heads) {
    add(
      "model.arch.rotaryDims",
      a.rotaryDims,
      `exceeds the head size ${a.hidden / a.heads}`,
      "use rotary_dim (or rotary_pct × head size) from config.json",
    );
  }
}

/** The tensor-parallel size splits the heads and fits the serving instance. */
function checkTensorParallel(
  config: StackConfig,
  model: ResolvedModel,
  servingInstance: GpuInstance | undefined,
  add: Add,
): void {
  const a = model.arch;
  const tp = config.serving.tensorParallel;
  if (a.heads % tp !== 0) {
    add(
      "serving.tensorParallel",
      tp,
      `does not divide the model's ${a.heads} attention heads`,
      `use one of: ${divisors(a.heads)
        .filter((d) => !servingInstance || d <= servingInstance.gpuCount)
        .join(", ")}`,
    );
  }
  if (servingInstance && tp > servingInstance.gpuCount) {
    add(
      "serving.tensorParallel",
      tp,
      `exceeds the ${servingInstance.gpuCount} GPU(s) of ${servingInstance.type}`,
      `use at most ${servingInstance.gpuCount}, or an instance type with at least ${tp} GPUs`,
    );
  }
}

/** Weights, KV cache and headroom fit one GPU of the serving instance; returns the estimate. */
function checkGpuMemory(
  config: StackConfig,
  model: ResolvedModel,
  gemm: GemmShape,
  servingInstance: GpuInstance,
  add: Add,
): GpuMemoryEstimate {
  const s = config.serving;
  const tp = s.tensorParallel;
  const memory = estimateGpuMemory(model.family, model.arch, { ...s, tensorParallel: tp, beamWidth: gemm.beamWidth });
  const usable = servingInstance.gpuMemoryGiB * USABLE_GPU_FRACTION;
  if (toGiB(memory.totalBytes) > usable) {
    add(
      "serving.tensorParallel",
      tp,
      `leaves ${toGiB(memory.totalBytes)} GiB per GPU (weights ${toGiB(memory.weightsBytes)} GiB + KV cache ${toGiB(memory.kvCacheBytes)} GiB + headroom ${toGiB(memory.headroomBytes)} GiB) but ${servingInstance.type} has ${usable.toFixed(1)} GiB usable per GPU`,
      "raise serving.tensorParallel, lower serving.maxBatchSize / maxInputLen / maxOutputLen, or pick a GPU with more memory",
    );
  }
  return memory;
}

/** The builder has the RAM to convert in fp32 and the disk the model needs. */
function checkBuilder(
  config: StackConfig,
  model: ResolvedModel,
  builderInstance: GpuInstance,
  servingInstance: GpuInstance | undefined,
  add: Add,
): void {
  const a = model.arch;
  const need = toGiB(conversionRamBytes(model.family, a));
  if (need > builderInstance.ramGiB) {
    add(
      "build.builderInstanceType",
      builderInstance.type,
      `has ${builderInstance.ramGiB} GiB RAM but converting this model needs about ${need} GiB (fp32 on the CPU)`,
      `use a ${servingInstance?.gpuModel ?? builderInstance.gpuModel} instance with at least ${Math.ceil(need)} GiB RAM`,
    );
  }
  const disk = config.build.builderDiskGiB;
  const needDisk = builderDiskGiB(model.family, a);
  if (disk !== undefined && disk < needDisk) {
    add(
      "build.builderDiskGiB",
      disk,
      `is below the ${needDisk} GiB this model needs on the builder`,
      `use at least ${needDisk}, or unset it`,
    );
  }
}

/** gpt_gemm tunes for the GPU it runs on: the builder must have the serving GPU model. */
function checkSameGpu(servingInstance: GpuInstance, builderInstance: GpuInstance, add: Add): void {
  if (servingInstance.gpuModel === builderInstance.gpuModel) return;
  add(
    "build.builderInstanceType",
    builderInstance.type,
    `has ${builderInstance.gpuModel} GPUs but serving uses ${servingInstance.gpuModel}; gpt_gemm tuning is only valid on the serving GPU model`,
    `use an instance type with ${servingInstance.gpuModel} GPUs (${sameGpu(servingInstance).join(", ")})`,
  );
}

type Add = (key: string, value: unknown, message: string, fix: string) => void;

function instance(type: string, key: string, add: Add): GpuInstance | undefined {
  const found = findGpuInstance(type);
  if (!found)
    add(key, type, "is not a GPU instance type this stack knows", `use one of: ${gpuInstanceTypes().join(", ")}`);
  return found;
}

function sameGpu(i: GpuInstance): string[] {
  return gpuInstanceTypes().filter((t) => findGpuInstance(t)?.gpuModel === i.gpuModel);
}

function divisors(n: number): number[] {
  return Array.from({ length: n }, (_, i) => i + 1).filter((d) => n % d === 0);
}

function resolveModel(config: StackConfig, add: Add): ResolvedModel | undefined {
  const m = config.model;
  let preset: ModelPreset | undefined;
  if (m.preset !== undefined) {
    preset = findPreset(m.preset);
    if (!preset) {
      add(
        "model.preset",
        m.preset,
        "is not in the model catalog",
        `use one of: ${MODEL_PRESETS.map((p) => p.name).join(", ")}, or set model.family and model.arch`,
      );
      return undefined;
    }
    if (m.arch)
      add(
        "model.arch",
        m.arch,
        "is set together with model.preset",
        "remove model.arch (the preset supplies it) or remove model.preset",
      );
  } else if (!m.arch) {
    add(
      "model.arch",
      m.arch,
      "is required without model.preset",
      "set all of layers, hidden, heads, ffn, vocab, rotaryDims, maxPositions, startId, endId from the model's config.json, or choose a model.preset",
    );
  }
  const family = m.family ?? preset?.family;
  if (!family)
    add("model.family", m.family, "is required without model.preset", "set one of gptneox, gptj, gpt, codegen");
  if (preset && m.family && m.family !== preset.family) {
    add(
      "model.family",
      m.family,
      `contradicts preset ${preset.name}, which is ${preset.family}`,
      `remove model.family or set it to ${preset.family}`,
    );
  }

  const source = resolveSource(m.source, preset, family, add);
  const arch = m.arch ?? preset?.arch;
  if (!family || !source || !arch) return undefined;
  const repoName = source.kind === "huggingface" ? (source.repo.split("/").pop() ?? "") : "model";
  // Defaults must satisfy model.name's own rule (it names AWS and Kubernetes resources):
  // preset names such as h2ogpt-oig-oasst1-512-6_9b carry an underscore.
  const name =
    m.name ??
    (preset?.name ?? repoName)
      .toLowerCase()
      .replace(/[^a-z0-9-]+/g, "-")
      .replace(/^-+/, "")
      .slice(0, 39);
  const tokenizerSource =
    m.source && "archive" in m.source && preset
      ? { repo: preset.repo, revision: m.source.archive.tokenizerRevision }
      : undefined;
  return { name, preset: preset?.name, family, source, tokenizerSource, arch };
}

function resolveSource(
  src: StackConfig["model"]["source"],
  preset: ModelPreset | undefined,
  family: Family | undefined,
  add: Add,
): ModelSource | undefined {
  if (src === undefined) {
    const hint = preset?.branchHint ? ` (the seeds used branch ${preset.branchHint})` : "";
    add(
      "model.source",
      src,
      "is required: the model must be pinned to a commit",
      preset?.archive
        ? "set {archive: {sha256, tokenizerRevision}} for this archive preset"
        : `set {huggingface: {repo: ${preset?.repo ?? "<org/name>"}, revision: <40-hex commit>}}${hint}`,
    );
    return undefined;
  }
  if ("huggingface" in src) {
    const { repo, revision } = src.huggingface;
    if (preset?.archive) {
      add(
        "model.source",
        src,
        `is a Hugging Face source but preset ${preset.name} is an archive checkpoint`,
        "use {archive: {sha256, tokenizerRevision}}",
      );
    }
    if (!COMMIT.test(revision)) {
      const hint = preset?.branchHint ? `; the seeds used branch ${preset.branchHint}` : "";
      add(
        "model.source.huggingface.revision",
        revision,
        "looks like a branch or tag where a pinned commit is required",
        `use the full 40-hex commit SHA (git ls-remote https://huggingface.co/${repo} <branch>${hint})`,
      );
    }
    return { kind: "huggingface", repo, revision };
  }
  const a = src.archive;
  if (!preset?.archive) {
    add(
      "model.source.archive",
      a,
      "needs an archive preset (gpt-j-6b-jax): only the GPT-J JAX slim checkpoint has a converter",
      "set model.preset to gpt-j-6b-jax, or use a huggingface source",
    );
    return undefined;
  }
  if (family && family !== "gptj")
    add(
      "model.family",
      family,
      "cannot use an archive source",
      "archive sources are GPT-J JAX slim checkpoints: family gptj",
    );
  if (!SHA256.test(a.sha256))
    add("model.source.archive.sha256", a.sha256, "is not a 64-hex SHA-256", "set the archive's sha256sum");
  if (!COMMIT.test(a.tokenizerRevision)) {
    add(
      "model.source.archive.tokenizerRevision",
      a.tokenizerRevision,
      "looks like a branch or tag where a pinned commit is required",
      `use the 40-hex commit of ${preset.repo} to take the tokenizer from`,
    );
  }
  return { kind: "archive", url: a.url ?? preset.archive.url, sha256: a.sha256, format: preset.archive.format };
}

function checkCluster(config: StackConfig, secrets: SecretPresence, add: Add): void {
  const c = config.cluster;
  if (c.mode === "create") {
    const access = { access: c.endpointAccess, publicAccessCidrs: c.endpointPublicAccessCidrs };
    // Problems of the build.sshAllowedCidrs default are already reported by the build checks.
    for (const p of endpointAccessProblems({ ...access, deployerCidrs: config.build.sshAllowedCidrs }))
      if (p.key !== "build.sshAllowedCidrs") add(p.key, p.value, p.message, p.fix);
  }
  if (c.mode === "kubeconfig" && !secrets.kubeconfig) {
    add(
      "kubeconfig",
      undefined,
      "is required when cluster.mode is kubeconfig",
      `pulumi config set --secret ${PROJECT}:kubeconfig "$(cat kubeconfig.yaml)"`,
    );
  }
  if (c.mode === "stackReference" && !c.stackReference) {
    add(
      "cluster.stackReference",
      c.stackReference,
      "is required when cluster.mode is stackReference",
      "set it to <org>/<project>/<stack> of the stack that owns the cluster",
    );
  }
  if (c.mode !== "stackReference" && c.stackReference) {
    add(
      "cluster.stackReference",
      c.stackReference,
      `is set but cluster.mode is ${c.mode}`,
      "set cluster.mode stackReference, or remove it",
    );
  }
}

function checkNetwork(config: StackConfig, add: Add): void {
  const n = config.network;
  if (n.mode === "existing") {
    if (!n.vpcId)
      add("network.vpcId", n.vpcId, "is required when network.mode is existing", "set the id of the VPC (vpc-...)");
    if (n.publicSubnetIds.length === 0)
      add(
        "network.publicSubnetIds",
        n.publicSubnetIds,
        "needs at least one public subnet for the builder",
        "list public subnet ids of the VPC",
      );
    if (n.privateSubnetIds.length < 2) {
      add(
        "network.privateSubnetIds",
        n.privateSubnetIds,
        "needs private subnets in at least two AZs for EKS",
        "list at least two private subnet ids in different AZs",
      );
    }
  } else {
    if (n.vpcId || n.publicSubnetIds.length > 0 || n.privateSubnetIds.length > 0) {
      add(
        "network.mode",
        n.mode,
        "is create but VPC or subnet ids are set",
        "set network.mode existing to use them, or remove the ids",
      );
    }
    const prefix = vpcPrefix(n.vpcCidr);
    if (prefix < VPC_PREFIX_RANGE.min || prefix > VPC_PREFIX_RANGE.max) {
      add(
        "network.vpcCidr",
        n.vpcCidr,
        `has a /${prefix} prefix; private (prefix+3) and public (prefix+8) subnets for every AZ need /16 to /20`,
        "use a /16 to /20 CIDR such as 10.42.0.0/16",
      );
    }
  }
}
