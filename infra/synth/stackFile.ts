/**
 * Reads a Pulumi stack file (Pulumi.<stack>.yaml) without the Pulumi engine, the
 * way the program sees it: the `triton-ft:` namespace as plain values, and for
 * secrets only whether they are set (their ciphertext is never decrypted here).
 */
import { parse } from "yaml";
import { PROJECT, SECRET_KEYS, type SecretKey, type SecretPresence } from "../config";

export interface StackFileConfig {
  /** `triton-ft:` keys without the namespace, secure values left out. */
  raw: Record<string, unknown>;
  secrets: SecretPresence;
  /** `triton-ft:` keys whose value is a `secure:` ciphertext. */
  secureKeys: string[];
  /** Secret keys stored in plain text (should be set with `pulumi config set --secret`). */
  plaintextSecretKeys: string[];
  /** `aws:region`, the AWS provider's region: what the cost estimate prices in (undefined when unset). */
  awsRegion?: string;
}

function isSecure(value: unknown): boolean {
  return (
    value !== null &&
    typeof value === "object" &&
    !Array.isArray(value) &&
    Object.keys(value).length === 1 &&
    "secure" in value
  );
}

/** Pulumi's getObject parses a JSON string; structured YAML values arrive as they are. */
function plain(value: unknown): unknown {
  if (typeof value === "string" && /^\s*[[{]/.test(value)) {
    try {
      return JSON.parse(value);
    } catch {
      return value;
    }
  }
  return value;
}

export function parseStackFile(text: string, fileName: string): StackFileConfig {
  let doc: unknown;
  try {
    doc = parse(text);
  } catch (err) {
    throw new Error(`${fileName}: not valid YAML: ${(err as Error).message}`, { cause: err });
  }
  const config = doc === null || doc === undefined ? {} : (doc as Record<string, unknown>).config;
  if (config !== undefined && (config === null || typeof config !== "object" || Array.isArray(config))) {
    throw new Error(`${fileName}: 'config' must be a mapping of <namespace>:<key> to values`);
  }
  const raw: Record<string, unknown> = {};
  const secureKeys: string[] = [];
  const plaintextSecretKeys: string[] = [];
  const secrets: SecretPresence = {};
  const prefix = `${PROJECT}:`;
  for (const [fullKey, value] of Object.entries((config ?? {}) as Record<string, unknown>)) {
    if (!fullKey.startsWith(prefix)) continue;
    const key = fullKey.slice(prefix.length);
    if (isSecure(value)) {
      secureKeys.push(key);
      if (key in SECRET_KEYS) secrets[key as SecretKey] = true;
      else raw[key] = "[secret]";
      continue;
    }
    if (key in SECRET_KEYS) {
      // A plain-text secret still counts as set; validation only needs presence.
      secrets[key as SecretKey] = true;
      plaintextSecretKeys.push(key);
      continue;
    }
    raw[key] = plain(value);
  }
  const region = (config as Record<string, unknown> | undefined)?.["aws:region"];
  return {
    raw,
    secrets,
    secureKeys,
    plaintextSecretKeys,
    ...(typeof region === "string" && region ? { awsRegion: region } : {}),
  };
}
