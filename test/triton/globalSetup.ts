/**
 * vitest globalSetup of the real-server suite: renders the test repository
 * with synth, starts tritonserver through test/triton/server.sh, hands the
 * endpoint to the tests, and stops the server afterwards. server.sh also
 * watches this process, so a killed test run cannot leave a server behind.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { TestProject } from "vitest/node";
import { ROOT, assembleRepository, runSynth, type HarnessInfo } from "./assemble";
import { stop, waitForState, type ServerState } from "./serverProcess";
import { venvPython } from "../lib/pyenv";

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

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const work = process.env.TRITON_TEST_WORK ?? mkdtempSync(path.join(os.tmpdir(), "triton-ft-it-"));
  const keepWork = process.env.TRITON_TEST_WORK !== undefined;
  log(`work dir ${work}`);
  const python = venvPython();

  const { plan, repository: synthRepository } = runSynth(work);
  const info = assembleRepository(work, python, plan, synthRepository);

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
  let state: ServerState;
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
