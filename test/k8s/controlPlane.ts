/**
 * One control plane for a test run: etcd, kube-apiserver, kube-controller-manager,
 * kube-scheduler and kwok on loopback (test/k8s/cluster.ts, binaries from
 * test/k8s/build-control-plane.sh, passed as K8S_BIN_DIR), every vendored CRD
 * from test/data/crds installed and established. The k8s suite starts one in its
 * globalSetup; the engine suite one per test file (test/engine/fileControlPlane.ts),
 * so its files run side by side, each on its own API server, ports and kwok.
 */
import * as path from "node:path";
import { LocalCluster, type ClusterInfo } from "./cluster";
import { ROOT, listYaml } from "./stacks";

export const CRD_DIR = path.join(ROOT, "test/data/crds");

export type ControlPlaneInfo = ClusterInfo & { crds: string[] };

export interface ControlPlane {
  info: ControlPlaneInfo;
  /** Stops every process it started, by pid, and reports those that had died during the run. */
  stop(): Promise<void>;
  /** Synchronous last resort for exit handlers: SIGKILL by pid. */
  killNow(): void;
}

/**
 * Starts a control plane in `dir` (`K8S_BIN_DIR`, `K8S_VERSION`, `ETCD_BIN` from the
 * environment). `pidFile` collects the `<pid> <name>` lines the suite runner stops
 * should the runner die (test/lib/suite.sh); `log` prints progress.
 */
export async function startControlPlane(
  dir: string,
  log: (message: string) => void,
  pidFile: string = path.join(dir, "pids"),
): Promise<ControlPlane> {
  const binDir = process.env.K8S_BIN_DIR;
  const version = process.env.K8S_VERSION ?? "unknown";
  if (!binDir) throw new Error("K8S_BIN_DIR is not set: run the suite with its run.sh");
  const cluster = new LocalCluster(dir, binDir, process.env.ETCD_BIN ?? path.join(binDir, "etcd"), pidFile);
  try {
    log(`starting the control plane ${version} in ${dir}`);
    const info = await cluster.up(version);
    const served = JSON.parse(await cluster.kubectl(["version", "-o", "json"])) as {
      serverVersion?: { gitVersion?: string };
    };
    if (served.serverVersion?.gitVersion !== version) {
      throw new Error(`the apiserver reports ${served.serverVersion?.gitVersion}, expected ${version}`);
    }
    const crds: string[] = [];
    for (const f of listYaml(CRD_DIR)) {
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
    return {
      info: { ...info, crds },
      stop: async () => {
        const dead = cluster.deadProcesses();
        if (dead.length > 0) log(`processes that died during the run:\n${dead.join("\n")}`);
        await cluster.down();
        log("control plane stopped");
      },
      killNow: () => cluster.killNow(),
    };
  } catch (err) {
    await cluster.down();
    throw err;
  }
}

/** Kills the control plane by pid when this process exits or is interrupted; returns the undo. */
export function killOnExit(plane: Pick<ControlPlane, "killNow">): () => void {
  const onExit = () => plane.killNow();
  const onSignal = () => {
    plane.killNow();
    process.exit(130);
  };
  process.once("exit", onExit);
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  return () => {
    process.off("exit", onExit);
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  };
}
