/**
 * The renderers' inputs, assembled from the resolved stack and its derived
 * numbers (resolve/workload.ts, resolve/scaling.ts) with the plan's launch
 * command: buildPlan calls each once per model (plan.renderInputs), and every
 * consumer reads them from there.
 */
import { prometheusOperatorPresent } from "../config/autoscaling";
import type { ResolvedStack } from "../config/stack";
import type { AutoscalingPlan } from "../resolve/scaling";
import type { WorkloadPlan } from "../resolve/workload";
import type { LaunchPlan } from "./launch";
import type { ScalingInput, WorkloadInput } from "./types";

/**
 * What the manifests are rendered from (all but the image): the plan's
 * workload numbers and launch command, with the serving settings and names
 * they are labelled and exposed with.
 */
export function workloadInput(
  stack: ResolvedStack,
  stackName: string,
  launch: LaunchPlan,
  workload: WorkloadPlan,
): WorkloadInput {
  const sv = stack.config.serving;
  return {
    modelName: stack.model.name,
    stackName,
    tritonVersion: stack.config.build.tritonVersion,
    namespace: sv.namespace,
    instanceType: stack.servingInstance.type,
    loadBalancer: {
      scheme: sv.loadBalancerScheme,
      allowedCidrs: sv.allowedCidrs,
      idleTimeoutSeconds: sv.idleTimeoutSeconds,
    },
    // The operator is there when the cluster has one (serving.serviceMonitor) or the stack installs it.
    serviceMonitor: prometheusOperatorPresent(sv.serviceMonitor, sv.autoscaling),
    launch,
    workload,
    engine: stack.engine,
    ...(sv.autoscaling ? { autoscaling: { minReplicas: sv.autoscaling.min } } : {}),
  };
}

/**
 * What render/scaling.ts renders one model's objects from: the Triton workload's
 * input (buildPlan assembles it once), the serving instance, the node disk, the
 * model's scaling plan. The gateway's scaling is the stack's (plan/gateway.ts).
 */
export function scalingInput(
  s: ResolvedStack,
  workload: WorkloadInput,
  autoscaling: AutoscalingPlan | undefined,
): ScalingInput {
  const a = s.config.serving.autoscaling;
  return {
    workload,
    instance: s.servingInstance,
    nodeDiskGiB: s.nodeDiskGiB,
    autoscaling: a && autoscaling ? { config: a, plan: autoscaling } : undefined,
  };
}
