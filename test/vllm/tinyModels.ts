/**
 * The tiny random checkpoints (test/vllm/make_checkpoints.py) and the CPU settings the project's vLLM
 * model is rendered with for them: shared by the vLLM suite's gateway part (test/vllm/gatewaySetup.ts)
 * and the gateway suite in vLLM mode (test/gateway/vllmUpstream.ts).
 */
import { execFileSync, spawn } from "node:child_process";
import { cpSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { VllmModelSettings } from "../../infra/plan/vllmRepository";
import { ROOT } from "../gateway/harness";
import { type ServerState, stop, waitForState } from "../triton/serverProcess";

/** The tiny checkpoints' vocabulary (test/vllm/make_checkpoints.py VOCAB, the test tokenizer's size). */
export const TINY_VOCAB = 512;
/** The vLLM models' max_logprobs (as test/vllm/repository.py cpu_settings). */
export const MAX_LOGPROBS = 20;

/** The families make_checkpoints.py writes, by its folder names. */
export type TinyFamily = "gptj" | "gptneox" | "gpt2" | "codegen";

/** Writes the tiny checkpoints under `out` (afresh) with the vLLM venv's `python`; their folders by family. */
export function writeTinyCheckpoints(python: string, out: string): Record<TinyFamily, string> {
  rmSync(out, { recursive: true, force: true });
  return JSON.parse(
    execFileSync(python, [path.join(ROOT, "test/vllm/make_checkpoints.py"), out], { encoding: "utf8" }),
  ) as Record<TinyFamily, string>;
}

/** A copy of a rotary checkpoint (GPT-NeoX) at `to` with room for `positions`: rotary positions hold no weights. */
export function withPositions(checkpoint: string, to: string, positions: number): string {
  rmSync(to, { recursive: true, force: true });
  cpSync(checkpoint, to, { recursive: true });
  const configFile = path.join(to, "config.json");
  const config = JSON.parse(readFileSync(configFile, "utf8")) as Record<string, unknown>;
  writeFileSync(configFile, JSON.stringify({ ...config, max_position_embeddings: positions }, null, 2));
  return to;
}

/** The limits a test serves a tiny model with: its context, the prompt's and the output's share, sequences at once. */
export interface TinyLimits {
  context: number;
  maxInputLen: number;
  maxOutputLen: number;
  maxNumSeqs: number;
}

/** test/vllm/repository.py's CPU settings (cpu_settings): fp32, eager, 1 GiB of KV cache. */
export function cpuSettings(modelPath: string, limits: TinyLimits): VllmModelSettings {
  return {
    modelPath: path.resolve(modelPath),
    device: "cpu",
    dtype: "float32",
    tensorParallel: 1,
    gpuMemoryUtilization: 0.9,
    maxModelLen: limits.context,
    kvCacheGiB: 1,
    maxNumSeqs: limits.maxNumSeqs,
    maxInputLen: limits.maxInputLen,
    maxOutputLen: limits.maxOutputLen,
    maxPromptBytes: 32 * limits.context,
    maxLogprobs: MAX_LOGPROBS,
    enforceEager: true,
  };
}

/** A vLLM tritonserver started: its log, the pid of its server.sh (SIGTERM stops both), its readiness. */
export interface VllmServer {
  log: string;
  pid: number;
  /** Resolves with its addresses once every model is ready (vLLM loads in about a minute on 2 cores). */
  ready: Promise<ServerState>;
  stop: () => Promise<void>;
}

/**
 * Starts `repository` (vLLM models) on a real CPU tritonserver (test/triton/server.sh with the vLLM
 * venv of `python`), stopped with this process.
 */
export function startVllmServer(work: string, name: string, repository: string, python: string): VllmServer {
  const log = path.join(work, `${name}.tritonserver.log`);
  const stateFile = path.join(work, `${name}.server.json`);
  const server = spawn(
    "bash",
    [
      path.join(ROOT, "test/triton/server.sh"),
      "--model-repository",
      repository,
      "--python-venv",
      path.dirname(path.dirname(python)),
      "--state-file",
      stateFile,
      "--log",
      log,
      "--ready-timeout",
      "900",
      "--watch-pid",
      String(process.pid),
    ],
    { cwd: ROOT, stdio: ["ignore", "inherit", "inherit"] },
  );
  return { log, pid: server.pid ?? -1, ready: waitForState(server, stateFile, 960_000), stop: () => stop(server) };
}
