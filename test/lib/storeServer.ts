/**
 * A real Valkey or Redis server for the process-level suites: Debian's
 * `valkey-server` when installed, else `redis-server` (Debian 12 ships Redis
 * 7.0; `.ci/run` installs it), on 127.0.0.1 at a free port, with a password,
 * append-only persistence in its own directory (a restart keeps the data, as
 * the in-cluster store's volume does), never daemonized. Started and stopped
 * by its own pid; `restart` brings it back on the same port and data.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import * as fs from "node:fs";
import * as net from "node:net";
import * as path from "node:path";
import { freePort, sleep } from "./net";

/** The server binary: Valkey where the distribution has it, Redis otherwise (same protocol and commands). */
export function storeServerBinary(): string {
  for (const name of ["valkey-server", "redis-server"]) {
    try {
      return execFileSync("sh", ["-c", `command -v ${name}`], { encoding: "utf8" }).trim();
    } catch {
      // not installed: try the next
    }
  }
  throw new Error("neither valkey-server nor redis-server is installed: apt-get install -y redis-server");
}

export interface StoreServerInfo {
  host: string;
  port: number;
  password: string;
  pid: number;
  log: string;
}

export class StoreServer {
  private child: ChildProcess | undefined;
  readonly password = randomBytes(18).toString("base64url");
  port = 0;

  constructor(readonly dir: string) {}

  get info(): StoreServerInfo {
    return {
      host: "127.0.0.1",
      port: this.port,
      password: this.password,
      pid: this.child?.pid ?? -1,
      log: path.join(this.dir, "store.log"),
    };
  }

  async start(): Promise<StoreServerInfo> {
    fs.mkdirSync(this.dir, { recursive: true });
    this.port ||= await freePort();
    const log = path.join(this.dir, "store.log");
    const fd = fs.openSync(log, "a");
    this.child = spawn(
      storeServerBinary(),
      [
        "--bind",
        "127.0.0.1",
        "--port",
        String(this.port),
        "--requirepass",
        this.password,
        "--dir",
        this.dir,
        "--appendonly",
        "yes",
        "--appendfsync",
        "always",
        "--save",
        "",
        "--daemonize",
        "no",
      ],
      { stdio: ["ignore", fd, fd] },
    );
    fs.closeSync(fd);
    const deadline = Date.now() + 20_000;
    while (!(await listening(this.port))) {
      if (this.child.exitCode !== null) throw new Error(`the store server exited:\n${fs.readFileSync(log, "utf8")}`);
      if (Date.now() > deadline) throw new Error(`the store server did not listen on 127.0.0.1:${this.port}`);
      await sleep(50);
    }
    return this.info;
  }

  /** SIGTERM to our own server (it writes its append-only file and exits), SIGKILL after 5 s. */
  async stop(): Promise<void> {
    const c = this.child;
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => c.once("exit", () => resolve()));
    c.kill("SIGTERM");
    const timer = setTimeout(() => c.kill("SIGKILL"), 5000);
    await exited;
    clearTimeout(timer);
  }

  async restart(): Promise<StoreServerInfo> {
    await this.stop();
    return this.start();
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
