/**
 * A real Kubernetes control plane on loopback: etcd, kube-apiserver,
 * kube-controller-manager, kube-scheduler and kwok (which makes fake nodes and
 * their pods Ready). Every process is started here, recorded by pid (also in
 * <dir>/pids so test/k8s/run.sh can clean up after a crashed runner), and
 * stopped by that pid, nothing else.
 */
import { spawn, execFile, type ChildProcess } from "node:child_process";
import { generateKeyPairSync, randomBytes } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { promisify } from "node:util";
import { freePort, sleep } from "../lib/net";

const execFileAsync = promisify(execFile);

export interface ClusterInfo {
  dir: string;
  kubeconfig: string;
  binDir: string;
  server: string;
  version: string;
  setupSeconds: number;
}

interface Proc {
  name: string;
  child: ChildProcess;
  log: string;
}

/**
 * Debian's etcd 3.4 cannot serve watch-progress requests, so the apiserver
 * refuses streaming watch-lists; newer client-go (kwok's) asks for them by
 * default and then re-lists on a back-off, which delays every pod update by
 * seconds to minutes. Clients use plain list+watch.
 */
const CLIENT_ENV = { KUBE_FEATURE_WatchListClient: "false" };

export class LocalCluster {
  private procs: Proc[] = [];
  private stopped = false;
  readonly kubeconfig: string;

  /** `pidFile` defaults to `<dir>/pids`; the engine suite's control planes, one per test file, share their runner's. */
  constructor(
    readonly dir: string,
    readonly binDir: string,
    readonly etcdBin: string,
    readonly pidFile: string = path.join(dir, "pids"),
  ) {
    this.kubeconfig = path.join(dir, "kubeconfig");
  }

  private start(name: string, cmd: string, args: string[]): Proc {
    const log = path.join(this.dir, `${name}.log`);
    const fd = fs.openSync(log, "a");
    const child = spawn(cmd, args, { stdio: ["ignore", fd, fd], env: { ...process.env, ...CLIENT_ENV } });
    fs.closeSync(fd);
    if (child.pid === undefined) throw new Error(`could not start ${name} (${cmd})`);
    fs.appendFileSync(this.pidFile, `${child.pid} ${name}\n`);
    const proc = { name, child, log };
    child.on("exit", (code, signal) => {
      if (!this.stopped) {
        fs.appendFileSync(log, `\n[harness] ${name} exited unexpectedly: code ${code} signal ${signal}\n`);
      }
    });
    this.procs.push(proc);
    return proc;
  }

  private alive(p: Proc): boolean {
    return p.child.exitCode === null && p.child.signalCode === null;
  }

  private tail(p: Proc, lines = 30): string {
    try {
      return fs.readFileSync(p.log, "utf8").split("\n").slice(-lines).join("\n");
    } catch {
      return "";
    }
  }

  private async waitFor(what: string, probe: () => Promise<boolean>, owner: Proc, seconds: number): Promise<void> {
    const deadline = Date.now() + seconds * 1000;
    while (Date.now() < deadline) {
      if (!this.alive(owner)) throw new Error(`${owner.name} died while waiting for ${what}:\n${this.tail(owner)}`);
      if (await probe().catch(() => false)) return;
      await sleep(250);
    }
    throw new Error(`timed out after ${seconds}s waiting for ${what}; ${owner.name} log:\n${this.tail(owner)}`);
  }

  async kubectl(args: string[], input?: string): Promise<string> {
    return kubectlRun(this.binDir, this.kubeconfig, args, input);
  }

