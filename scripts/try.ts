/**
 * `npm run try -- [--model <Hugging Face id or checkpoint folder>]`: the endpoint
 * on this machine's CPU, without AWS. vLLM (the project's model repository,
 * images/vllm) on a CPU tritonserver (nvidia-pytriton, test/triton/server.sh),
 * behind the real gateway (images/gateway) with a generated key and a team's
 * limits, all on loopback. Prints the OpenAI base URL and the key, serves
 * until Ctrl-C (SIGINT) or SIGTERM, then stops the gateway and the server and
 * leaves no process behind.
 *
 * A Hugging Face id is downloaded once into ~/.cache/triton-ft/models (the
 * only network use); a folder is served as it is. GPT-2 124M by default.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { renderGatewayConfig } from "../infra/plan/gatewayConfig";
import { maxPromptBytes } from "../infra/plan/modelRepository";
import { writeVllmRepository } from "./vllm-repository";
import { startGateway } from "../test/gateway/harness";
import { VLLM_LOCK, venvPython } from "../test/lib/pyenv";

const ROOT = path.resolve(__dirname, "..");
const DEFAULT_MODEL = "openai-community/gpt2";
/** The context the try-out serves at most: CPU decode is slow, and the KV cache is 1 GiB. */
const MAX_CONTEXT = 1024;

interface Options {
  model: string;
  readyTimeoutSeconds: number;
}

function parseArgs(argv: string[]): Options {
  const options: Options = { model: DEFAULT_MODEL, readyTimeoutSeconds: 600 };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === "--model" && argv[i + 1]) options.model = argv[++i];
    else if (arg === "--ready-timeout" && argv[i + 1]) options.readyTimeoutSeconds = Number(argv[++i]);
    else
      throw new Error(`unknown argument ${arg}: usage: npm run try -- [--model <hf id or folder>] [--ready-timeout s]`);
  }
  return options;
}

function log(message: string): void {
  process.stderr.write(`${new Date().toISOString().slice(11, 19)} [try] ${message}\n`);
}

function cacheRoot(): string {
  return (
    process.env.TRITON_FT_CACHE ??
    path.join(process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), ".cache"), "triton-ft")
  );
}

/** The checkpoint folder: the given one, or the Hub id downloaded once (config, tokenizer, safetensors). */
function checkpoint(model: string, python: string): string {
  if (existsSync(model) && statSync(model).isDirectory()) return path.resolve(model);
  const target = path.join(cacheRoot(), "models", model.replace(/\//g, "--"));
  if (!existsSync(path.join(target, "config.json"))) {
    log(`downloading ${model} from the Hugging Face Hub into ${target}`);
    execFileSync(
      python,
      [
        "-c",
        "import sys; from huggingface_hub import snapshot_download; " +
          "snapshot_download(sys.argv[1], local_dir=sys.argv[2], " +
          "allow_patterns=['*.json', '*.safetensors', '*.txt', 'tokenizer*', 'merges.txt', 'vocab.*'])",
        model,
        target,
      ],
      { stdio: ["ignore", "inherit", "inherit"] },
    );
  }
  return target;
}

interface CheckpointShape {
  vocab: number;
  maxModelLen: number;
}

function shape(dir: string): CheckpointShape {
  const config = JSON.parse(readFileSync(path.join(dir, "config.json"), "utf8")) as Record<string, unknown>;
  const positions = [config.n_positions, config.max_position_embeddings].find((v) => typeof v === "number");
  if (typeof config.vocab_size !== "number" || typeof positions !== "number") {
    throw new Error(`${dir}/config.json has no vocab_size or n_positions/max_position_embeddings`);
  }
  return { vocab: config.vocab_size, maxModelLen: Math.min(positions, MAX_CONTEXT) };
}

function waitForFile(file: string, child: ChildProcess, timeoutMs: number): Promise<Record<string, string>> {
  return new Promise((resolve, reject) => {
    const deadline = Date.now() + timeoutMs;
    const timer = setInterval(() => {
      if (existsSync(file)) {
        clearInterval(timer);
        resolve(JSON.parse(readFileSync(file, "utf8")) as Record<string, string>);
      } else if (child.exitCode !== null || child.signalCode !== null) {
        clearInterval(timer);
        reject(new Error(`tritonserver stopped before it was ready (see the [triton-server] lines above)`));
      } else if (Date.now() > deadline) {
        clearInterval(timer);
        reject(new Error(`tritonserver not ready after ${timeoutMs / 1000}s`));
      }
    }, 250);
  });
}

function stopChild(child: ChildProcess, timeoutMs = 60_000): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.once("exit", () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill("SIGTERM");
  });
}

