/**
 * The stack owns its Kubernetes objects' fields, also against a hand edit.
 *
 * The Kubernetes provider applies server-side; a field changed by hand (`kubectl scale`,
 * `kubectl edit`) moves to kubectl's field manager, and the next apply of the same field then
 * fails with a field conflict instead of restoring it, so `pulumi up` could not undo drift
 * (found by the engine suite's drift scenario). `pulumi.com/patchForce` makes the provider's
 * apply take such fields back. Added to every Kubernetes object of the stack by a transform;
 * for a deployed stack it is an annotation update, never a replacement.
 */
import type * as pulumi from "@pulumi/pulumi";

export const FORCE_APPLY_ANNOTATION = "pulumi.com/patchForce";

type Metadata = { annotations?: Record<string, string> } & Record<string, unknown>;

/** A resource transform: Kubernetes objects (not Helm releases, not the provider) get the annotation. */
export function forceApply(args: pulumi.ResourceTransformArgs): pulumi.ResourceTransformResult | undefined {
  if (!args.type.startsWith("kubernetes:") || args.type.startsWith("kubernetes:helm.sh/")) return undefined;
  const metadata = args.props.metadata as Metadata | undefined;
  if (metadata === undefined || typeof metadata !== "object") return undefined;
  const annotations = { ...metadata.annotations, [FORCE_APPLY_ANNOTATION]: "true" };
  return { props: { ...args.props, metadata: { ...metadata, annotations } }, opts: args.opts };
}
