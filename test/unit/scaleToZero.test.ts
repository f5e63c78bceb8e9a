/**
 * Scale to zero, the infra side (issue 35): the config that lets a model sleep
 * and what it refuses, the sleep plan's numbers, the ScaledObject's in-use
 * trigger on the gateway's series and its cooldown, the gateway's `wake`
 * block (parsed by the gateway's own schema), and the estimate's awake and
 * asleep $/month and minutes from zero to the first token.
 */
import { describe, expect, it } from "vitest";
import { GatewayConfigSchema } from "../../images/gateway/src/config";
import { resolveStack } from "../../infra/resolve";
import { ACTIVATION_SECONDS, planSleep, stackAutoscalingPlan } from "../../infra/resolve/scaling";
import { DEFAULT_IDLE_MINUTES } from "../../infra/config/autoscaling";
import { gatewayPlan } from "../../infra/plan/gateway";
import { WAKE_TRIGGER, crdObjects } from "../../infra/render/scaling";
import { GATEWAY_HELD_METRIC, modelInUseQuery } from "../../infra/render/prometheus";
import { WAKE_KEEPALIVE_SECONDS } from "../../infra/conventions/workload";
import { SCRAPE_INTERVAL_SECONDS, KEDA_POLLING_SECONDS } from "../../infra/conventions/metrics";
import { estimateCost } from "../../infra/cost";
import { costInput } from "../../infra/cost/fromStack";
import { diffLines, summaryLines } from "../../infra/cost/format";
import { validateCustomResource } from "../lib/crdSchema";
import { gpt2Config, type RawConfig } from "../lib/fixtures";
import {
  gptjAutoscaled,
  renderSeedModelsScaling,
  renderStackScaling,
  resolvedStack,
  scalingView,
  seedModelsPlan,
} from "../lib/scalingFixtures";
import { buildStackPlan } from "../../infra/plan/stack";
import { SEED_MODELS_STACK, stackFileConfig } from "../lib/modelsForm";

const NO_SECRETS = { hfToken: false, kubeconfig: false };
const SLEEPER = "codegen-2b-mono";

function problems(cfg: RawConfig): string[] {
  const { stack, problems: p } = resolveStack(cfg, NO_SECRETS);
  expect(stack).toBeUndefined();
  return p.map((x) => `${x.key} = ${JSON.stringify(x.value)}: ${x.message} | fix: ${x.fix}`);
}