async function main(): Promise<void> {
  const options = parseArgs(process.argv.slice(2));
  const work = mkdtempSync(path.join(os.tmpdir(), "triton-ft-try-"));
  const stoppers: (() => Promise<void>)[] = [];
  let stopping = false;
  const stopAll = async (status: number): Promise<never> => {
    if (!stopping) {
      stopping = true;
      log("stopping the gateway and tritonserver");
      for (const stop of stoppers.reverse()) await stop();
      rmSync(work, { recursive: true, force: true });
    }
    process.exit(status);
  };
  process.on("SIGINT", () => void stopAll(0));
  process.on("SIGTERM", () => void stopAll(0));
  try {
    log("phase: the vLLM venv (test/vllm/requirements.lock; a cold build downloads about 3 GB)");
    const python = venvPython(VLLM_LOCK);
    const venv = path.dirname(path.dirname(python));
    const dir = checkpoint(options.model, python);
    const { vocab, maxModelLen } = shape(dir);
    const repository = path.join(work, "repository");
    // The stack's own renderer (infra/plan/vllmRepository.ts), with CPU settings: half the context for the prompt.
    writeVllmRepository(repository, {
      modelPath: path.resolve(dir),
      device: "cpu",
      dtype: "float32",
      tensorParallel: 1,
      gpuMemoryUtilization: 0.9,
      maxModelLen,
      kvCacheGiB: 1,
      maxNumSeqs: 8,
      maxInputLen: Math.floor(maxModelLen / 2),
      maxOutputLen: Math.floor(maxModelLen / 2),
      maxPromptBytes: maxPromptBytes(Math.floor(maxModelLen / 2)),
      maxLogprobs: 20,
      enforceEager: true,
    });
    log(`phase: tritonserver with the vLLM model on ${dir} (context ${maxModelLen} tokens)`);
    const stateFile = path.join(work, "server.json");
    const server = spawn(
      "bash",
      [
        path.join(ROOT, "test/triton/server.sh"),
        "--model-repository",
        repository,
        "--python-venv",
        venv,
        "--state-file",
        stateFile,
        "--ready-timeout",
        String(options.readyTimeoutSeconds),
        "--watch-pid",
        String(process.pid),
      ],
      { stdio: ["ignore", "inherit", "inherit"] },
    );
    stoppers.push(() => stopChild(server));
    const state = await waitForFile(stateFile, server, (options.readyTimeoutSeconds + 30) * 1000);
    const id = path.basename(options.model.replace(/\/+$/, ""));
    const half = Math.floor(maxModelLen / 2);
    const config = renderGatewayConfig([
      { id, maxInputLen: half, maxOutputLen: half, maxBatchSize: 8, vocab, tritonGrpc: state.grpc, maxInflight: 8 },
    ]);
    const { gateway, stop } = await startGateway(work, "gateway", config, [
      { name: "local", requestsPerMinute: 60, tokensPerMinute: 20_000, maxConcurrent: 4 },
    ]);
    stoppers.push(stop);
    process.stdout.write(
      [
        `model: ${id}`,
        `OpenAI base URL: ${gateway.url}/v1`,
        `API key: ${gateway.keys.local}`,
        `limits: 60 requests/min, 20000 tokens/min, 4 at a time; Ctrl-C stops everything`,
        "",
      ].join("\n"),
    );
  } catch (error) {
    log(`ERROR: ${(error as Error).message}`);
    await stopAll(1);
  }
}

void main();
