/**
 * Prints the Kubernetes minor version (e.g. `1.35`) the stack creates by
 * default, read from the config schema, so the control plane the k8s suite
 * builds follows the stack's default EKS version. `K8S_MINOR` overrides it.
 */
import { z } from "zod";
import { configSchema } from "../../infra/config";

interface Schema {
  default?: unknown;
  properties?: Record<string, Schema>;
}

function defaultMinor(): string {
  const schema = z.toJSONSchema(configSchema, { io: "input", unrepresentable: "any" }) as Schema;
  const value = schema.properties?.cluster?.properties?.kubernetesVersion?.default;
  const m = typeof value === "string" ? /^(\d+\.\d+)/.exec(value) : null;
  if (!m?.[1]) throw new Error(`no default cluster.kubernetesVersion in the config schema (found ${String(value)})`);
  return m[1];
}

process.stdout.write(`${process.env.K8S_MINOR || defaultMinor()}\n`);
