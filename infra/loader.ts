/**
 * Reads the `triton-ft:` namespace through the Pulumi engine and resolves it.
 * The only place the program touches raw config; everything downstream gets the
 * typed, validated ResolvedStack.
 */
import * as pulumi from "@pulumi/pulumi";
import { CONFIG_KEYS, PROJECT, SECRET_KEYS, type SecretKey } from "./config/schema";
import { namespaceKeys } from "./config/keys";
import { ConfigError, formatWarnings, resolveStack } from "./resolve";
import type { ResolvedStack } from "./config/stack";

export type StackSecrets = Partial<Record<SecretKey, pulumi.Output<string>>>;

export interface LoadedStack {
  /** The first model's view: the whole stack of a one-model stack. */
  stack: ResolvedStack;
  /** Every model, first to last (one for a one-model stack). */
  models: ResolvedStack[];
  secrets: StackSecrets;
}

/** Throws one ConfigError listing every problem, before any resource is registered. */
export function loadStack(): LoadedStack {
  const cfg = new pulumi.Config(PROJECT);
  const raw: Record<string, unknown> = {};
  // Every key of the namespace, not only the known ones: `triton-ft:servng`, or
  // `triton-ft:serving.replicas` set without --path, must fail the preview
  // instead of deploying the defaults. Unknown keys' values are never read
  // (one may be a secret under a misspelt name).
  for (const key of namespaceKeys(Object.keys(pulumi.runtime.allConfig()), PROJECT)) raw[key] = undefined;
  for (const key of CONFIG_KEYS) {
    const value = cfg.getObject<unknown>(key);
    if (value !== undefined) raw[key] = value;
    else delete raw[key];
  }
  const secrets: StackSecrets = {};
  for (const key of Object.keys(SECRET_KEYS) as SecretKey[]) {
    const value = cfg.getSecret(key);
    if (value !== undefined) secrets[key] = value;
  }
  const presence = Object.fromEntries(Object.keys(secrets).map((k) => [k, true]));
  // The AWS provider's Region: the Region, ARNs, EKS zones and idle GPUs' price are checked against it.
  const region = new pulumi.Config("aws").get("region");
  const { stack, models, problems, warnings } = resolveStack(raw, presence, {
    stackName: pulumi.getStack(),
    ...(region ? { region } : {}),
  });
  if (warnings.length > 0) void pulumi.log.warn(formatWarnings(pulumi.getStack(), warnings));
  if (!stack || !models) throw new ConfigError(pulumi.getStack(), problems);
  return { stack, models, secrets };
}

/**
 * A secret validation already required (e.g. sshPrivateKey with build.sshPublicKey):
 * resolveStack refused the stack without it, so a miss here is a bug, not a config mistake.
 */
export function validatedSecret(secrets: StackSecrets, key: SecretKey): pulumi.Output<string> {
  const value = secrets[key];
  if (!value) throw new Error(`${PROJECT}: validation let the stack through without the ${key} secret`);
  return value;
}
