/** AWS tags every resource carries, so cost reports and cleanups can find the stack. */
import type { ResolvedStack } from "./config";

import { PRIVATE_SUBNET_TAGS, PUBLIC_SUBNET_TAGS } from "./conventions/network";
/** The stack's own tags; they win over a `tags` entry with the same key. */
export function ownTags(project: string, stackName: string, modelName: string): Record<string, string> {
  return {
    "app.kubernetes.io/part-of": project,
    "pulumi:project": project,
    "pulumi:stack": stackName,
    "triton-ft:model": modelName,
  };
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

export function stackTags(project: string, stackName: string, s: ResolvedStack): Record<string, string> {
  return { ...s.config.tags, ...ownTags(project, stackName, s.model.name) };
}
