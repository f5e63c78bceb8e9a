/**
 * An SSH client with the semantics of @pulumi/command's remote resources, on
 * the ssh2 library: a Command is one session that sends one `env` request per
 * `environment` entry without waiting for the reply (a refused variable is
 * silently missing, as the provider ignores Setenv errors), then `exec`s the
 * command string with `stdin` written and closed; a CopyToRemote is an SFTP
 * upload. The host key must be pinned: a connection to any other key fails.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { Client, utils, type ConnectConfig } from "ssh2";

export interface Connection {
  host: string;
  port: number;
  user: string;
  privateKey: string;
  /** authorized_keys-format public key ("ssh-ed25519 AAAA..."): required. */
  hostKey: string;
}

export interface ExecResult {
  code: number | null;
  signal?: string;
  stdout: string;
  stderr: string;
}

/** The raw key blob of an authorized_keys line, for comparison with what the server presents. */
function hostKeyBlob(line: string): Buffer {
  const parsed = utils.parseKey(line);
  if (parsed instanceof Error) throw new Error(`pinned host key is not a public key: ${parsed.message}`);
  const key = Array.isArray(parsed) ? parsed[0] : parsed;
  if (!key) throw new Error("pinned host key is empty");
  return key.getPublicSSH();
}

export class HostKeyMismatch extends Error {
  constructor(readonly presented: string) {
    super(`the builder presented host key ${presented}, which is not the pinned key`);
    this.name = "HostKeyMismatch";
  }
}

export async function connect(conn: Connection): Promise<Client> {
  if (!conn.hostKey) throw new Error("refusing to connect without a pinned host key");
  const pinned = hostKeyBlob(conn.hostKey);
  const client = new Client();
  let mismatch: HostKeyMismatch | undefined;
  const config: ConnectConfig = {
    host: conn.host,
    port: conn.port,
    username: conn.user,
    privateKey: conn.privateKey,
    readyTimeout: 15_000,
    hostVerifier: (key: Buffer) => {
      if (key.equals(pinned)) return true;
      mismatch = new HostKeyMismatch(
        `${key.subarray(4, 4 + key.readUInt32BE(0)).toString()} ${key.toString("base64")}`,
      );
      return false;
    },
  };
  return new Promise((resolve, reject) => {
    client.once("ready", () => resolve(client));
    client.once("error", (err) => reject(mismatch ?? err));
    client.connect(config);
  });
}

export function exec(
  client: Client,
  command: string,
  opts: { environment?: Record<string, string>; stdin?: string } = {},
): Promise<ExecResult> {
  return new Promise((resolve, reject) => {
    client.exec(command, { env: opts.environment ?? {} }, (err, stream) => {
      if (err) return reject(err);
      let stdout = "";
      let stderr = "";
      stream.on("data", (d: Buffer) => (stdout += d.toString()));
      stream.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
      stream.on("close", (code: number | null, signal?: string) => resolve({ code, signal, stdout, stderr }));
      if (opts.stdin !== undefined) stream.end(opts.stdin);
      else stream.end();
    });
  });
}

/**
 * CopyToRemote, as the provider documents it: missing parent directories are
 * created; a file goes to remotePath (or into it, when it is a directory); a
 * directory goes into remotePath when that is an existing directory, else
 * becomes remotePath; existing files are overwritten.
 */
export async function copyToRemote(
  client: Client,
  source: { path: string } | { text: string },
  remotePath: string,
): Promise<void> {
  const sftp = await new Promise<import("ssh2").SFTPWrapper>((resolve, reject) =>
    client.sftp((err, s) => (err ? reject(err) : resolve(s))),
  );
  const stat = (p: string) =>
    new Promise<import("ssh2").Stats | undefined>((resolve) => sftp.stat(p, (err, s) => resolve(err ? undefined : s)));
  const mkdir = (p: string) =>
    new Promise<void>((resolve, reject) => sftp.mkdir(p, (err) => (err ? reject(err) : resolve())));
  const put = (local: string | Buffer, remote: string, mode: number) =>
    new Promise<void>((resolve, reject) => {
      const w = sftp.createWriteStream(remote, { mode });
      w.on("close", () => resolve());
      w.on("error", reject);
      w.end(typeof local === "string" ? fs.readFileSync(local) : local);
    });
  const mkdirP = async (p: string): Promise<void> => {
    if (p === "/" || p === "." || (await stat(p))) return;
    await mkdirP(path.posix.dirname(p));
    await mkdir(p);
  };
  try {
    await mkdirP(path.posix.dirname(remotePath));
    if ("text" in source) {
      if ((await stat(remotePath))?.isDirectory()) throw new Error(`${remotePath} is a directory`);
      await put(Buffer.from(source.text), remotePath, 0o644);
      return;
    }
    const local = source.path;
    if (!fs.statSync(local).isDirectory()) {
      const target = (await stat(remotePath))?.isDirectory() ? `${remotePath}/${path.basename(local)}` : remotePath;
      await put(local, target, fs.statSync(local).mode & 0o777);
      return;
    }
    const root = (await stat(remotePath))?.isDirectory() ? `${remotePath}/${path.basename(local)}` : remotePath;
    const walk = async (dir: string, remote: string): Promise<void> => {
      if (!(await stat(remote))) await mkdir(remote);
      for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
        const l = path.join(dir, e.name);
        if (e.isDirectory()) await walk(l, `${remote}/${e.name}`);
        else if (e.isFile()) await put(l, `${remote}/${e.name}`, fs.statSync(l).mode & 0o777);
      }
    };
    await walk(local, root);
  } finally {
    sftp.end();
  }
}
