/**
 * npm run synth -- --stack <name> [--out <dir>]
 * npm run synth -- --diff <old-out> <new-out> [--cost-markdown <file>]
 *
 * Offline: reads Pulumi.<name>.yaml, validates it with the same rules as the
 * Pulumi program, computes the stack plan once (as infra/program.ts does), and
 * writes plan.json and what the artifact writers render from it to <out>
 * (default out/<name>), plus a short summary on stdout. A stack of several
 * models gets each model's artifacts under <out>/models/<id>/ and what they
 * share at the top (infra/synth/artifacts.ts synthesizeStack). Secrets print as
 * [secret]; their values are never read. It then runs the program under the
 * mock runtime and writes the offline inventory (resources.json, resources.txt;
 * scripts/synthInventory.ts). It also writes cost.json, the cost and time
 * estimate (infra/cost), and prints its three figures. `--diff` prints the
 * change list between two outputs' inventories, each stack headed by the
 * change of its estimate ($/month, minutes to serve, $/1k tokens);
 * `--cost-markdown <file>` also writes that change as the pull request
 * comment's markdown.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { PROJECT } from "../infra/config";
import type { Plan } from "../infra/plan";
import { buildStackPlan, type StackPlan } from "../infra/plan/stack";
import { repoPathHasher } from "../infra/repoFiles";
import type { ResolvedStack } from "../infra/config";
import { ARTIFACT_WRITERS, MODELS_OUT, synthesize, synthesizeStack, type SynthResult } from "../infra/synth/artifacts";
import { parseStackFile, type StackFileConfig } from "../infra/synth/stackFile";
import { formatProblems, formatWarnings, resolveStack } from "../infra/resolve";
import { diffCommand, writeInventory, type LoadedProgram } from "./synthInventory";
import { INVENTORY_FILE, INVENTORY_SUMMARY_FILE } from "../infra/synth/inventory";
import { COST_FILE, parseCostReport } from "../infra/synth/costArtifacts";
import type { CostReport } from "../infra/cost";
import { minutes, pathChange } from "../infra/cost/format";
import { basisLabel } from "../infra/cost/measured";
import { readMeasuredSteps, type MeasuredStep } from "../infra/plan/measurements";

import type { ArtifactWriter } from "../infra/synth/types";
export interface SynthIo {
  /** Folder holding Pulumi.<stack>.yaml; relative --out paths resolve against it. */
  cwd: string;
  /** Repository root, for files writers copy (the Python models). */
  repoRoot: string;
  stdout(line: string): void;
  stderr(line: string): void;
}

export interface SynthArgs {
  stack: string;
  out?: string;
  /** A file of the stack's exported outputs (`pulumi stack output --json`): its measured step times. */
  measured?: string;
}

const USAGE =
  "usage: npm run synth -- --stack <name> [--out <dir>] [--measured <outputs.json>]\n       npm run synth -- --diff <old-out> <new-out> [--cost-markdown <file>]";

export function parseArgs(argv: string[]): SynthArgs {
  const values: Record<string, string> = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const m = /^--(stack|out|measured)(?:=(.*))?$/.exec(arg);
    if (!m) throw new Error(`unknown argument ${JSON.stringify(arg)}\n${USAGE}`);
    const value = m[2] ?? argv[++i];
    if (value === undefined || value === "") throw new Error(`--${m[1]} needs a value\n${USAGE}`);
    values[m[1]] = value;
  }
  if (!values.stack) throw new Error(`--stack is required\n${USAGE}`);
  if (!/^[A-Za-z0-9_.-]+$/.test(values.stack))
    throw new Error(`--stack ${JSON.stringify(values.stack)} is not a stack name`);
  return { stack: values.stack, out: values.out, measured: values.measured };
}

function configLines(file: StackFileConfig): string[] {
  const lines = Object.entries(file.raw).map(
    ([k, v]) => `  ${PROJECT}:${k} = ${v === "[secret]" ? "[secret]" : JSON.stringify(v)}`,
  );
  for (const k of [...file.secureKeys, ...file.plaintextSecretKeys])
    if (!(k in file.raw)) lines.push(`  ${PROJECT}:${k} = [secret]`);
  return lines;
}

