/**
 * ed25519 key pairs for the SSH suite, made by OpenSSH's own ssh-keygen (installed
 * with the openssh-server the suite runs). Not ssh2's generateKeyPairSync: it strips
 * leading zero bytes from the public key, so about 1 key in 400 is one that ssh2
 * itself then refuses as malformed (mscdex/ssh2#1513, #1390; it failed a CI run).
 */
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

export interface KeyPair {
  /** OpenSSH private key (PEM-like "OPENSSH PRIVATE KEY" block). */
  private: string;
  /** authorized_keys line: "ssh-ed25519 <base64> <comment>". */
  public: string;
}

export function ed25519KeyPair(comment = ""): KeyPair {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "triton-ft-key-"));
  try {
    const file = path.join(dir, "key");
    execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", file], { stdio: "pipe" });
    return { private: fs.readFileSync(file, "utf8"), public: fs.readFileSync(`${file}.pub`, "utf8").trim() };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
