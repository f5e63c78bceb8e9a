/**
 * Starts the gateway as its own process (`node --import tsx
 * images/gateway/src/main.ts`), the way the image runs it, with a config and
 * a hashed keys file written here; used by the gateway suite and the bench.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { createWriteStream, existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";

import type { GatewayConfigFile } from "../../infra/plan/types";
export const ROOT = path.resolve(__dirname, "../..");
export const GATEWAY_MAIN = path.join(ROOT, "images/gateway/src/main.ts");

export interface ConsumerSpec {
  name: string;
  requestsPerMinute?: number;
  tokensPerMinute?: number;
  maxConcurrent?: number;
  share?: number;
  /** The model ids the consumer's key may use; absent: every model. */
  models?: string[];
}

export interface RunningGateway {
  url: string;
  metricsUrl: string;
  pid: number;
  log: string;
  /** Plain-text keys by consumer name (the gateway only holds their hashes). */
  keys: Record<string, string>;
}

/** A key shaped like the ones the stack generates: prefix plus 43 random base64url characters. */
export function newKey(): string {
  return `tft-${randomBytes(32).toString("base64url")}`;
}

export function sha256(key: string): string {
  return createHash("sha256").update(key, "utf8").digest("hex");
}

/** Writes the hashed keys file; `given` keys are reused (two pods of one deployment share their Secret). */
export function writeKeysFile(
  file: string,
  consumers: ConsumerSpec[],
  given: Record<string, string> = {},
): Record<string, string> {
  const keys: Record<string, string> = {};
  const entries = consumers.map((c) => {
    keys[c.name] = given[c.name] ?? newKey();
    return {
      name: c.name,
      keySha256: [sha256(keys[c.name])],
      ...limitsOf(c),
      ...(c.models ? { models: c.models } : {}),
    };
  });
  writeFileSync(file, JSON.stringify({ consumers: entries }, null, 2));
  return keys;
}

const LIMIT_KEYS = ["requestsPerMinute", "tokensPerMinute", "maxConcurrent", "share"] as const;

function limitsOf(c: ConsumerSpec): Record<string, number> {
  const out: Record<string, number> = {};
  for (const k of LIMIT_KEYS) {
    const v = c[k];
    if (v !== undefined) out[k] = v;
  }
  return out;
}

function waitForFile(
  child: ChildProcess,
  file: string,
  timeoutMs: number,
): Promise<{ url: string; metricsUrl: string }> {
  return new Promise((resolve, reject) => {
    const deadline = Date.now() + timeoutMs;
    const onExit = (code: number | null): void => {
      clearInterval(timer);
      reject(new Error(`the gateway exited (status ${code}) before it listened`));
    };
    child.once("exit", onExit);
    const timer = setInterval(() => {
      if (existsSync(file)) {
        clearInterval(timer);
        child.off("exit", onExit);
        resolve(JSON.parse(readFileSync(file, "utf8")) as { url: string; metricsUrl: string });
      } else if (Date.now() > deadline) {
        clearInterval(timer);
        child.off("exit", onExit);
        reject(new Error(`the gateway did not listen within ${timeoutMs / 1000}s`));
      }
    }, 50);
  });
}

export interface StartOptions {
  /** Added to the gateway's environment (the store's password). */
  env?: Record<string, string>;
  /** Plain-text keys to reuse by consumer name (another pod's), instead of new ones. */
  keys?: Record<string, string>;
}

/**
 * Start one gateway on free loopback ports. Returns it and a stop function
 * (SIGTERM to this child only).
 */
export async function startGateway(
  dir: string,
  name: string,
  config: GatewayConfigFile,
  consumers: ConsumerSpec[],
  { env = {}, keys: given = {} }: StartOptions = {},
): Promise<{ gateway: RunningGateway; stop: () => Promise<void> }> {
  const configFile = path.join(dir, `${name}.config.json`);
  const keysFile = path.join(dir, `${name}.keys.json`);
  const readyFile = path.join(dir, `${name}.ready.json`);
  const log = path.join(dir, `${name}.log`);
  rmSync(readyFile, { force: true });
  writeFileSync(
    configFile,
    JSON.stringify({ ...config, listen: { host: "127.0.0.1", port: 0, metricsPort: 0 } }, null, 2),
  );
  const keys = writeKeysFile(keysFile, consumers, given);
  const out = createWriteStream(log);
  const child = spawn(process.execPath, ["--import", "tsx", GATEWAY_MAIN], {
    cwd: ROOT,
    env: {
      ...process.env,
      ...env,
      GATEWAY_CONFIG: configFile,
      GATEWAY_KEYS_FILE: keysFile,
      GATEWAY_READY_FILE: readyFile,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  child.stdout?.pipe(out);
  child.stderr?.pipe(out);
  let ready: { url: string; metricsUrl: string };
  try {
    ready = await waitForFile(child, readyFile, 60_000);
  } catch (error) {
    child.kill("SIGTERM");
    throw new Error(`${(error as Error).message}; log:\n${readFileSync(log, "utf8").slice(-3000)}`, { cause: error });
  }
  const stop = (): Promise<void> =>
    new Promise((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      child.once("exit", () => resolve());
      child.kill("SIGTERM");
    });
  return { gateway: { ...ready, pid: child.pid ?? -1, log, keys }, stop };
}
