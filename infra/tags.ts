/**
 * AWS tags, so cost reports and cleanups can find the stack and each model.
 *
 * Two maps: the stack's (what every resource carries: the configured `tags`,
 * the project and the stack) and a model's (the stack's plus
 * `triton-ft:model`). A model's map goes only on what that model alone runs
 * on or pulls from: its GPU nodes (their node group or Karpenter node class,
 * launch template, instances and volumes) and its server image repository.
 * What the models share (network, cluster, system nodes, builders, the
 * gateway's store, the shared repositories, the KMS key) carries the stack's
 * map only, so a cost report grouped by `triton-ft:model` puts each model's
 * resources under it and the shared ones under no model: the same split as
 * cost.json's per-model and `stack` lines (test/unit/costCoverage.test.ts).
 */
import type { ResolvedStack } from "./config";

import { PRIVATE_SUBNET_TAGS, PUBLIC_SUBNET_TAGS } from "./conventions/network";

/** The tag key naming the model a resource belongs to. */
export const MODEL_TAG_KEY = "triton-ft:model";

/** The stack's own tags; they win over a `tags` entry with the same key. */
export function ownStackTags(project: string, stackName: string): Record<string, string> {
  return {
    "app.kubernetes.io/part-of": project,
    "pulumi:project": project,
    "pulumi:stack": stackName,
  };
}

/** Every tag the program itself may put on a resource, the model's included (for the per-resource count). */
export function ownTags(project: string, stackName: string, modelName: string): Record<string, string> {
  return { ...ownStackTags(project, stackName), [MODEL_TAG_KEY]: modelName };
}

/**
 * The most tag keys the program itself puts on one resource besides the
 * configured `tags`: its own tags, plus on a subnet `Name` (awsx names it)
 * and one load balancer role tag (the builder has `Name` only). Validation
 * counts them against AWS's 50 tags per resource.
 */
export const PROGRAM_TAG_KEYS: readonly string[] = [
  ...Object.keys(ownTags("", "", "")),
  "Name",
  ...Object.keys(PUBLIC_SUBNET_TAGS),
];
/** A subnet carries one of the two role tags, never both: the other key only matters when configured. */
export const ROLE_TAG_KEYS: readonly string[] = [
  ...Object.keys(PUBLIC_SUBNET_TAGS),
  ...Object.keys(PRIVATE_SUBNET_TAGS),
];

/** The tags of what the stack's models share. */
export function stackTags(project: string, stackName: string, s: ResolvedStack): Record<string, string> {
  return { ...s.config.tags, ...ownStackTags(project, stackName) };
}

/** The tags of one model's own resources: the stack's and the model's id. */
export function modelTags(stack: Record<string, string>, modelId: string): Record<string, string> {
  return { ...stack, [MODEL_TAG_KEY]: modelId };
}
