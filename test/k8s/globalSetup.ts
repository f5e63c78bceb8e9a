/**
 * vitest globalSetup of the control-plane suite: starts etcd, kube-apiserver,
 * kube-controller-manager, kube-scheduler and kwok on loopback (binaries from
 * test/k8s/build-control-plane.sh, passed as K8S_BIN_DIR), installs every
 * vendored CRD from test/data/crds, hands the kubeconfig to the tests, and
 * stops every process it started afterwards, by pid.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import type { TestProject } from "vitest/node";
import { LocalCluster, type ClusterInfo } from "./cluster";
import { ROOT, listYaml } from "./stacks";

declare module "vitest" {
  export interface ProvidedContext {
    k8s: ClusterInfo & { crds: string[] };
  }
}

function log(message: string): void {
  process.stderr.write(`${new Date().toISOString().slice(11, 19)} [k8s-setup] ${message}\n`);
}

export const CRD_DIR = path.join(ROOT, "test/data/crds");

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const binDir = process.env.K8S_BIN_DIR;
  const version = process.env.K8S_VERSION ?? "unknown";
  if (!binDir) throw new Error("K8S_BIN_DIR is not set: run the suite with bash test/k8s/run.sh");
  const dir = process.env.K8S_WORK_DIR ?? fs.mkdtempSync(path.join(os.tmpdir(), "triton-ft-k8s-"));
  const cluster = new LocalCluster(dir, binDir, process.env.ETCD_BIN ?? path.join(binDir, "etcd"));
  const onExit = () => cluster.killNow();
  process.once("exit", onExit);
  for (const sig of ["SIGINT", "SIGTERM"] as const) {
    process.once(sig, () => {
      cluster.killNow();
      process.exit(130);
    });
  }

  try {
    log(`starting the control plane ${version} in ${dir}`);
    const info = await cluster.up(version);
    const served = JSON.parse(await cluster.kubectl(["version", "-o", "json"])) as {
      serverVersion?: { gitVersion?: string };
    };
    if (served.serverVersion?.gitVersion !== version) {
      throw new Error(`the apiserver reports ${served.serverVersion?.gitVersion}, expected ${version}`);
    }
    const crdFiles = listYaml(CRD_DIR);
    const crds: string[] = [];
    for (const f of crdFiles) {
      const out = await cluster.kubectl([
        "apply",
        "--server-side",
        "--field-manager=triton-ft-test",
        "-o",
        "name",
        "-f",
        f,
      ]);
      crds.push(...out.split("\n").filter(Boolean));
    }
    if (crds.length > 0) {
      await cluster.kubectl(["wait", "--for=condition=Established", "--timeout=60s", ...crds]);
    }
    log(`control plane ${version} up in ${info.setupSeconds.toFixed(1)}s; ${crds.length} vendored CRD(s) established`);
    project.provide("k8s", { ...info, crds });
  } catch (err) {
    await cluster.down();
    throw err;
  }

  return async () => {
    const dead = cluster.deadProcesses();
    if (dead.length > 0) log(`processes that died during the run:\n${dead.join("\n")}`);
    await cluster.down();
    process.off("exit", onExit);
    if (!process.env.K8S_KEEP_WORK_DIR) fs.rmSync(dir, { recursive: true, force: true });
    log("control plane stopped");
  };
}
