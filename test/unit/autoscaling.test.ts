import { describe, expect, it } from "vitest";
import { findGpuInstance, type GpuInstance } from "../../infra/catalog/gpus";
import { resolveStack, formatProblems } from "../../infra/resolve";
import {
  HPA_MAX_PERIOD_SECONDS,
  HPA_MAX_STABILIZATION_SECONDS,
  NODE_BOOT_SECONDS,
  nodeLimits,
  planAutoscaling,
  scaleUpSchedule,
  planGatewayScaling,
  stackAutoscalingPlan,
  type PodTiming,
} from "../../infra/resolve/scaling";
import { gatewayPlan } from "../../infra/plan/gateway";
import { installsMonitoring, prometheusOperatorPresent, type ResolvedStack } from "../../infra/config";
import { planWorkload } from "../../infra/resolve/workload";
import { gpt2Config, type RawConfig } from "../lib/fixtures";
import { gptjAutoscaled, resolvedStack } from "../lib/scalingFixtures";

const NO_SECRETS = { hfToken: false, kubeconfig: false };
const PROM = "http://prometheus-operated.monitoring.svc:9090";

function gpu(type: string): GpuInstance {
  const i = findGpuInstance(type);
  if (!i) throw new Error(type);
  return i;
}
const A = {
  min: 2,
  max: 8,
  target: 0.5,
  prometheusUrl: PROM,
  capacityType: "on-demand" as const,
  fastImagePull: true,
  capacityReservationIds: [],
};
const POD: PodTiming = {
  podsPerNode: 1,
  imageBytes: 846 * 50 * 1024 ** 2,
  pullSeconds: 846,
  loadSeconds: 153,
  startupBudgetSeconds: 306,
  terminationGracePeriodSeconds: 95,
};

function resolved(cfg: RawConfig): ResolvedStack {
  const { stack, problems } = resolveStack(cfg, NO_SECRETS);
  if (!stack) throw new Error(formatProblems("t", problems));
  return stack;
}