describe("config: a model that sleeps", () => {
  it("accepts min 0 with the sleep keys unset, and states their defaults in the plan", () => {
    const s = resolvedStack(gptjAutoscaled({ min: 0 }));
    expect(s.config.serving.autoscaling?.min).toBe(0);
    const sleep = stackAutoscalingPlan(s)?.sleep;
    expect(sleep?.idleSeconds).toBe(DEFAULT_IDLE_MINUTES * 60);
    // The timeout defaults to the estimate's long end (serial pull), to the minute.
    expect(sleep?.activationTimeoutSeconds).toBe(Math.ceil((sleep?.wakeHighSeconds ?? 0) / 60) * 60);
    expect(sleep?.activationTimeoutSeconds).toBeGreaterThanOrEqual(sleep?.wakeHighSeconds ?? Infinity);
  });

  it("takes the idle window, queue depth and timeout from the config", () => {
    const s = resolvedStack(
      gptjAutoscaled({ min: 0, idleMinutes: 90, holdQueueDepth: 7, activationTimeoutSeconds: 3600 }),
    );
    const sleep = stackAutoscalingPlan(s)?.sleep;
    expect(sleep?.idleSeconds).toBe(5400);
    expect(sleep?.activationTimeoutSeconds).toBe(3600);
    expect(gatewayPlan(s).config.models[0]?.wake).toEqual({
      queueDepth: 7,
      activationTimeoutSeconds: 3600,
      keepaliveSeconds: WAKE_KEEPALIVE_SECONDS,
    });
  });

  it("refuses a fixed size of 0 with the reason and the fix, beside every other problem at once", () => {
    const cfg = gpt2Config();
    cfg.serving.replicas = 0;
    cfg.serving.maxBatchSize = 0;
    const p = problems(cfg);
    expect(p).toEqual(
      expect.arrayContaining([
        expect.stringMatching(
          /^triton-ft:serving\.replicas = 0: is 0, but a fixed size runs on a managed node group that keeps its GPU nodes.*\| fix: to let the model sleep, remove serving\.replicas and set serving\.autoscaling: \{min: 0, max: 1\}/,
        ),
        expect.stringMatching(/^triton-ft:serving\.maxBatchSize/),
      ]),
    );
  });

  it("refuses the sleep keys on a model that does not sleep, each with its key and value", () => {
    const p = problems(gptjAutoscaled({ min: 1, idleMinutes: 10, holdQueueDepth: 5, activationTimeoutSeconds: 60 }));
    for (const [k, v] of [
      ["idleMinutes", 10],
      ["holdQueueDepth", 5],
      ["activationTimeoutSeconds", 60],
    ] as const)
      expect(p).toContainEqual(
        `triton-ft:serving.autoscaling.${k} = ${v}: only applies to a model that sleeps (min 0), and min is 1 | fix: remove serving.autoscaling.${k}, or set serving.autoscaling.min to 0`,
      );
  });

  it("refuses min 0 outside a created cluster (no Karpenter), and a timeout shorter than the wake", () => {
    const existing = gptjAutoscaled({ min: 0 });
    existing.cluster = { mode: "kubeconfig" };
    expect(problems(existing).join("\n")).toMatch(/^triton-ft:serving\.autoscaling = .*needs cluster\.mode create/m);
    expect(problems(gptjAutoscaled({ min: 0, activationTimeoutSeconds: 60 }))).toEqual([
      expect.stringMatching(
        /^triton-ft:serving\.autoscaling\.activationTimeoutSeconds = 60: is below the model's expected wake from 0 \(\d+ s.*\| fix: raise it to at least \d+/,
      ),
    ]);
  });

  it("in the models form, reports a fixed size of 0 under the model's own key", () => {
    const { models } = seedModelsPlan();
    expect(models.map((m) => m.config.serving.autoscaling?.min)).toEqual([undefined, undefined, 0]);
    const cfg = stackFileConfig(SEED_MODELS_STACK) as { models: Record<string, Record<string, unknown>> };
    const kogpt = cfg.models["kogpt-6b"];
    if (!kogpt) throw new Error("the example stack has no kogpt-6b");
    kogpt.replicas = 0;
    const { stack, problems: p } = resolveStack(cfg, NO_SECRETS);
    expect(stack).toBeUndefined();
    expect(p.map((x) => `${x.key} = ${JSON.stringify(x.value)}`)).toEqual(["triton-ft:models.kogpt-6b.replicas = 0"]);
  });
});

describe("the sleep plan", () => {
  it("wakes in activation + node boot + pull + load, the long end at the serial pull", () => {
    const s = resolvedStack(gptjAutoscaled({ min: 0 }));
    const a = stackAutoscalingPlan(s);
    if (!a?.sleep) throw new Error("no sleep plan");
    expect(ACTIVATION_SECONDS).toBe(SCRAPE_INTERVAL_SECONDS + KEDA_POLLING_SECONDS);
    expect(a.sleep.wakeSeconds).toBe(ACTIVATION_SECONDS + a.expectedColdStartSeconds);
    expect(a.sleep.wakeHighSeconds).toBe(ACTIVATION_SECONDS + a.coldStartSeconds);
    expect(a.minReplicas).toBe(0);
    expect(planSleep({ ...(s.config.serving.autoscaling ?? { min: 0 }), min: 0 } as never, 100, 200)).toMatchObject({
      wakeSeconds: ACTIVATION_SECONDS + 100,
      wakeHighSeconds: ACTIVATION_SECONDS + 200,
      activationTimeoutSeconds: 240,
    });
  });

  it("has no sleep plan at min 1", () => {
    expect(stackAutoscalingPlan(resolvedStack(gptjAutoscaled({ min: 1 })))?.sleep).toBeUndefined();
  });

  it("sizes the gateway's scaler from one pod of a model that sleeps, not from zero", () => {
    const sleeping = gatewayPlan(resolvedStack(gptjAutoscaled({ min: 0 }))).scaling;
    const one = gatewayPlan(resolvedStack(gptjAutoscaled({ min: 1 }))).scaling;
    expect(sleeping).toEqual(one);
  });
});

