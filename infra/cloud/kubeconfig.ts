/** Reading the cluster name out of a kubeconfig, whatever shape it arrives in. Pure. */
import { parse } from "yaml";

/**
 * The EKS cluster name a kubeconfig points at: the current context's cluster,
 * with the ARN prefix `aws eks update-kubeconfig` writes removed.
 */
export function kubeconfigClusterName(kubeconfig: string): string {
  const doc: unknown = parse(kubeconfig);
  if (doc === null || typeof doc !== "object") throw new Error("kubeconfig: not a YAML or JSON document");
  const k = doc as { "current-context"?: string; contexts?: Array<{ name: string; context?: { cluster?: string } }> };
  const contexts = k.contexts ?? [];
  const current =
    contexts.find((c) => c.name === k["current-context"]) ?? (contexts.length === 1 ? contexts[0] : undefined);
  const cluster = current?.context?.cluster;
  if (!cluster) throw new Error("kubeconfig: no current-context naming a cluster; set current-context");
  const arn = /^arn:aws[\w-]*:eks:[^:]+:\d{12}:cluster\/(.+)$/.exec(cluster);
  return arn?.[1] ?? cluster;
}

/** A stack output may be a kubeconfig object (as @pulumi/eks exports it) or a string. */
export function kubeconfigText(value: unknown): string {
  if (typeof value === "string" && value.trim() !== "") return value;
  if (value !== null && typeof value === "object") return JSON.stringify(value);
  throw new Error("the referenced stack's kubeconfig output is empty or not a kubeconfig");
}