describe("scaling arithmetic", () => {
  it("derives the cold start from node boot, image pull and model load", () => {
    const p = planAutoscaling(A, gpu("g5.2xlarge"), POD);
    expect(p.nodeBootSeconds).toBe(NODE_BOOT_SECONDS.A10G);
    expect(p.coldStartSeconds).toBe(180 + 846 + 153);
    expect(p.coldStartBudgetSeconds).toBe(180 + 846 + 306);
    // rate window 60 + scrape 15 + KEDA poll 15 + HPA sync 15 + stabilization 60
    expect(p.detectionSeconds).toBe(165);
    expect(p.scaleUpLatencySeconds).toBe(165 + 1179 + 180);
  });

  it("expects a three times faster pull with FastImagePull, budgets keep the serial pull", () => {
    const fast = planAutoscaling(A, gpu("g5.2xlarge"), POD);
    expect(fast.expectedPullSeconds).toBe(Math.ceil(846 / 3));
    expect(fast.expectedColdStartSeconds).toBe(180 + 282 + 153);
    expect(fast.coldStartBudgetSeconds).toBe(180 + 846 + 306);
    const slow = planAutoscaling({ ...A, fastImagePull: false }, gpu("g5.2xlarge"), POD);
    expect(slow.expectedPullSeconds).toBe(846);
    expect(slow.scaleDown).toEqual(fast.scaleDown);
  });

  it("stabilizes scale-down for longer than the worst-case cold start", () => {
    const p = planAutoscaling(A, gpu("g5.2xlarge"), POD);
    // (1332 + 180 NLB) rounded up to the minute
    expect(p.scaleDown.stabilizationWindowSeconds).toBe(1560);
    expect(p.scaleDown.stabilizationWindowSeconds).toBeGreaterThan(p.coldStartBudgetSeconds);
    expect(p.scaleDown.policies).toEqual([{ type: "Pods", value: 1, periodSeconds: 95 }]);
    expect(p.scaleDown.selectPolicy).toBe("Min");
  });

  it("scales up in steps: double or one node's pods per cold start, after a minute of queueing", () => {
    const p = planAutoscaling(A, gpu("g5.2xlarge"), POD);
    expect(p.scaleUp.stabilizationWindowSeconds).toBe(60);
    expect(p.scaleUp.selectPolicy).toBe("Max");
    expect(p.scaleUp.policies).toEqual([
      { type: "Percent", value: 100, periodSeconds: 1200 },
      { type: "Pods", value: 1, periodSeconds: 1200 },
    ]);
    expect(p.scaleUpSchedule).toEqual([2, 4, 8]);
    expect(scaleUpSchedule(1, 8, 1)).toEqual([1, 2, 4, 8]);
    expect(scaleUpSchedule(1, 10, 4)).toEqual([1, 5, 10]);
    expect(scaleUpSchedule(3, 3, 1)).toEqual([3]);
  });

  it("caps the periods at the HPA API's limits", () => {
    const slow: PodTiming = { ...POD, pullSeconds: 1700, terminationGracePeriodSeconds: 2400 };
    const p = planAutoscaling(A, gpu("g5.2xlarge"), slow);
    expect(p.scaleUp.policies[0].periodSeconds).toBe(HPA_MAX_PERIOD_SECONDS);
    expect(p.scaleDown.policies[0].periodSeconds).toBe(HPA_MAX_PERIOD_SECONDS);
    expect(() => planAutoscaling(A, gpu("g5.2xlarge"), { ...POD, pullSeconds: 3500 })).toThrow(
      new RegExp(`exceeds the HPA's ${HPA_MAX_STABILIZATION_SECONDS} s stabilization cap`),
    );
  });

  it("limits GPU nodes to max replicas plus one surge pod", () => {
    expect(nodeLimits(8, 1, gpu("g5.2xlarge"))).toEqual({ nodes: 9, cpu: 72, memoryGiB: 288, gpus: 9 });
    // Two TP-2 pods per g5.12xlarge: 7 + 1 pods on 4 nodes.
    expect(nodeLimits(7, 2, gpu("g5.12xlarge"))).toEqual({ nodes: 4, cpu: 192, memoryGiB: 768, gpus: 16 });
    expect(nodeLimits(1, 8, gpu("p4d.24xlarge"))).toEqual({ nodes: 1, cpu: 96, memoryGiB: 1152, gpus: 8 });
  });

  it("keeps an emptied node for one image pull", () => {
    expect(planAutoscaling(A, gpu("g5.2xlarge"), POD).consolidateAfterSeconds).toBe(900);
  });

  it("uses the stack's workload plan (GPT-J 6B on g5.2xlarge)", () => {
    const s = resolved(gptjAutoscaled());
    const w = planWorkload(s);
    const p = stackAutoscalingPlan(s);
    expect(p?.coldStartSeconds).toBe(180 + w.pullSeconds + w.loadSeconds);
    expect(p?.nodeLimits.nodes).toBe(9);
    expect(p?.minReplicas).toBe(2);
    expect(p?.target).toBe(0.5);
    expect(stackAutoscalingPlan(resolved(gpt2Config()))).toBeUndefined();
  });
});

describe("serving.autoscaling validation", () => {
  function problems(cfg: RawConfig): string[] {
    const { stack, problems: p } = resolveStack(cfg, NO_SECRETS);
    expect(stack).toBeUndefined();
    return p.map((x) => `${x.key}: ${x.message}`);
  }

  it("accepts a complete block and applies the defaults", () => {
    const s = resolved(gptjAutoscaled());
    expect(s.config.serving.autoscaling).toEqual({
      min: 2,
      max: 8,
      target: 0.5,
      prometheusUrl: PROM,
      capacityType: "on-demand",
      fastImagePull: true,
      capacityReservationIds: [],
    });
  });

  it("reports every mistake at once, naming the key", () => {
    const cfg = gptjAutoscaled({ min: 3, max: 2, capacityType: "spot", capacityReservationIds: ["cr-123"] });
    cfg.serving.replicas = 2;
    cfg.cluster = { mode: "kubeconfig" };
    const p = problems(cfg);
    expect(p).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^triton-ft:serving\.replicas: is a fixed size, but serving\.autoscaling is also set/),
        expect.stringMatching(/^triton-ft:serving\.autoscaling\.max: is below serving\.autoscaling\.min \(3\)/),
        expect.stringMatching(/^triton-ft:serving\.autoscaling: needs cluster\.mode create/),
        expect.stringMatching(
          /^triton-ft:serving\.autoscaling\.capacityReservationIds\[0\]: is not an EC2 capacity reservation id/,
        ),
        expect.stringMatching(
          /^triton-ft:serving\.autoscaling\.capacityReservationIds: are on-demand capacity, but capacityType is spot/,
        ),
      ]),
    );
  });

  it("refuses spot with a single pod", () => {
    expect(problems(gptjAutoscaled({ min: 1, capacityType: "spot" }))).toEqual([
      expect.stringMatching(
        /^triton-ft:serving\.autoscaling\.capacityType: with min 1 lets one spot interruption stop the endpoint/,
      ),
    ]);
  });

  it("refuses unknown keys, a malformed Prometheus URL and a negative minimum (0 is a model that sleeps)", () => {
    const cfg = gptjAutoscaled({ min: -1, maxReplicas: 4, prometheusUrl: "prometheus:9090" });
    const p = problems(cfg).join("\n");
    expect(p).toMatch(/serving\.autoscaling\.maxReplicas: is not a key of triton-ft:serving\.autoscaling/);
    expect(p).toMatch(/serving\.autoscaling\.min: /);
    expect(p).toMatch(/serving\.autoscaling\.prometheusUrl: /);
  });

  it("installs the stack's own Prometheus only when no prometheusUrl is given", () => {
    const own = resolved(gptjAutoscaled({ prometheusUrl: undefined }));
    expect(own.config.serving.autoscaling?.prometheusUrl).toBeUndefined();
    expect(installsMonitoring(own.config.serving.autoscaling)).toBe(true);
    expect(prometheusOperatorPresent(false, own.config.serving.autoscaling)).toBe(true);
    const theirs = resolved(gptjAutoscaled());
    expect(installsMonitoring(theirs.config.serving.autoscaling)).toBe(false);
    expect(prometheusOperatorPresent(false, theirs.config.serving.autoscaling)).toBe(false);
    expect(installsMonitoring(undefined)).toBe(false);
  });

  it("accepts capacity reservations for p4d on-demand", () => {
    const cfg = gptjAutoscaled({ capacityReservationIds: ["cr-0123456789abcdef0"] });
    cfg.serving.instanceType = "p4d.24xlarge";
    cfg.build.builderInstanceType = "p4d.24xlarge";
    expect(resolved(cfg).config.serving.autoscaling?.capacityReservationIds).toEqual(["cr-0123456789abcdef0"]);
  });
});

