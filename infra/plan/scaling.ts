/**
 * The autoscaling slice of the plan and the input the scaling renderers take.
 * The scaling plan is derived from the workload's cold start, which may exceed
 * what the HPA can express: validation reports that like any config problem.
 */
import type { ConfigProblem, ResolvedStack } from "../config";
import type { ContainerLaunch, WorkloadPlan } from "../render/tritonManifests";
import type { AutoscalingPlan } from "../render/autoscaling";
import type { ScalingInput } from "../render/scaling";
import { AutoscalingPlanError, planAutoscaling } from "./autoscaling";
import { planGatewayScaling } from "./gatewayScaling";
import type { GatewayPlan } from "./index";
import { planWorkload, workloadInput } from "./workload";

/** The scaling plan of a stack with `serving.autoscaling`, undefined for a fixed size. */
export function stackAutoscalingPlan(
  s: ResolvedStack,
  workload: WorkloadPlan = planWorkload(s),
): AutoscalingPlan | undefined {
  const a = s.config.serving.autoscaling;
  return a ? planAutoscaling(a, s.servingInstance, workload) : undefined;
}

/** The problem (key without the project prefix) that keeps the stack from autoscaling, if any. */
export function autoscalingPlanProblem(s: ResolvedStack): ConfigProblem | undefined {
  try {
    stackAutoscalingPlan(s);
    return undefined;
  } catch (error) {
    if (error instanceof AutoscalingPlanError)
      return { key: error.key, value: error.value, message: error.message, fix: error.fix };
    // Any other failure is the workload plan's own, reported by its renderer.
    return undefined;
  }
}

/** What render/scaling.ts renders from: the workload input, the serving instance, the node disk, the scaling plan. */
export function scalingInput(
  s: ResolvedStack,
  stackName: string,
  launch: ContainerLaunch,
  workload: WorkloadPlan,
  autoscaling: AutoscalingPlan | undefined,
  g: Pick<GatewayPlan, "replicas" | "config">,
): ScalingInput {
  const a = s.config.serving.autoscaling;
  return {
    workload: workloadInput(s, stackName, launch, workload),
    instance: s.servingInstance,
    nodeDiskGiB: s.nodeDiskGiB,
    autoscaling: a && autoscaling ? { config: a, plan: autoscaling } : undefined,
    gateway:
      a && autoscaling
        ? planGatewayScaling({
            replicas: g.replicas,
            maxInflight: g.config.limits.maxInflight,
            maxBatchSize: s.config.serving.maxBatchSize,
            tritonMaxReplicas: autoscaling.maxReplicas,
          })
        : undefined,
  };
}
