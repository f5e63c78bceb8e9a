/**
 * The gateway's share of `serving.autoscaling`: its pods follow the generations
 * in flight through them, through a second KEDA ScaledObject. Pure arithmetic;
 * render/autoscaling.ts renders it and docs/operating.md "The gateway scales too" explains it.
 *
 * Why in-flight requests and not CPU: a gateway pod spends a generation waiting
 * on Triton's stream, so its CPU stays low while its admission cap
 * (limits.maxInflight, answered with 429 beyond) is what runs out. KEDA is
 * already there for Triton, and the in-flight gauge is in Prometheus, so the
 * gateway needs no metrics-server (EKS does not install one).
 */
import type { GatewayScalingPlan } from "../render/autoscaling";

export interface GatewayScalingInput {
  /** serving.gatewayReplicas: the floor. */
  replicas: number;
  /** Admission cap of one gateway pod (gateway config limits.maxInflight). */
  maxInflight: number;
  /** serving.maxBatchSize: one Triton pod runs one batch of this size at a time. */
  maxBatchSize: number;
  /** serving.autoscaling.max: the most Triton pods the gateways feed. */
  tritonMaxReplicas: number;
}

/** A gateway pod is up in seconds (small Node.js image on the system nodes): act within one HPA sync. */
export const GATEWAY_SCALE_UP_PERIOD_SECONDS = 30;
/** The HPA's default scale-down window: a dip shorter than five minutes keeps its pods. */
export const GATEWAY_SCALE_DOWN_WINDOW_SECONDS = 300;
export const GATEWAY_SCALE_DOWN_PERIOD_SECONDS = 60;

export function planGatewayScaling(i: GatewayScalingInput): GatewayScalingPlan {
  // Half the admission cap: a pod at target absorbs a doubling of its share
  // before it refuses anything, while the HPA adds pods.
  const inflightTarget = Math.max(1, Math.ceil(i.maxInflight / 2));
  const peakInflight = 2 * i.maxBatchSize * i.tritonMaxReplicas;
  return {
    minReplicas: i.replicas,
    maxReplicas: Math.max(i.replicas, Math.ceil(peakInflight / inflightTarget)),
    inflightTarget,
    peakInflight,
    scaleUp: {
      stabilizationWindowSeconds: 0,
      selectPolicy: "Max",
      policies: [
        { type: "Percent", value: 100, periodSeconds: GATEWAY_SCALE_UP_PERIOD_SECONDS },
        { type: "Pods", value: 2, periodSeconds: GATEWAY_SCALE_UP_PERIOD_SECONDS },
      ],
    },
    scaleDown: {
      stabilizationWindowSeconds: GATEWAY_SCALE_DOWN_WINDOW_SECONDS,
      selectPolicy: "Min",
      // A leaving pod finishes its generations (its grace period covers the request timeout).
      policies: [{ type: "Pods", value: 1, periodSeconds: GATEWAY_SCALE_DOWN_PERIOD_SECONDS }],
    },
  };
}