describe("gateway scaling (resolve/scaling.ts)", () => {
  it("holds half the admission cap per pod and reaches what the Triton pods hold at max", () => {
    // prod: maxBatchSize 8, Triton 2..6, gatewayReplicas 2 -> the floor holds 2 × 8 × 2 = 32, target 16 per pod.
    const p = planGatewayScaling({ replicas: 2, models: [{ maxBatchSize: 8, minReplicas: 2, maxReplicas: 6 }] });
    expect(p).toMatchObject({ minReplicas: 2, inflightTarget: 16, peakInflight: 96, maxReplicas: 6 });
    // Pods start in seconds: no scale-up window, doubling per 30 s; down one pod a minute after 5 quiet minutes.
    expect(p.scaleUp).toMatchObject({ stabilizationWindowSeconds: 0, selectPolicy: "Max" });
    expect(p.scaleDown).toMatchObject({
      stabilizationWindowSeconds: 300,
      selectPolicy: "Min",
      policies: [{ type: "Pods", value: 1, periodSeconds: 60 }],
    });
  });

  it("never goes below gatewayReplicas, and rounds the target and the pod count up", () => {
    expect(
      planGatewayScaling({ replicas: 3, models: [{ maxBatchSize: 4, minReplicas: 1, maxReplicas: 1 }] }),
    ).toMatchObject({
      minReplicas: 3,
      maxReplicas: 3,
      inflightTarget: 4,
    });
    expect(
      planGatewayScaling({ replicas: 1, models: [{ maxBatchSize: 5, minReplicas: 1, maxReplicas: 3 }] }),
    ).toMatchObject({
      inflightTarget: 5,
      peakInflight: 30,
      maxReplicas: 6,
    });
    // An odd floor rounds the target up: 2 × 3 × 1 = 6 / 2 = 3; 2 × 3 × 4 = 24 / 3 = 8 pods.
    expect(
      planGatewayScaling({ replicas: 1, models: [{ maxBatchSize: 3, minReplicas: 1, maxReplicas: 4 }] }),
    ).toMatchObject({
      inflightTarget: 3,
      peakInflight: 24,
      maxReplicas: 8,
    });
  });

  it("follows the stack: the gateway's admission cap is per the most Triton pods when autoscaled", () => {
    const s = resolvedStack(gptjAutoscaled());
    const g = gatewayPlan(s);
    expect(g).toMatchObject({ autoscaled: true, replicas: 2 });
    expect(g.config.limits.maxInflight).toBe(2 * s.config.serving.maxBatchSize * 8);
    expect(gatewayPlan(resolvedStack(gpt2Config())).autoscaled).toBe(false);
  });
});
