/**
 * vitest globalSetup of the control-plane suite: starts one control plane
 * (test/k8s/controlPlane.ts: etcd, kube-apiserver, kube-controller-manager,
 * kube-scheduler and kwok on loopback, every vendored CRD installed), hands the
 * kubeconfig to the tests, and stops every process it started afterwards, by pid.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import type { TestProject } from "vitest/node";
import { killOnExit, startControlPlane, type ControlPlaneInfo } from "./controlPlane";

declare module "vitest" {
  export interface ProvidedContext {
    k8s: ControlPlaneInfo;
  }
}

function log(message: string): void {
  process.stderr.write(`${new Date().toISOString().slice(11, 19)} [k8s-setup] ${message}\n`);
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const dir = process.env.K8S_WORK_DIR ?? fs.mkdtempSync(path.join(os.tmpdir(), "triton-ft-k8s-"));
  const plane = await startControlPlane(dir, log);
  const undo = killOnExit(plane);
  project.provide("k8s", plane.info);
  return async () => {
    await plane.stop();
    undo();
    if (!process.env.K8S_KEEP_WORK_DIR) fs.rmSync(dir, { recursive: true, force: true });
  };
}