/** What the plan says about one model: source, architecture, serving shape, builder and the remote commands. */
function modelLines(plan: Plan, stack: ResolvedStack): string[] {
  const src = plan.model.source;
  const source =
    src.kind === "huggingface"
      ? `huggingface ${src.repo}@${src.revision}`
      : `archive ${src.url} (sha256 ${src.sha256})`;
  const a = plan.model.arch;
  const mem = plan.serving.gpuMemoryGiB;
  const { conversion, expectedWeights, gemm, vllm } = plan;
  const engine = vllm
    ? [
        `vLLM: base ${vllm.baseImage}; context ${vllm.settings.maxModelLen}, KV cache ${vllm.settings.kvCacheGiB} GiB per GPU, max_num_seqs ${vllm.settings.maxNumSeqs}, max logprobs ${vllm.settings.maxLogprobs}, dtype ${vllm.settings.dtype}; no conversion or gemm`,
      ]
    : conversion && expectedWeights && gemm
      ? [
          `convert: ${conversion.phases.convert.argv.join(" ")}`,
          `expected weights: ${expectedWeights.files.length} files + config.ini [${expectedWeights.section}] -> image ${conversion.serverCheckpointPath}`,
          `gpt_gemm: ${gemm.argv.join(" ")}`,
        ]
      : [];
  return [
    `model: ${plan.model.name} (${plan.model.family} -> ${vllm ? "vLLM" : `FT ${plan.model.ftModelType ?? ""}`}), ${source}`,
    `architecture: ${a.layers} layers, hidden ${a.hidden}, ${a.heads} heads, ffn ${a.ffn}, vocab ${a.vocab}, rotary ${a.rotaryDims}, positions ${a.maxPositions}, start/end ${a.startId}/${a.endId}`,
    `serving: ${plan.serving.instanceType} (${plan.serving.gpuModel}), TP ${plan.serving.tensorParallel}, max batch ${plan.serving.maxBatchSize}, input/output ${plan.serving.maxInputLen}/${plan.serving.maxOutputLen}, custom all-reduce ${plan.serving.customAllReduce ? "on" : "off"}`,
    `GPU memory per GPU: ${mem.total} GiB (weights ${mem.weights}, KV cache ${mem.kvCache}, headroom ${mem.headroom}) of ${stack.servingInstance.gpuMemoryGiB} GiB`,
    vllm
      ? `builder: ${plan.build.builderInstanceType}${stack.cpuBuilder ? " (CPU, no GPU)" : ""}, ${plan.build.builderDiskGiB} GiB disk (fetch and bake only)`
      : `builder: ${plan.build.builderInstanceType}, ${plan.build.builderDiskGiB} GiB disk; triton_with_ft ${plan.build.tritonVersion}, SM ${plan.build.smList.join(",")}`,
    ...engine,
    `launch: ${Object.entries(plan.launch.env)
      .map(([k, v]) => `${k}=${v}`)
      .join(" ")} ${plan.launch.argv.join(" ")}`,
  ];
}

/** A stack of several models: one block per model (its lines indented under its folder), then the builders and what the models share. */
function stackSummary(
  sp: StackPlan,
  models: readonly ResolvedStack[],
  perModel: string[][],
  shared: string[],
): string[] {
  const lines = [`models: ${sp.models.map((m) => m.id).join(", ")} (${sp.models.length}, one Triton Deployment each)`];
  for (const [n, entry] of sp.models.entries()) {
    const resolved = models[n];
    if (!resolved) continue;
    lines.push(`model ${entry.id}${entry.first ? " (first: the one-model names)" : ""} -> ${MODELS_OUT}/${entry.id}/`);
    for (const l of [...modelLines(entry.plan, resolved), ...(perModel[n] ?? [])]) lines.push(`  ${l}`);
  }
  // A live canary's folder follows the models' (infra/synth/artifacts.ts synthesizeStack).
  for (const [k, c] of sp.canaries.filter((x) => !x.promote).entries()) {
    lines.push(
      `canary ${c.id} of ${c.of} (${c.weight} % of its new requests, build ${c.buildId}; shares ${c.shared.join(", ") || "no step"}) -> ${MODELS_OUT}/${c.id}/`,
    );
    for (const l of perModel[sp.models.length + k] ?? []) lines.push(`  ${l}`);
  }
  for (const b of sp.builders)
    lines.push(
      b.cpu
        ? `builder ${b.name}: ${b.instanceType} (CPU: ${b.cpu.vcpus} vCPUs, ${b.cpu.memoryGiB} GiB; no GPU), ${b.diskGiB} GiB disk; fetches and bakes ${b.models.join(", ")} (vLLM only: no triton_with_ft, conversion or gemm)`
        : `builder ${b.name}: ${b.instanceType} (${b.gpuModel}), ${b.diskGiB} GiB disk; builds triton_with_ft for SM ${b.smList.join(",")}; converts ${b.models.join(", ")}`,
    );
  return [...lines, ...shared];
}

