/**
 * The test tritonserver as a child process (test/triton/server.sh in serve mode): wait for the
 * state file it writes once ready, and stop it by its own id. Shared by the real-server and
 * gateway suites' globalSetups.
 */
import type { ChildProcess } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";

/** What server.sh writes to --state-file once the server is ready. */
export interface ServerState {
  http: string;
  grpc: string;
  /** Prometheus exposition endpoint (`http://127.0.0.1:<port>/metrics`). */
  metrics: string;
  log: string;
}

export function waitForState(server: ChildProcess, stateFile: string, timeoutMs: number): Promise<ServerState> {
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
        resolve(JSON.parse(readFileSync(stateFile, "utf8")) as ServerState);
      } else if (Date.now() > deadline) {
        clearInterval(timer);
        server.off("exit", onExit);
        reject(new Error(`tritonserver not ready within ${timeoutMs / 1000}s`));
      }
    }, 250);
  });
}

/** SIGTERM to the process we started (server.sh stops its server on it), then wait for its exit. */
export function stop(server: ChildProcess): Promise<void> {
  if (server.exitCode !== null || server.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    server.once("exit", () => resolve());
    server.kill("SIGTERM");
  });
}
