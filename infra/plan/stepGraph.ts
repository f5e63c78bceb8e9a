/**
 * The remote build steps as data, and what is done with that data: the step
 * definition type (script, config entries, files, dependencies, time budget),
 * rendering a step config file (bash `KEY='value'` lines and arrays), the input
 * hash of each step, the graph order, and reading the image a step pushed.
 *
 * Incrementality rests on the hash: a step's hash covers its script, lib.sh, the
 * files it reads, its rendered config and the hashes of the steps whose output
 * it consumes. Serving-only keys (replicas, load balancer) reach no step config,
 * so they re-run nothing; a model change reaches fetch and flows down to bake;
 * the Triton version reaches triton_with_ft and flows down to everything after.
 *
 * Pure: no Pulumi, no file-system access (repo files are hashed by an injected
 * `PathHasher`).
 */
import { isDigestRef, notPinnedMessage } from "../imageRef";
import { sha256 } from "./hash";
import { REMOTE } from "./paths";

export const STEP_IDS = [
  "host-ready",
  "twf-layers",
  "twf-layers-pull",
  "triton-with-ft",
  "fetch",
  "convert",
  "gemm",
  "bake",
  "gateway-image",
] as const;
export type StepId = (typeof STEP_IDS)[number];

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
  "gatewayRepositoryUrl",
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
  /** Steps whose output this step consumes (or which must have prepared the host): its hash covers theirs. */
  dependsOn: StepId[];
  /**
   * The steps it waits for when running, where that is not `dependsOn`: the
   * compile waits for its own host only, not for the GPU builder's check, which
   * its hash still covers. Not part of the input hash.
   * @default dependsOn
   */
  runsAfter?: StepId[];
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
  /**
   * Where the step runs: the GPU builder (unset), or the CPU compile host that
   * builds triton_with_ft (catalog/compileHosts.ts). Not part of the input
   * hash: the host changes how fast an output is made, not what it is.
   */
  host?: "compiler";
  /**
   * The model a step belongs to when the builder converts several (plan/scope.ts):
   * its config, plan files, markers and scratch live under this name. Unset for
   * the first model and the shared steps, whose paths stay the one-model ones.
   */
  scope?: string;
}

/** The steps a step waits for when it runs (the pipeline's order and the estimate's graph). */
export function runOrder(step: { dependsOn: StepId[]; runsAfter?: StepId[] }): StepId[] {
  return step.runsAfter ?? step.dependsOn;
}

export const LIB_SCRIPT = "scripts/remote/lib.sh";
/** The helpers lib.sh sources, by topic: part of every step's hash with it. */
export const LIB_DIR = "scripts/remote/lib";

/** The remote path of a step's config file. */
export function stepConfigPath(id: StepId, scope?: string): string {
  return scope ? `${REMOTE.steps}/${scope}/${id}.conf` : `${REMOTE.steps}/${id}.conf`;
}

/**
 * The script that times a step beside its marker (plan/measurements.ts). It is
 * shipped with scripts/remote but is no step's input: it observes a step, it
 * changes none of its outputs, so editing it re-runs nothing.
 */
export const MEASURE_SCRIPT = "scripts/remote/measure-step.sh";

/** The marker a finished step leaves on its host (scripts/remote/lib/state.sh marker_path). */
export function stepMarkerPath(id: StepId, scope?: string): string {
  return `${REMOTE.root}/state${scope ? `/${scope}` : ""}/${id}.done`;
}

/**
 * The command a step's resource runs: the script with its config file, nothing
 * secret, run by the timer that records how long a real run took.
 */
export function stepCommand(step: StepDefinition): string {
  const run = `bash ${REMOTE.root}/${step.script} ${stepConfigPath(step.id, step.scope)}`;
  return `bash ${REMOTE.root}/${MEASURE_SCRIPT} ${stepMarkerPath(step.id, step.scope)} ${run}`;
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
export function stepInputHashes(
  steps: StepDefinition[],
  hashPath: PathHasher,
  /**
   * Hashes taken as given: a canary's steps it shares with its stable build (plan/canary.ts), whose
   * outputs its own steps consume, hash as the stable's.
   * @default none: every step is hashed from its inputs
   */
  given: Partial<Record<StepId, string>> = {},
): Record<StepId, string> {
  const out = {} as Record<StepId, string>;
  for (const step of topologicalOrder(steps)) {
    const fixed = given[step.id];
    if (fixed !== undefined) {
      out[step.id] = fixed;
      continue;
    }
    const material = {
      id: step.id,
      script: [step.script, hashPath(step.script)],
      lib: [hashPath(LIB_SCRIPT), hashPath(LIB_DIR)],
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
export function topologicalOrder<T extends StepDefinition>(steps: T[]): T[] {
  const byId = new Map(steps.map((s) => [s.id, s]));
  const done = new Set<StepId>();
  const visiting = new Set<StepId>();
  const order: T[] = [];
  const visit = (s: T) => {
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

/** Parses and checks the image a step pushed; a missing or tag-only reference fails the update. */
export function requireImageResult(step: StepId, stdout: string): string {
  const ref = parseImageResult(stdout);
  if (!ref)
    throw new Error(`build step ${step} finished without printing "RESULT image=<ref>"; see its log on the builder`);
  if (!isDigestRef(ref)) throw new Error(notPinnedMessage(`build step ${step} printed image`, ref));
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
  /** Set when the step waits for other steps than those its hash covers (StepDefinition.runsAfter). */
  runsAfter?: StepId[];
  inputHash: string;
  /** Config file content with deploy-time values as `@{name}`. */
  config: string;
  deployValues: DeployValue[];
  inputs: string[];
  files: string[];
  secretEnv: string[];
  timeouts: StepTimeouts;
  /** Set when the step runs on the compile host rather than the GPU builder. */
  host?: "compiler";
}

/**
 * The entries of one pipeline's steps, dependencies first. A further model's
 * pipeline (plan/stack.ts) depends on steps another pipeline runs (the host
 * check, triton_with_ft): those are ordered there, so only the dependencies
 * among these steps order them here; `dependsOn` still names them all.
 */
export function stepPlanEntries(steps: Array<StepDefinition & { inputHash: string }>): StepPlanEntry[] {
  const here = new Set(steps.map((s) => s.id));
  const byId = new Map(steps.map((s) => [s.id, s]));
  const ordered = topologicalOrder(steps.map((s) => ({ ...s, dependsOn: s.dependsOn.filter((d) => here.has(d)) })))
    .map((s) => byId.get(s.id))
    .filter((s) => s !== undefined);
  return ordered.map((s) => ({
    id: s.id,
    title: s.title,
    script: s.script,
    args: [stepConfigPath(s.id, s.scope)],
    command: stepCommand(s),
    dependsOn: s.dependsOn,
    ...(s.runsAfter ? { runsAfter: s.runsAfter } : {}),
    inputHash: s.inputHash,
    config: renderStepConfig(s, placeholder),
    deployValues: deployValuesOf(s),
    inputs: s.inputs,
    files: s.files.map((f) => f.remotePath),
    secretEnv: s.secretEnv,
    timeouts: s.timeouts,
    ...(s.host ? { host: s.host } : {}),
  }));
}
