/**
 * vitest globalSetup of the real-server suite: renders the test repository
 * with synth, starts tritonserver through test/triton/server.sh, hands the
 * endpoint to the tests, and stops the server afterwards. server.sh also
 * watches this process, so a killed test run cannot leave a server behind.
 */
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { TestProject } from "vitest/node";
import { ROOT, assembleRepository, runSynth, type HarnessInfo } from "./assemble";

export interface TritonHarness extends HarnessInfo {
  http: string;
  grpc: string;
  /** Prometheus exposition endpoint of the server (`http://127.0.0.1:<port>/metrics`). */
  metrics: string;
  log: string;
}

declare module "vitest" {
  export interface ProvidedContext {
    triton: TritonHarness;
  }
}

function log(message: string): void {
  process.stderr.write(`${new Date().toISOString().slice(11, 19)} [triton-setup] ${message}\n`);
}

function waitForState(
  server: ChildProcess,
  stateFile: string,
  timeoutMs: number,
): Promise<{ http: string; grpc: string; metrics: string; log: string }> {
  return new Promise((resolve, reject) => {
    const deadline = Date.now() + timeoutMs;
    const onExit = (code: number | null): void => {
      clearInterval(timer);
      reject(
        new Error(`test/triton/server.sh exited (status ${code}) before the server was ready; see its output above`),
      );
    };
    server.once("exit", onExit);
    const timer = setInterval(() => {
      if (existsSync(stateFile)) {
        clearInterval(timer);
        server.off("exit", onExit);
        resolve(
          JSON.parse(readFileSync(stateFile, "utf8")) as { http: string; grpc: string; metrics: string; log: string },
        );
      } else if (Date.now() > deadline) {
        clearInterval(timer);
        server.off("exit", onExit);
        reject(new Error(`tritonserver not ready within ${timeoutMs / 1000}s`));
      }
    }, 250);
  });
}

function stop(server: ChildProcess): Promise<void> {
  if (server.exitCode !== null || server.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    server.once("exit", () => resolve());
    server.kill("SIGTERM");
  });
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const work = process.env.TRITON_TEST_WORK ?? mkdtempSync(path.join(os.tmpdir(), "triton-ft-it-"));
  const keepWork = process.env.TRITON_TEST_WORK !== undefined;
  log(`work dir ${work}`);
  const venv = execFileSync(
    "bash",
    [path.join(ROOT, "test/lib/pyenv.sh"), path.join(ROOT, "test/triton/requirements.lock")],
    {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "inherit"],
    },
  ).trim();

  const { plan, repository: synthRepository } = runSynth(work);
  const info = assembleRepository(work, path.join(venv, "bin/python"), plan, synthRepository);

  const stateFile = path.join(work, "server.json");
  const serverLog = path.join(work, "tritonserver.log");
  const server = spawn(
    "bash",
    [
      path.join(ROOT, "test/triton/server.sh"),
      "--model-repository",
      info.repository,
      "--state-file",
      stateFile,
      "--log",
      serverLog,
      "--watch-pid",
      String(process.pid),
    ],
    { cwd: ROOT, stdio: ["ignore", "inherit", "inherit"] },
  );
  let state: { http: string; grpc: string; metrics: string; log: string };
  try {
    state = await waitForState(server, stateFile, 300_000);
  } catch (error) {
    await stop(server);
    throw error;
  }
  log(`tritonserver ready at ${state.http} (log ${state.log})`);
  project.provide("triton", { ...info, http: state.http, grpc: state.grpc, metrics: state.metrics, log: state.log });

  return async () => {
    await stop(server);
    log("tritonserver stopped");
    if (!keepWork) rmSync(work, { recursive: true, force: true });
  };
}