describe("rendering a model that sleeps", () => {
  it("scales its Triton from 0, wakes on the gateway's held requests, and sleeps after the idle window", () => {
    const s = resolvedStack(gptjAutoscaled({ min: 0, idleMinutes: 45 }));
    const m = renderStackScaling(s, "dev");
    const so = m.scaledObject;
    expect(so?.spec.minReplicaCount).toBe(0);
    expect(so?.spec.cooldownPeriod).toBe(45 * 60);
    expect(so?.spec.initialCooldownPeriod).toBe(45 * 60);
    expect(so?.spec.triggers.map((t) => t.name)).toEqual(["queue-compute-ratio", WAKE_TRIGGER]);
    const wake = so?.spec.triggers[1];
    expect(wake?.metricType).toBe("AverageValue");
    expect(wake?.metadata).toMatchObject({ threshold: "1", activationThreshold: "0", ignoreNullValues: "false" });
    expect(wake?.metadata.query).toBe(modelInUseQuery("triton", "gpt-j-6b"));
    expect(wake?.metadata.query).toContain(`sum(${GATEWAY_HELD_METRIC}{namespace="triton",model="gpt-j-6b"})`);
    expect(wake?.metadata.query).toMatch(/^clamp_max\(.*, 1\)$/);
    // The empty GPU node goes once the pod has: Karpenter consolidates when empty.
    expect(m.nodePool?.spec.disruption.consolidationPolicy).toBe("WhenEmpty");
    expect(m.nodePool?.spec.disruption.consolidateAfter).toBe(`${m.autoscaling?.consolidateAfterSeconds}s`);
    for (const o of crdObjects({ shared: m, models: [m] })) validateCustomResource(o);
  });

  it("alerts on absent Triton metrics of a sleeping model only while it wants pods, and for longer than a wake", () => {
    const rule = (min: number) => {
      const m = renderStackScaling(resolvedStack(gptjAutoscaled({ min })));
      const r = m.prometheusRule.spec.groups.flatMap((g) => g.rules).find((x) => x.alert === "TritonMetricsAbsent");
      return { rule: r, budget: m.autoscaling?.coldStartBudgetSeconds ?? NaN };
    };
    const asleep = rule(0);
    expect(asleep.rule?.expr).toMatch(
      /^absent\(nv_inference_request_success\{.*\}\) and on\(\) \(kube_deployment_spec_replicas\{.*deployment="triton-gpt-j-6b"\} > 0\)$/,
    );
    expect(asleep.rule?.for).toBe(`${Math.ceil(Math.max(600, asleep.budget) / 60)}m`);
    const awake = rule(1);
    expect(awake.rule?.expr).toMatch(/^absent\(nv_inference_request_success\{.*\}\)$/);
    expect(awake.rule?.for).toBe("10m");
  });

  it("leaves a model at min 1 exactly as before: one trigger, no cooldown", () => {
    const so = renderStackScaling(resolvedStack(gptjAutoscaled({ min: 1 }))).scaledObject;
    expect(so?.spec.triggers.map((t) => t.name)).toEqual(["queue-compute-ratio"]);
    expect(so?.spec).not.toHaveProperty("cooldownPeriod");
    expect(so?.spec).not.toHaveProperty("initialCooldownPeriod");
  });

  it("in the example stack only codegen-2b-mono sleeps: its ScaledObject and the gateway's wake block", () => {
    const all = renderSeedModelsScaling();
    const sleeper = scalingView(all, 2).scaledObject;
    expect(sleeper?.metadata.name).toBe(`triton-${SLEEPER}`);
    expect(sleeper?.spec.minReplicaCount).toBe(0);
    expect(sleeper?.spec.triggers[1]?.metadata.query).toContain(`model="${SLEEPER}"`);
    for (const o of crdObjects(all)) validateCustomResource(o);
    const { plan } = seedModelsPlan();
    const config = GatewayConfigSchema.parse(plan.gateway.plan.config);
    const byId = Object.fromEntries(config.models.map((m) => [m.id, m]));
    expect(byId["h2ogpt-6-9b"]?.wake).toBeUndefined();
    expect(byId["kogpt-6b"]?.wake).toBeUndefined();
    const sleep = plan.models[2]?.plan.autoscaling?.sleep;
    expect(byId[SLEEPER]?.wake).toEqual({
      // The model's in-flight cap: 2 × maxBatchSize 8 × max 3.
      queueDepth: 48,
      activationTimeoutSeconds: sleep?.activationTimeoutSeconds,
      keepaliveSeconds: 10,
    });
  });
});

