/**
 * Reads the `triton-ft:` namespace through the Pulumi engine and resolves it.
 * The only place the program touches raw config; everything downstream gets the
 * typed, validated ResolvedStack.
 */
import * as pulumi from "@pulumi/pulumi";
import { CONFIG_KEYS, PROJECT, SECRET_KEYS, type SecretKey } from "./config";
import { ConfigError, resolveStack, type ResolvedStack } from "./validate";

export interface StackSecrets {
  hfToken?: pulumi.Output<string>;
  kubeconfig?: pulumi.Output<string>;
}

export interface LoadedStack {
  stack: ResolvedStack;
  secrets: StackSecrets;
}

/** Throws one ConfigError listing every problem, before any resource is registered. */
export function loadStack(): LoadedStack {
  const cfg = new pulumi.Config(PROJECT);
  const raw: Record<string, unknown> = {};
  for (const key of CONFIG_KEYS) {
    const value = cfg.getObject<unknown>(key);
    if (value !== undefined) raw[key] = value;
  }
  const secrets: StackSecrets = {};
  for (const key of Object.keys(SECRET_KEYS) as SecretKey[]) {
    const value = cfg.getSecret(key);
    if (value !== undefined) secrets[key] = value;
  }
  const { stack, problems } = resolveStack(raw, {
    hfToken: secrets.hfToken !== undefined,
    kubeconfig: secrets.kubeconfig !== undefined,
  });
  if (!stack) throw new ConfigError(pulumi.getStack(), problems);
  return { stack, secrets };
}
