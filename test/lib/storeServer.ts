/**
 * A real Valkey or Redis server for the process-level suites: Debian's
 * `valkey-server` when installed, else `redis-server` (Debian 12 ships Redis
 * 7.0; `.ci/run` installs it), on 127.0.0.1 at a free port, never daemonized.
 * It runs with the arguments the stack renders for the in-cluster store
 * (infra/render/storeManifests.ts storeServerArgs): TLS only, with a
 * certificate for `localhost` from a CA made here with openssl, the password
 * from an included file, the append-only file in its own directory (a
 * restart keeps the data, as the store's volume does). Started and stopped
 * by its own pid; `start` after `stop` brings it back on the same port and data.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import * as tls from "node:tls";
import { STORE_AUTH_CONF_KEY, storeAuthData, storeServerArgs } from "../../infra/render/storeManifests";
import { freePort, sleep } from "./net";

import { STORE_CA_FILE } from "../../infra/conventions/store";
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
  /** The name its certificate carries (and the gateways connect to). */
  host: string;
  port: number;
  password: string;
  /** PEM of the CA that signed the server's certificate. */
  caFile: string;
  pid: number;
  log: string;
}

/** A CA and a server certificate for localhost (and 127.0.0.1), valid for a day. */
function makeCertificates(dir: string): void {
  const run = (...args: string[]): void => void execFileSync("openssl", args, { cwd: dir, stdio: "pipe" });
  const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"];
  run(
    "req",
    "-x509",
    ...ec,
    "-keyout",
    "ca.key",
    "-out",
    STORE_CA_FILE,
    "-days",
    "1",
    "-subj",
    "/CN=triton-ft test store CA",
  );
  run("req", ...ec, "-keyout", "tls.key", "-out", "tls.csr", "-subj", "/CN=localhost");
  fs.writeFileSync(path.join(dir, "san.ext"), "subjectAltName=DNS:localhost,IP:127.0.0.1\n");
  run(
    "x509",
    "-req",
    "-in",
    "tls.csr",
    "-CA",
    STORE_CA_FILE,
    "-CAkey",
    "ca.key",
    "-CAcreateserial",
    "-out",
    "tls.crt",
    "-days",
    "1",
    "-extfile",
    "san.ext",
  );
}

export class StoreServer {
  private child: ChildProcess | undefined;
  readonly password = randomBytes(18).toString("base64url");
  port = 0;

  constructor(readonly dir: string) {}

  get info(): StoreServerInfo {
    return {
      host: "localhost",
      port: this.port,
      password: this.password,
      caFile: path.join(this.dir, "tls", STORE_CA_FILE),
      pid: this.child?.pid ?? -1,
      log: path.join(this.dir, "store.log"),
    };
  }

  async start(): Promise<StoreServerInfo> {
    const paths = {
      authDir: path.join(this.dir, "auth"),
      tlsDir: path.join(this.dir, "tls"),
      dataDir: path.join(this.dir, "data"),
    };
    if (!fs.existsSync(paths.tlsDir)) {
      for (const d of Object.values(paths)) fs.mkdirSync(d, { recursive: true });
      makeCertificates(paths.tlsDir);
      fs.writeFileSync(
        path.join(paths.authDir, STORE_AUTH_CONF_KEY),
        storeAuthData(this.password)[STORE_AUTH_CONF_KEY],
        {
          mode: 0o600,
        },
      );
    }
    this.port ||= await freePort();
    const log = this.info.log;
    const fd = fs.openSync(log, "a");
    // The stack's arguments (append-only file, fsync every second; SIGTERM writes it out), then loopback only.
    const args = [...storeServerArgs(paths, this.port), "--bind", "127.0.0.1"];
    this.child = spawn(storeServerBinary(), args, { stdio: ["ignore", fd, fd] });
    fs.closeSync(fd);
    const deadline = Date.now() + 20_000;
    while (!(await answersTls(this.port, this.info.caFile))) {
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
}

/** A TLS handshake with the server succeeds (its certificate checked against our CA). */
function answersTls(port: number, caFile: string): Promise<boolean> {
  return new Promise((resolve) => {
    const s = tls.connect({ host: "127.0.0.1", port, servername: "localhost", ca: fs.readFileSync(caFile) });
    s.once("secureConnect", () => {
      s.destroy();
      resolve(true);
    });
    s.once("error", () => resolve(false));
  });
}