  async up(version: string): Promise<ClusterInfo> {
    const t0 = Date.now();
    fs.mkdirSync(this.dir, { recursive: true });
    const [etcdClient, etcdPeer, apiPort] = [await freePort(), await freePort(), await freePort()];

    // etcd 3.5 from the Go module proxy (test/k8s/build-control-plane.sh).
    const etcd = this.start("etcd", this.etcdBin, [
      "--name=default",
      `--data-dir=${path.join(this.dir, "etcd")}`,
      `--listen-client-urls=http://127.0.0.1:${etcdClient}`,
      `--advertise-client-urls=http://127.0.0.1:${etcdClient}`,
      `--listen-peer-urls=http://127.0.0.1:${etcdPeer}`,
      `--initial-advertise-peer-urls=http://127.0.0.1:${etcdPeer}`,
      `--initial-cluster=default=http://127.0.0.1:${etcdPeer}`,
      "--quota-backend-bytes=536870912",
      "--log-level=warn",
    ]);
    await this.waitFor("etcd health", async () => (await fetch(`http://127.0.0.1:${etcdClient}/health`)).ok, etcd, 30);

    // Service-account signing key and an admin token (group system:masters).
    const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
    const saKey = path.join(this.dir, "sa.key");
    const saPub = path.join(this.dir, "sa.pub");
    fs.writeFileSync(saKey, privateKey.export({ type: "pkcs1", format: "pem" }), { mode: 0o600 });
    fs.writeFileSync(saPub, publicKey.export({ type: "spki", format: "pem" }));
    const token = randomBytes(24).toString("hex");
    const tokens = path.join(this.dir, "tokens.csv");
    fs.writeFileSync(tokens, `${token},admin,admin,"system:masters"\n`, { mode: 0o600 });
    const certDir = path.join(this.dir, "pki");
    const server = `https://127.0.0.1:${apiPort}`;

    const api = this.start("kube-apiserver", path.join(this.binDir, "kube-apiserver"), [
      `--etcd-servers=http://127.0.0.1:${etcdClient}`,
      "--bind-address=127.0.0.1",
      "--advertise-address=127.0.0.1",
      `--secure-port=${apiPort}`,
      `--cert-dir=${certDir}`,
      // On loopback there is no node to reconcile the kubernetes Service endpoints against.
      "--endpoint-reconciler-type=none",
      `--token-auth-file=${tokens}`,
      "--authorization-mode=RBAC",
      "--service-cluster-ip-range=10.96.0.0/16",
      "--service-account-issuer=https://kubernetes.default.svc",
      `--service-account-key-file=${saPub}`,
      `--service-account-signing-key-file=${saKey}`,
      "--api-audiences=https://kubernetes.default.svc",
      "--allow-privileged=false",
      "--v=0",
    ]);
    const caFile = path.join(certDir, "apiserver.crt");
    this.writeKubeconfig(server, token, caFile);
    await this.waitFor(
      "kube-apiserver /readyz",
      async () => fs.existsSync(caFile) && (await this.kubectl(["get", "--raw", "/readyz"])).trim() === "ok",
      api,
      120,
    );

    this.start("kube-controller-manager", path.join(this.binDir, "kube-controller-manager"), [
      `--kubeconfig=${this.kubeconfig}`,
      `--authentication-kubeconfig=${this.kubeconfig}`,
      `--authorization-kubeconfig=${this.kubeconfig}`,
      "--bind-address=127.0.0.1",
      "--secure-port=0",
      "--leader-elect=false",
      `--service-account-private-key-file=${saKey}`,
      `--root-ca-file=${caFile}`,
      "--use-service-account-credentials=false",
      "--controllers=*,-nodeipam,-cloud-node-lifecycle,-service-lb-controller,-route",
      // kwok's heartbeats keep nodes Ready; evict pods from a lost node quickly all the same.
      "--node-monitor-grace-period=40s",
      "--v=0",
    ]);
    this.start("kube-scheduler", path.join(this.binDir, "kube-scheduler"), [
      `--kubeconfig=${this.kubeconfig}`,
      `--authentication-kubeconfig=${this.kubeconfig}`,
      `--authorization-kubeconfig=${this.kubeconfig}`,
      "--bind-address=127.0.0.1",
      "--secure-port=0",
      "--leader-elect=false",
      "--v=0",
    ]);
    // kwok manages only the nodes the tests mark as fake, and gives them a
    // loopback address so nothing ever dials off the machine.
    this.start("kwok", path.join(this.binDir, "kwok"), [
      `--kubeconfig=${this.kubeconfig}`,
      "--manage-all-nodes=false",
      "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
      "--node-ip=127.0.0.1",
      "--cidr=10.244.0.0/16",
      "--node-lease-duration-seconds=40",
      "--server-address=",
      ...fs
        .readdirSync(path.join(this.binDir, "../stages"))
        .filter((f) => f.endsWith(".yaml"))
        .map((f) => `--config=${path.join(this.binDir, "../stages", f)}`),
    ]);
    // The default ServiceAccount exists once the controller manager runs: a
    // pod created before that would be refused by admission.
    await this.waitFor(
      "the default ServiceAccount",
      async () => (await this.kubectl(["get", "serviceaccount", "default", "-o", "name"])).includes("default"),
      this.procs.find((p) => p.name === "kube-controller-manager") as Proc,
      60,
    );
    for (const p of this.procs) {
      if (!this.alive(p)) throw new Error(`${p.name} exited during start-up:\n${this.tail(p)}`);
    }
    return {
      dir: this.dir,
      kubeconfig: this.kubeconfig,
      binDir: this.binDir,
      server,
      version,
      setupSeconds: (Date.now() - t0) / 1000,
    };
  }

