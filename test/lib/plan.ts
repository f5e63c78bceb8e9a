/** The plan as the composition roots compute it, for tests: the real repository hasher unless one is given. */
import { buildPlan, type BuildStep, type Plan } from "../../infra/plan";
import { buildStackPlan, type StackPlan } from "../../infra/plan/stack";
import type { PathHasher, StepId } from "../../infra/plan/stepGraph";
import { REPO_ROOT, repoPathHasher } from "../../infra/repoFiles";
import type { ResolvedStack } from "../../infra/config";

const repoHasher = repoPathHasher(REPO_ROOT);

export function planOf(stack: ResolvedStack, hashPath: PathHasher = repoHasher, stackName = "test"): Plan {
  return buildPlan(stack, stackName, hashPath);
}

/** A one-model stack's stack plan (a stack of one), as the composition roots plan it. */
export function stackPlanOf(stack: ResolvedStack, hashPath: PathHasher = repoHasher, stackName = "test"): StackPlan {
  return buildStackPlan([stack], stackName, hashPath);
}

/** A one-model stack's gateway (its plan and the workload its renderers take), as the composition roots plan it. */
export function gatewayOf(
  stack: ResolvedStack,
  hashPath: PathHasher = repoHasher,
  stackName = "test",
): StackPlan["gateway"] {
  return buildStackPlan([stack], stackName, hashPath).gateway;
}

/** The plan's build steps and their input hashes. */
export function buildSteps(
  stack: ResolvedStack,
  hashPath: PathHasher = repoHasher,
): { steps: BuildStep[]; hashes: Record<StepId, string> } {
  const steps = planOf(stack, hashPath).buildSteps;
  return { steps, hashes: Object.fromEntries(steps.map((s) => [s.id, s.inputHash])) as Record<StepId, string> };
}
