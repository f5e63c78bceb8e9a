/** Stacks and helpers shared by the autoscaling/observability tests (unit and real-server suites). */
import { resolveStack, formatProblems } from "../../infra/resolve";
import type { ResolvedStack } from "../../infra/config/stack";
import type { NodeClassRefs } from "../../infra/render/karpenter";
import {
  renderStackScaling as renderStackScalingOf,
  sharedScalingInput,
  type ModelScalingManifests,
  type SharedScalingManifests,
  type StackScalingManifests,
} from "../../infra/render/scaling";
import { buildStackPlan, type StackPlan } from "../../infra/plan/stack";
import { SEED_MODELS_STACK, stackFileConfig } from "./modelsForm";
import { GPTJ_REVISION, gpt2Config, withOverrides, type RawConfig } from "./fixtures";
import { estimateCost, gpuPricing } from "../../infra/cost";
import { costInput } from "../../infra/cost/fromStack";

export const PROMETHEUS_URL = "http://prometheus-operated.monitoring.svc:9090";
const NO_SECRETS = { hfToken: false, kubeconfig: false };

/** GPT-J 6B, one A10G per pod (g5.2xlarge), autoscaled 2..8; `extra` overrides autoscaling keys. */
export function gptjAutoscaled(extra: Record<string, unknown> = {}): RawConfig {
  const base = gpt2Config();
  return withOverrides(base, {
    model: { preset: "gpt-j-6b", source: { huggingface: { repo: "EleutherAI/gpt-j-6b", revision: GPTJ_REVISION } } },
    build: { ...base.build, builderInstanceType: "g5.4xlarge" },
    serving: { instanceType: "g5.2xlarge", autoscaling: { min: 2, max: 8, prometheusUrl: PROMETHEUS_URL, ...extra } },
  });
}

export function resolvedStack(cfg: RawConfig): ResolvedStack {
  const { stack, problems } = resolveStack(cfg, NO_SECRETS);
  if (!stack) throw new Error(formatProblems("test", problems));
  return stack;
}

/** What the stack shares beside one model's own objects: a one-model stack's whole render, as tests read it. */
export type ScalingView = SharedScalingManifests & ModelScalingManifests;

/** Model `n`'s own scaling objects beside the stack's shared ones. */
export function scalingView(m: StackScalingManifests, n = 0): ScalingView {
  return { ...m.shared, ...m.models[n] };
}

/** Every PromQL expression a stack ships: the scaler queries, the alert rules, the dashboard panels. */
export function shippedQueries(stack: StackScalingManifests): Array<{ where: string; expr: string }> {
  const out: Array<{ where: string; expr: string }> = [];
  const m = stack.shared;
  for (const so of [...stack.models.map((own) => own.scaledObject), m.gatewayScaledObject])
    for (const t of so?.spec.triggers ?? [])
      out.push({ where: `ScaledObject ${t.name}`, expr: t.metadata.query ?? "" });
  for (const g of m.prometheusRule.spec.groups)
    for (const r of g.rules) out.push({ where: `alert ${r.alert}`, expr: r.expr });
  for (const p of m.dashboard.panels)
    for (const t of p.type === "row" ? [] : p.targets)
      out.push({ where: `panel "${p.title}" ${t.refId}`, expr: t.expr });
  return out;
}

/**
 * The scaling objects of a resolved stack, as the composition roots render them: from the plan's
 * scaling input, priced in us-east-1 (the dashboard's live cost panels).
 */
export function renderOneModelScaling(
  s: ResolvedStack,
  stackName = "dev",
  refs?: NodeClassRefs,
): StackScalingManifests {
  // Build-step hashes play no part in scaling: a stand-in hasher spares reading the repository.
  const sp = buildStackPlan([s], stackName, (p) => `h:${p}`);
  const plan = sp.models[0]?.plan;
  if (!plan) throw new Error("a stack plan has at least one model");
  const pricing = gpuPricing(
    estimateCost(costInput(s, [s], sp, { stackName, region: "us-east-1", today: "2026-11-25" })),
  );
  return renderStackScalingOf(
    sharedScalingInput(sp.gateway.plan, [{ ...plan.renderInputs.scaling, refs, ...(pricing ? { pricing } : {}) }]),
  );
}

/** A one-model stack's scaling objects as one view: its own beside the shared ones. */
export function renderStackScaling(s: ResolvedStack, stackName = "dev", refs?: NodeClassRefs): ScalingView {
  return scalingView(renderOneModelScaling(s, stackName, refs));
}

/** The example stack of several models (test/stacks/models/Pulumi.seed-models.yaml), resolved and planned as the composition roots do. */
export function seedModelsPlan(
  stackName = "seed-models",
  stackFile = SEED_MODELS_STACK,
): { models: ResolvedStack[]; plan: StackPlan } {
  const { models, problems } = resolveStack(stackFileConfig(stackFile), NO_SECRETS);
  if (!models) throw new Error(formatProblems(stackName, problems));
  // Build-step hashes play no part here: a stand-in hasher spares reading the repository.
  return { models, plan: buildStackPlan(models, stackName, (p) => `h:${p}`) };
}

/**
 * The scaling objects of the example stack of several models: what they share, and each model's own.
 * `priced`: each model's GPU nodes priced as the roots price them (the stack's estimate in us-east-1).
 */
export function renderSeedModelsScaling(priced = false, stackFile = SEED_MODELS_STACK): StackScalingManifests {
  const { models, plan } = seedModelsPlan("seed-models", stackFile);
  const first = models[0];
  const firstPlan = plan.models[0]?.plan;
  if (!first || !firstPlan) throw new Error("the example stack has no model");
  const report = priced
    ? estimateCost(
        costInput(first, models, plan, { stackName: "seed-models", region: "us-east-1", today: "2026-11-25" }),
      )
    : undefined;
  return renderStackScalingOf(
    sharedScalingInput(
      plan.gateway.plan,
      plan.models.map((m) => {
        const pricing = report ? gpuPricing(report, m.id) : undefined;
        return { ...m.plan.renderInputs.scaling, ...(pricing ? { pricing } : {}) };
      }),
    ),
  );
}