  private writeKubeconfig(server: string, token: string, caFile: string): void {
    // The apiserver writes its self-signed serving cert for 127.0.0.1 into cert-dir; trust exactly that.
    const cfg = [
      "apiVersion: v1",
      "kind: Config",
      "clusters:",
      "- name: local",
      "  cluster:",
      `    server: ${server}`,
      `    certificate-authority: ${caFile}`,
      "users:",
      "- name: admin",
      "  user:",
      `    token: ${token}`,
      "contexts:",
      "- name: local",
      "  context: {cluster: local, user: admin}",
      "current-context: local",
      "",
    ].join("\n");
    fs.writeFileSync(this.kubeconfig, cfg, { mode: 0o600 });
  }

  /** Dead control-plane processes (a crash mid-suite makes every later failure confusing). */
  deadProcesses(): string[] {
    return this.procs.filter((p) => !this.alive(p)).map((p) => `${p.name}:\n${this.tail(p)}`);
  }

  /** Stops every process this harness started, by pid: SIGTERM, then SIGKILL after a grace period. */
  async down(): Promise<void> {
    this.stopped = true;
    const running = this.procs.filter((p) => this.alive(p));
    for (const p of running.reverse()) p.child.kill("SIGTERM");
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline && this.procs.some((p) => this.alive(p))) await sleep(100);
    for (const p of this.procs) if (this.alive(p)) p.child.kill("SIGKILL");
  }

  /** Synchronous last resort for process exit handlers. */
  killNow(): void {
    this.stopped = true;
    for (const p of this.procs) if (this.alive(p)) p.child.kill("SIGKILL");
  }
}

export async function kubectlRun(binDir: string, kubeconfig: string, args: string[], input?: string): Promise<string> {
  const child = execFileAsync(path.join(binDir, "kubectl"), [`--kubeconfig=${kubeconfig}`, ...args], {
    maxBuffer: 64 * 1024 * 1024,
    env: { ...process.env, ...CLIENT_ENV },
  });
  if (input !== undefined) {
    child.child.stdin?.end(input);
  }
  try {
    const { stdout } = await child;
    return stdout;
  } catch (err) {
    const e = err as { stderr?: string; stdout?: string; message: string };
    throw new KubectlError(args, e.stderr ?? "", e.stdout ?? "", e.message);
  }
}

export class KubectlError extends Error {
  constructor(
    readonly args: string[],
    readonly stderr: string,
    readonly stdout: string,
    message: string,
  ) {
    super(`kubectl ${args.join(" ")} failed: ${stderr.trim() || message}`);
    this.name = "KubectlError";
  }
}
