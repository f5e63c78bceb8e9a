/**
 * A real OpenSSH server as the builder: Debian's sshd on 127.0.0.1, in a
 * private mount namespace (test/ssh/sandbox.sh) where /opt is an empty tmpfs
 * and /etc/ssh holds what the program's own user data writes. Started and
 * stopped by pid; its log is kept for the tests to read.
 */
import { spawn, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as net from "node:net";
import * as path from "node:path";
import { ROOT } from "../k8s/stacks";
import { freePort, sleep } from "../lib/net";

/** Host tools stubbed on the builder (Docker, GPU and cloud tools); see test/scripts/stubs/stub.sh. */
export const STUBBED_TOOLS = [
  "docker",
  "git",
  "aws",
  "nvidia-smi",
  "cloud-init",
  "curl",
  "df",
  "sleep",
  "sudo",
  "apt-get",
];

export interface SshdInfo {
  dir: string;
  port: number;
  /** authorized_keys-format lines of the host keys sshd serves. */
  hostKeys: string[];
  stubLog: string;
  stubState: string;
  log: string;
}

export class TestSshd {
  private child?: ChildProcess;
  info?: SshdInfo;

  constructor(readonly dir: string) {}

  /** Starts sshd with the given user data and the public key allowed to log in. */
  async start(userData: string, authorizedKey: string, ssmParameters: Record<string, string> = {}): Promise<SshdInfo> {
    if (process.getuid?.() !== 0) {
      throw new Error("the SSH builder suite needs root: sshd runs in a private mount namespace (unshare --mount)");
    }
    const dir = this.dir;
    fs.mkdirSync(path.join(dir, "stub-state"), { recursive: true });
    const stubs = path.join(dir, "stubs");
    fs.mkdirSync(stubs, { recursive: true });
    // The shared multi-call stub under each tool's name; test/ssh/stubs/<tool> takes precedence
    // (and finds the shared one under stubs-base/).
    const base = path.join(dir, "stubs-base");
    fs.mkdirSync(base, { recursive: true });
    const own = fs.readdirSync(path.join(ROOT, "test/ssh/stubs"));
    for (const t of STUBBED_TOOLS) {
      fs.symlinkSync(path.join(ROOT, "test/scripts/stubs/stub.sh"), path.join(base, t));
      if (!own.includes(t)) fs.symlinkSync(path.join(ROOT, "test/scripts/stubs/stub.sh"), path.join(stubs, t));
    }
    for (const t of own) fs.symlinkSync(path.join(ROOT, "test/ssh/stubs", t), path.join(stubs, t));
    fs.writeFileSync(path.join(dir, "user-data.sh"), userData, { mode: 0o700 });
    fs.mkdirSync(path.join(dir, "stub-state/ssm"), { recursive: true });
    for (const [name, value] of Object.entries(ssmParameters)) {
      fs.writeFileSync(path.join(dir, "stub-state/ssm", name.replace(/\//g, "_")), value, { mode: 0o600 });
    }
    fs.writeFileSync(path.join(dir, "authorized_keys"), `${authorizedKey.trim()}\n`, { mode: 0o600 });
    const port = await freePort();
    const log = path.join(dir, "sshd.log");
    const fd = fs.openSync(log, "a");
    this.child = spawn(
      "unshare",
      ["--mount", "--propagation", "private", "bash", path.join(ROOT, "test/ssh/sandbox.sh"), dir, String(port), stubs],
      { stdio: ["ignore", fd, fd] },
    );
    fs.closeSync(fd);
    fs.writeFileSync(path.join(dir, "pids"), `${this.child.pid} sshd\n`);
    const deadline = Date.now() + 20_000;
    for (;;) {
      if (this.child.exitCode !== null) {
        throw new Error(
          `sshd exited (${this.child.exitCode}):\n${fs.readFileSync(log, "utf8")}\n${this.readOr("user-data.log")}`,
        );
      }
      if (fs.existsSync(path.join(dir, "ready")) && (await listening(port))) break;
      if (Date.now() > deadline)
        throw new Error(`sshd did not listen on 127.0.0.1:${port}:\n${this.readOr("sshd.log")}`);
      await sleep(100);
    }
    const hostKeys = fs
      .readFileSync(path.join(dir, "host-keys.pub"), "utf8")
      .split("\n")
      .filter(Boolean)
      .map((l) => l.split(" ").slice(0, 2).join(" "));
    this.info = {
      dir,
      port,
      hostKeys,
      stubLog: path.join(dir, "stub-calls.log"),
      stubState: path.join(dir, "stub-state"),
      log,
    };
    return this.info;
  }

  readOr(name: string): string {
    try {
      return fs.readFileSync(path.join(this.dir, name), "utf8");
    } catch {
      return "";
    }
  }

  /** Environment the stubs (and the step scripts) source at start-up, through BASH_ENV. */
  setControl(vars: Record<string, string>): void {
    const lines = Object.entries(vars).map(([k, v]) => `export ${k}='${v.replace(/'/g, "'\\''")}'`);
    fs.writeFileSync(path.join(this.dir, "control.env"), lines.join("\n") + "\n");
  }

  async stop(): Promise<void> {
    const c = this.child;
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    c.kill("SIGTERM");
    const deadline = Date.now() + 5000;
    while (c.exitCode === null && c.signalCode === null && Date.now() < deadline) await sleep(50);
    if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
  }
}

function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(port, "127.0.0.1");
    s.once("connect", () => {
      s.destroy();
      resolve(true);
    });
    s.once("error", () => resolve(false));
  });
}
