/**
 * The engine suite's control planes: one per test file (its own work folder,
 * ports, etcd and kwok; test/k8s/controlPlane.ts), so the files run side by side
 * (vitest.config.mts) while each file's scenarios still follow each other on a
 * cluster no other file touches. Started by a beforeAll registered ahead of the
 * file's own hooks, stopped by pid after the file's last test.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll } from "vitest";
import { killOnExit, startControlPlane, type ControlPlane } from "../k8s/controlPlane";

/** What a file needs of its control plane before it is up: paths, fixed at once (the clients are built at import). */
export interface FileControlPlane {
  /** The file's own folder (its control plane's state, and the file's engine work folders). */
  dir: string;
  kubeconfig: string;
  binDir: string;
}

/**
 * `name`'s control plane (a test file's), in `<K8S_WORK_DIR>/k8s-<name>` (test/engine/run.sh sets it;
 * its pid list is the runner's, so the runner stops what a crashed worker left). Call at the file's
 * top level, before its own beforeAll: the control plane is up when that runs.
 */
export function fileControlPlane(name: string): FileControlPlane {
  const given = process.env.K8S_WORK_DIR;
  const root = given ?? fs.mkdtempSync(path.join(os.tmpdir(), "triton-ft-engine-"));
  const binDir = process.env.K8S_BIN_DIR;
  if (!binDir) throw new Error("K8S_BIN_DIR is not set: run the suite with bash test/engine/run.sh");
  const dir = path.join(root, `k8s-${name}`);
  const log = (message: string) =>
    process.stderr.write(`${new Date().toISOString().slice(11, 19)} [k8s-setup ${name}] ${message}\n`);
  let plane: ControlPlane | undefined;
  let undo = () => {};
  beforeAll(async () => {
    plane = await startControlPlane(dir, log, path.join(root, "pids"));
    undo = killOnExit(plane);
  });
  afterAll(async () => {
    await plane?.stop();
    undo();
    // The runner removes its own work folder; a folder made here is this file's alone.
    if (!process.env.K8S_KEEP_WORK_DIR) fs.rmSync(given ? dir : root, { recursive: true, force: true });
  });
  return { dir, kubeconfig: path.join(dir, "kubeconfig"), binDir };
}