/** Write a synth result into outDir, after clearing what synth owns there. */
function writeResult(result: SynthResult, outDir: string): void {
  fs.mkdirSync(outDir, { recursive: true });
  for (const entry of result.owned) fs.rmSync(path.join(outDir, entry), { recursive: true, force: true });
  for (const dir of result.directories) fs.mkdirSync(path.join(outDir, dir), { recursive: true });
  for (const f of result.files) {
    const target = path.join(outDir, f.path);
    fs.mkdirSync(path.dirname(target), { recursive: true });
    fs.writeFileSync(target, f.content);
  }
}

export function main(argv: string[], io: SynthIo, writers: readonly ArtifactWriter[] = ARTIFACT_WRITERS): number {
  let args: SynthArgs;
  try {
    args = parseArgs(argv);
  } catch (err) {
    io.stderr((err as Error).message);
    return 2;
  }
  const fileName = `Pulumi.${args.stack}.yaml`;
  const stackPath = path.join(io.cwd, fileName);
  if (!fs.existsSync(stackPath)) {
    io.stderr(
      `${PROJECT}: no stack file ${stackPath} (create it with \`pulumi stack init ${args.stack}\` and set the config)`,
    );
    return 1;
  }
  let file: StackFileConfig;
  try {
    file = parseStackFile(fs.readFileSync(stackPath, "utf8"), fileName);
  } catch (err) {
    io.stderr(`${PROJECT}: ${(err as Error).message}`);
    return 1;
  }
  io.stdout(`stack ${args.stack} (${fileName}):`);
  for (const line of configLines(file)) io.stdout(line);
  for (const k of file.plaintextSecretKeys) {
    io.stderr(
      `${PROJECT}: warning: ${PROJECT}:${k} is stored in plain text; set it with \`pulumi config set --secret ${PROJECT}:${k}\``,
    );
  }

  const { stack, models, problems, warnings } = resolveStack(file.raw, file.secrets, {
    stackName: args.stack,
    ...(file.awsRegion ? { region: file.awsRegion } : {}),
  });
  if (warnings.length > 0) io.stderr(formatWarnings(args.stack, warnings));
  if (!stack) {
    io.stderr(formatProblems(args.stack, problems));
    return 1;
  }
  let measured: MeasuredStep[] | undefined;
  if (args.measured) {
    const file = path.resolve(io.cwd, args.measured);
    try {
      measured = readMeasuredSteps(JSON.parse(fs.readFileSync(file, "utf8")) as unknown, file);
    } catch (err) {
      io.stderr(`${PROJECT}: --measured: ${(err as Error).message}`);
      return 1;
    }
  }
  const outDir = path.resolve(io.cwd, args.out ?? path.join("out", args.stack));
  // The stack plan, as infra/program.ts computes it: a one-model stack's is exactly its one plan.
  const resolved = models ?? [stack];
  const sp = buildStackPlan(resolved, args.stack, repoPathHasher(io.repoRoot));
  const readRepoFile = (rel: string) => {
    const p = path.join(io.repoRoot, rel);
    return fs.existsSync(p) ? fs.readFileSync(p, "utf8") : undefined;
  };
  const firstPlan = sp.models[0]?.plan;
  if (!firstPlan) throw new Error("a stack plan has at least one model");
  // The stack file's region prices the cost estimate (cost.json).
  const region = { ...(file.awsRegion ? { region: file.awsRegion } : {}), ...(measured ? { measured } : {}) };
  // The previous run's estimate, if any: what changed the first-deploy total since then is printed.
  const previous = readPreviousCost(outDir);
  if (sp.models.length === 1) {
    const result = synthesize(
      { stackName: args.stack, stack, plan: firstPlan, stackPlan: sp, models: resolved, readRepoFile, ...region },
      writers,
    );
    writeResult(result, outDir);
    for (const line of [
      ...modelLines(firstPlan, stack),
      ...result.summary,
      ...measuredLines(measured, args.measured, outDir),
      ...sinceLastSynth(previous, outDir),
      `wrote ${outDir}`,
    ])
      io.stdout(line);
    return 0;
  }
  const result = synthesizeStack(
    { stackName: args.stack, models: resolved, stackPlan: sp, readRepoFile, ...region },
    writers,
  );
  writeResult(result, outDir);
  const perModel = result.models.map((m) => m.summary);
  for (const line of [
    ...stackSummary(sp, resolved, perModel, result.summary),
    ...measuredLines(measured, args.measured, outDir),
    ...sinceLastSynth(previous, outDir),
    `wrote ${outDir}`,
  ])
    io.stdout(line);
  return 0;
}

