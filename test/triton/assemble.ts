/**
 * Builds the model repository the real-server tests serve, from what `synth`
 * renders for the test stack (test/triton/Pulumi.triton-test.yaml):
 *
 * - ensemble, preprocessing, postprocessing: synth's config.pbtxt, re-rendered
 *   with one substitution, `tokenizer_path` pointing at a tokenizer the fixture
 *   trains locally (the image path does not exist here; the Hub is never used);
 * - fastertransformer: the same renderer with `backend: "python"`, serving the
 *   CPU stand-in test/triton/ft_standin/1/model.py;
 * - the project's Python models (images/server/model_repository) with the
 *   shared `tritonft` package beside each model.py (the Python-backend stub
 *   runs an isolated interpreter that ignores PYTHONPATH; the model folder is
 *   on its sys.path).
 *
 * Before writing, it re-renders with the image's own tokenizer path and the
 * real backend and requires the result to equal synth's files byte for byte,
 * so the served configs differ from synth's only by those two substitutions.
 */
import { execFileSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { Plan } from "../../infra/plan";
import {
  MODEL_NAMES,
  renderModelRepository,
  type RepositoryFile,
  type RepositoryOptions,
} from "../../infra/plan/modelRepository";

import { ENSEMBLE_MODEL } from "../../infra/conventions/workload";
export const ROOT = path.resolve(__dirname, "../..");
/** synth reads Pulumi.<stack>.yaml from its working directory: this folder. */
export const TEST_STACK_DIR = path.join(ROOT, "test/triton");
export const TEST_STACK = "triton-test";

/** What the tests need to know about the served repository. */
export interface HarnessInfo {
  repository: string;
  /** The tokenizer the fixture trained, which preprocessing and postprocessing load. */
  tokenizerPath: string;
  maxBatchSize: number;
  maxInputLen: number;
  maxOutputLen: number;
  startId: number;
  endId: number;
  padId: number;
  /** Text of the tokenizer's end token, so a test can put end_id inside a prompt. */
  endToken: string;
}

interface TokenizerInfo {
  path: string;
  start_id: number;
  end_id: number;
  pad_id: number;
  vocab_size: number;
}

function log(message: string): void {
  process.stderr.write(`${new Date().toISOString().slice(11, 19)} [assemble] ${message}\n`);
}

/** Runs synth for the test stack into `<work>/synth` and returns its plan. */
export function runSynth(
  work: string,
  stack = TEST_STACK,
  stackDir = TEST_STACK_DIR,
): { plan: Plan; repository: string } {
  const out = path.join(work, "synth");
  rmSync(out, { recursive: true, force: true });
  log(`synth --stack ${stack} --out ${out} (in ${path.relative(ROOT, stackDir) || "."})`);
  execFileSync(
    process.execPath,
    [
      path.join(ROOT, "node_modules/tsx/dist/cli.mjs"),
      path.join(ROOT, "scripts/synth.ts"),
      "--stack",
      stack,
      "--out",
      out,
    ],
    {
      cwd: stackDir,
      stdio: ["ignore", "ignore", "inherit"],
    },
  );
  const plan = JSON.parse(readFileSync(path.join(out, "plan.json"), "utf8")) as Plan;
  return { plan, repository: path.join(out, "model-repository") };
}

export function optionsFromPlan(plan: Plan): RepositoryOptions {
  return {
    family: plan.model.family,
    tensorParallel: plan.serving.tensorParallel,
    maxBatchSize: plan.serving.maxBatchSize,
    maxInputLen: plan.serving.maxInputLen,
    maxOutputLen: plan.serving.maxOutputLen,
    checkpointPath: plan.modelRepository.checkpointPath,
    tokenizerPath: plan.modelRepository.tokenizerPath,
    startId: plan.model.tokens.startId,
    endId: plan.model.tokens.endId,
    padId: plan.model.tokens.padId,
    customAllReduce: plan.serving.customAllReduce,
    vocab: plan.model.arch.vocab,
    decoupled: plan.serving.streaming,
  };
}

/** The re-rendered repository must be synth's, or the tests would prove something else. */
export function checkMatchesSynth(options: RepositoryOptions, synthRepository: string): void {
  for (const file of renderModelRepository(options).files) {
    const synthFile = path.join(synthRepository, file.path);
    if (!existsSync(synthFile)) throw new Error(`synth did not write ${file.path}`);
    if (readFileSync(synthFile, "utf8") !== file.content) {
      throw new Error(`${file.path}: synth's output differs from the renderer fed with synth's own plan.json`);
    }
  }
}

function makeTokenizer(python: string, dir: string): TokenizerInfo {
  const script = path.join(ROOT, "test/python/fixtures/make_tokenizer.py");
  const stdout = execFileSync(python, [script, dir], {
    cwd: ROOT,
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
  });
  const lastLine = stdout.trim().split("\n").pop() ?? "";
  return JSON.parse(lastLine) as TokenizerInfo;
}

function tokenText(tokenizerDir: string, id: number): string {
  const parsed = JSON.parse(readFileSync(path.join(tokenizerDir, "tokenizer.json"), "utf8")) as {
    added_tokens?: { id: number; content: string }[];
  };
  const token = parsed.added_tokens?.find((t) => t.id === id);
  if (token === undefined) throw new Error(`tokenizer in ${tokenizerDir} has no added token with id ${id}`);
  return token.content;
}

function copyPythonModel(name: "preprocessing" | "postprocessing" | "ensemble", versionDir: string): void {
  const source = path.join(ROOT, "images/server/model_repository", name, "1");
  for (const entry of readdirSync(source)) {
    if (entry === "__pycache__") continue;
    cpSync(path.join(source, entry), path.join(versionDir, entry), { recursive: true });
  }
  cpSync(path.join(ROOT, "images/server/python/tritonft"), path.join(versionDir, "tritonft"), {
    recursive: true,
    filter: (src) => !src.includes("__pycache__"),
  });
}

/**
 * Assemble `<work>/repository` (and `<work>/tokenizer`) for a plan rendered by
 * synth. `python` must have the pinned tokenizers package (the triton venv).
 */
export function assembleRepository(
  work: string,
  python: string,
  plan: Plan,
  synthRepository: string,
  /** Applied after the synth check: e.g. the gateway suite serves FT decoupled. */
  overrides: Partial<RepositoryOptions> = {},
): HarnessInfo {
  const synthOptions = optionsFromPlan(plan);
  checkMatchesSynth(synthOptions, synthRepository);
  const imageOptions = { ...synthOptions, ...overrides };

  const tokenizerDir = path.join(work, "tokenizer");
  rmSync(tokenizerDir, { recursive: true, force: true });
  const tokenizer = makeTokenizer(python, tokenizerDir);
  const ids = plan.model.tokens;
  if (tokenizer.start_id !== ids.startId || tokenizer.end_id !== ids.endId) {
    throw new Error(
      `test stack token ids (start ${ids.startId}, end ${ids.endId}) do not match the fixture tokenizer ` +
        `(start ${tokenizer.start_id}, end ${tokenizer.end_id}); fix test/triton/Pulumi.${TEST_STACK}.yaml`,
    );
  }
  if (plan.model.arch.vocab !== tokenizer.vocab_size) {
    throw new Error(`test stack vocab ${plan.model.arch.vocab} != fixture tokenizer vocab ${tokenizer.vocab_size}`);
  }

  const repository = path.join(work, "repository");
  rmSync(repository, { recursive: true, force: true });
  writeModels(repository, { ...imageOptions, tokenizerPath: tokenizer.path });
  log(`repository ready: ${repository}`);
  return {
    repository,
    tokenizerPath: tokenizer.path,
    maxBatchSize: imageOptions.maxBatchSize,
    maxInputLen: imageOptions.maxInputLen,
    maxOutputLen: imageOptions.maxOutputLen,
    startId: imageOptions.startId,
    endId: imageOptions.endId,
    padId: imageOptions.padId,
    endToken: tokenText(tokenizer.path, imageOptions.endId),
  };
}

/**
 * Writes one model's four Triton models into `repository` (FT as the CPU
 * stand-in, the Python models with `tritonft`), each named `<prefix><name>`:
 * with a prefix, a second model's repository sits beside the first in one
 * server, as two models' ensembles side by side.
 */
function writeModels(repository: string, options: RepositoryOptions, prefix = ""): void {
  const rendered = renderModelRepository(options, { backend: "python" });
  const target = (file: string): string => path.join(repository, `${prefix}${file}`);
  for (const dir of rendered.directories) mkdirSync(target(dir), { recursive: true });
  for (const file of rendered.files) writeFileSync(target(file.path), prefix ? renamed(file, prefix) : file.content);
  for (const name of MODEL_NAMES) {
    const versionDir = path.join(target(name), "1");
    if (name === "preprocessing" || name === "postprocessing") copyPythonModel(name, versionDir);
    // The streaming ensemble is a Python model; the ensemble platform ignores its version folder.
    if (name === "ensemble" && options.decoupled) copyPythonModel(name, versionDir);
    if (name === "fastertransformer")
      cpSync(path.join(ROOT, "test/triton/ft_standin/1/model.py"), path.join(versionDir, "model.py"));
  }
}

/** Replace `pattern` exactly `count` times, or fail: a renderer change must not leave a name unrenamed. */
function replaceExactly(text: string, pattern: RegExp, replacement: string, count: number, where: string): string {
  const global = new RegExp(pattern.source, `${pattern.flags.replace("g", "")}g`);
  const hits = text.match(global)?.length ?? 0;
  if (hits !== count) throw new Error(`${where}: expected ${count} match(es) of ${pattern}, found ${hits}`);
  return text.replace(global, replacement);
}

/** A rendered config with its model's name, and the names its ensemble calls, prefixed. */
function renamed(file: RepositoryFile, prefix: string): string {
  const model = file.path.split("/")[0];
  let text = replaceExactly(
    file.content,
    new RegExp(`^name: "${model}"$`, "m"),
    `name: "${prefix}${model}"`,
    1,
    file.path,
  );
  if (model !== ENSEMBLE_MODEL) return text;
  // The streaming ensemble's steps (JSON in a pbtxt string, quotes escaped) and its decoupled step.
  for (const step of ["preprocessing", "fastertransformer", "postprocessing"]) {
    text = replaceExactly(
      text,
      new RegExp(`\\\\"model\\\\":\\\\"${step}\\\\"`),
      `\\"model\\":\\"${prefix}${step}\\"`,
      1,
      file.path,
    );
  }
  return replaceExactly(
    text,
    /(key: "streamed_step"\n\s*value \{\n\s*string_value: ")fastertransformer"/,
    `$1${prefix}fastertransformer"`,
    1,
    file.path,
  );
}

/**
 * Adds a second model to an assembled streaming repository, its four models
 * named `<prefix>…` (the ensemble `<prefix>ensemble`), rendered from `options`
 * (other limits, another vocabulary) with the first model's tokenizer.
 * Returns the second model's ensemble name.
 */
export function addSecondModel(repository: string, options: RepositoryOptions, prefix: string): string {
  writeModels(repository, options, prefix);
  log(
    `second model ${prefix}${ENSEMBLE_MODEL} in ${repository}: batch ${options.maxBatchSize}, input ${options.maxInputLen}, output ${options.maxOutputLen}, vocab ${options.vocab}`,
  );
  return `${prefix}${ENSEMBLE_MODEL}`;
}

/**
 * Adds `<name>` to an assembled streaming repository: the rendered streaming
 * ensemble (same steps, same model.py) with one instance and a Triton queue of
 * `maxQueueSize` requests (`dynamic_batching { default_queue_policy {
 * max_queue_size } }`), so a test can fill Triton's queue and see Triton
 * itself refuse ("Exceeds maximum queue size"). Production renders no queue
 * limit: the gateway's admission (limits.maxInflight) keeps Triton's queue short.
 */
export function addQueueLimitedEnsemble(repository: string, name: string, maxQueueSize: number): void {
  const source = path.join(repository, "ensemble");
  const rendered = readFileSync(path.join(source, "config.pbtxt"), "utf8");
  const replaceOnce = (text: string, pattern: RegExp, replacement: string): string => {
    const hits = text.match(new RegExp(pattern.source, `${pattern.flags.replace("g", "")}g`))?.length ?? 0;
    if (hits !== 1) throw new Error(`ensemble config.pbtxt: expected one match of ${pattern}, found ${hits}`);
    return text.replace(pattern, replacement);
  };
  let config = replaceOnce(rendered, /^name: "ensemble"$/m, `name: "${name}"`);
  config = replaceOnce(config, /^backend: "python"$/m, 'backend: "python"');
  config = replaceOnce(config, /(instance_group \[\n {2}\{\n {4}count: )\d+/, "$11");
  config += `dynamic_batching {\n  default_queue_policy {\n    max_queue_size: ${maxQueueSize}\n  }\n}\n`;
  const target = path.join(repository, name);
  rmSync(target, { recursive: true, force: true });
  cpSync(source, target, { recursive: true });
  writeFileSync(path.join(target, "config.pbtxt"), config);
  log(`queue-limited ensemble ${name}: 1 instance, max_queue_size ${maxQueueSize}`);
}