describe("the estimate of a model that sleeps", () => {
  const { models, plan } = seedModelsPlan();
  const first = models[0];
  if (!first) throw new Error("no model");
  const report = estimateCost(
    costInput(first, models, plan, { stackName: "seed-models", region: "us-east-1", today: "2026-11-25" }),
  );
  const sleeper = report.models.find((m) => m.id === SLEEPER);

  it("gives $/month awake (one g6.xlarge) and asleep (no GPU node: its ECR images only)", () => {
    const z = sleeper?.sleep;
    if (!z) throw new Error("no sleep figures");
    const own = report.items.filter((i) => i.scope === SLEEPER);
    const ecr = own.find((i) => i.id.startsWith("ecr-"))?.monthlyUsd.min ?? NaN;
    const gpuLine = own.find((i) => i.id === "gpu-nodes");
    const hourly = gpuLine?.price?.usd ?? NaN;
    expect(z.asleepUsd).toBeCloseTo(ecr, 6);
    // One node all month: its hours, its root volume, the images.
    const volume = 126 * (own.find((i) => i.id === "gpu-node-volumes")?.price?.usd ?? NaN);
    expect(z.awakeUsd).toBeCloseTo(730 * hourly + volume + ecr, 6);
    expect(z.savedPerHourUsd).toBeCloseTo(((z.awakeUsd ?? 0) - (z.asleepUsd ?? 0)) / 730, 9);
    // The model's range runs from asleep to its ceiling.
    expect(sleeper?.monthlyUsd.min).toBeCloseTo(z.asleepUsd ?? NaN, 6);
    expect(report.models.filter((m) => m.sleep).map((m) => m.id)).toEqual([SLEEPER]);
  });

  it("times zero to first token from activation, node boot, pull and load, each with its basis", () => {
    const z = sleeper?.sleep;
    const p = plan.models[2]?.plan.autoscaling;
    if (!z || !p?.sleep) throw new Error("no sleep figures");
    expect(z.path.map((s) => s.step)).toEqual([
      "activation (scrape + KEDA poll)",
      "GPU node boot",
      "image pull",
      "model load",
    ]);
    expect(z.path.every((s) => s.basis === "assumed")).toBe(true);
    // The same figures as the plan's: the estimate and the gateway's timeout agree.
    expect(z.zeroToFirstTokenSeconds).toEqual({ expected: p.sleep.wakeSeconds, high: p.sleep.wakeHighSeconds });
    expect(z.zeroToFirstTokenSeconds.high).toBeGreaterThan(z.zeroToFirstTokenSeconds.expected);
  });

  it("prints the figures in synth's summary and in --diff (and so the PR comment)", () => {
    const summary = summaryLines(report).join("\n");
    expect(summary).toMatch(
      new RegExp(
        `${SLEEPER} sleeps after 30 min idle: \\$613/month awake, \\$15\\.42 asleep \\(each hour asleep saves \\$0\\.82; .*\\); zero to first token \\d+\\.\\d min \\(up to \\d+ min at the serial pull rate\\): activation`,
      ),
    );
    expect(summary).toMatch(/min with the models that sleep asleep/);
    const awake = estimateCost(
      costInput(
        first,
        models.slice(0, 2),
        buildStackPlan(models.slice(0, 2), "seed-models", (x) => `h:${x}`),
        {
          stackName: "seed-models",
          region: "us-east-1",
          today: "2026-11-25",
        },
      ),
    );
    const diff = diffLines(awake, report).join("\n");
    expect(diff).toMatch(
      new RegExp(`${SLEEPER}: .*sleeps: awake/asleep \\$613/\\$15\\.42 a month, zero to first token \\d`),
    );
  });
});