/** The cost.json a previous synth left in the output folder; undefined when there is none or it is unreadable. */
function readPreviousCost(outDir: string): CostReport | undefined {
  const file = path.join(outDir, COST_FILE);
  if (!fs.existsSync(file)) return undefined;
  try {
    return parseCostReport(fs.readFileSync(file, "utf8"), file);
  } catch {
    // An older or hand-edited file compares with nothing; the new one replaces it.
    return undefined;
  }
}

/**
 * With --measured: per model, which steps the estimate took from the stack's
 * own measurements (their inputs match) and which stay the catalog's figures.
 */
function measuredLines(measured: MeasuredStep[] | undefined, file: string | undefined, outDir: string): string[] {
  const report = measured && readPreviousCost(outDir);
  if (!report) return [];
  const lines = [`measured step times: ${measured.length} in ${file ?? "?"}`];
  for (const m of report.models) {
    const used = m.change.steps.filter((s) => s.measuredAt);
    const rest = m.change.steps.filter((s) => !s.measuredAt).map((s) => s.id);
    lines.push(
      `  ${m.id}: ${used.length ? used.map((s) => `${s.id} ${minutes(s.seconds)} (${basisLabel(s) ?? ""})`).join(", ") : "no step's inputs match a measurement"}${rest.length ? `; the catalog's figures: ${rest.join(", ")}` : ""}`,
    );
  }
  return lines;
}

/** Per model, what moved its first-deploy total since the previous synth into the same folder. */
function sinceLastSynth(previous: CostReport | undefined, outDir: string): string[] {
  const current = readPreviousCost(outDir);
  if (!previous || !current) return [];
  return current.models.flatMap((m) => {
    const moved = pathChange(
      previous.models.find((x) => x.id === m.id),
      m,
    );
    return moved ? [`  since the last synth: ${moved}`] : [];
  });
}

/**
 * The command line: `--diff`, or synth's artifacts (`main`) followed by the
 * offline inventory, which needs the async mock runtime.
 */
export async function cli(argv: string[], io: SynthIo, load?: () => Promise<LoadedProgram>): Promise<number> {
  if (argv[0] === "--diff") {
    const [, oldOut, newOut, flag, file] = argv;
    const markdown = argv.length === 5 && flag === "--cost-markdown" && file;
    if (!oldOut || !newOut || (argv.length !== 3 && !markdown)) {
      io.stderr(USAGE);
      return 2;
    }
    return diffCommand(oldOut, newOut, io, markdown ? { costMarkdown: file } : {});
  }
  const code = main(argv, io);
  if (code !== 0) return code;
  const args = parseArgs(argv);
  const outDir = path.resolve(io.cwd, args.out ?? path.join("out", args.stack));
  // Never leave a previous run's inventory next to this run's artifacts.
  for (const f of [INVENTORY_FILE, INVENTORY_SUMMARY_FILE]) fs.rmSync(path.join(outDir, f), { force: true });
  try {
    const stackFileText = fs.readFileSync(path.join(io.cwd, `Pulumi.${args.stack}.yaml`), "utf8");
    io.stdout(await writeInventory({ stackName: args.stack, stackFileText, outDir, repoRoot: io.repoRoot, load }));
  } catch (err) {
    io.stderr(`${PROJECT}: inventory: the program failed under the mock runtime: ${(err as Error).message}`);
    return 1;
  }
  return 0;
}

/**
 * cli() as the command runs it: an exception (a writer that cannot write its
 * folder, a bug) is reported with its message and exit status 1, where a
 * rejected promise would otherwise end the process with status 1 and no word.
 */
export async function runCli(argv: string[], io: SynthIo, load?: () => Promise<LoadedProgram>): Promise<number> {
  try {
    return await cli(argv, io, load);
  } catch (err) {
    io.stderr(`${PROJECT}: synth failed: ${err instanceof Error ? err.message : String(err)}`);
    return 1;
  }
}

if (require.main === module) {
  // A program that fails under the mock runtime can leave further rejected
  // outputs behind; the failure is reported once by cli(), not as a crash.
  process.on("unhandledRejection", () => {
    process.exitCode = process.exitCode || 1;
  });
  void runCli(process.argv.slice(2), {
    cwd: process.cwd(),
    repoRoot: path.resolve(__dirname, ".."),
    stdout: (line) => console.log(line),
    stderr: (line) => console.error(line),
  }).then((code) => {
    process.exitCode = code;
  });
}
