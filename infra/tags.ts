/** AWS tags every resource carries, so cost reports and cleanups can find the stack. */
import type { ResolvedStack } from "./config";

export function stackTags(project: string, stackName: string, s: ResolvedStack): Record<string, string> {
  return {
    ...s.config.tags,
    "app.kubernetes.io/part-of": project,
    "pulumi:project": project,
    "pulumi:stack": stackName,
    "triton-ft:model": s.model.name,
  };
}
