/**
 * The gateway belongs to the stack: each route's in-flight cap comes from its
 * own model's replicas (autoscaled: its maximum), the gateway's replica range
 * and scaler from the load of every model, and the store's degraded-mode pod
 * count from the gateway's own range. Checked with the first model fixed and
 * the second autoscaled, and the reverse (the seam where "the first model"
 * used to stand for the stack).
 */
import { describe, expect, it } from "vitest";
import { resolveStack } from "../../infra/resolve";
import type { ResolvedStack } from "../../infra/config";
import { buildStackPlan, type StackPlan } from "../../infra/plan/stack";
import { renderStackScaling } from "../../infra/render/scaling";
import { SEED_MODELS_STACK, stackFileConfig } from "../lib/modelsForm";

type Raw = Record<string, Record<string, unknown>>;
type ModelEntry = Record<string, unknown>;

/** The example stack's h2oGPT (fixed, 1 replica, batch 8) and CodeGen (autoscaled 1..3, batch 8), in `order`. */
function twoModels(order: "fixed-first" | "autoscaled-first"): Raw {
  const raw = stackFileConfig(SEED_MODELS_STACK) as Raw;
  const all = raw.models as Record<string, ModelEntry>;
  const fixed = all["h2ogpt-6-9b"];
  const autoscaled = all["codegen-2b-mono"];
  if (!fixed || !autoscaled) throw new Error("the example stack lost a model");
  raw.models =
    order === "fixed-first"
      ? { "h2ogpt-6-9b": fixed, "codegen-2b-mono": autoscaled }
      : { "codegen-2b-mono": autoscaled, "h2ogpt-6-9b": fixed };
  raw.build = {
    ...raw.build,
    builderInstanceType: order === "fixed-first" ? ["g5.4xlarge", "g6.4xlarge"] : ["g6.4xlarge", "g5.4xlarge"],
  };
  raw.serving = { ...raw.serving, consumers: { search: { requestsPerMinute: 600 } } };
  return raw;
}

function plan(raw: Raw): { models: ResolvedStack[]; sp: StackPlan } {
  const r = resolveStack(raw, {}, { today: "2026-11-25" });
  expect(r.problems).toEqual([]);
  if (!r.models) throw new Error("no models");
  return { models: r.models, sp: buildStackPlan(r.models, "seed-models", (p) => `h:${p}`) };
}

/** What a model's Triton pods hold at their most: two batches (one running, one queued) per pod. */
function heldAtMost(m: ResolvedStack): number {
  const s = m.config.serving;
  return 2 * s.maxBatchSize * (s.autoscaling?.max ?? s.replicas);
}

describe.each(["fixed-first", "autoscaled-first"] as const)("gateway capacity from every model (%s)", (order) => {
  const { models, sp } = plan(twoModels(order));
  const gw = sp.gateway.plan;

  it("caps each route at what its own model's Triton pods hold at their most", () => {
    const caps = Object.fromEntries(gw.config.models.map((r) => [r.id, r.maxInflight]));
    for (const m of models) expect(caps[m.model.name], m.model.name).toBe(heldAtMost(m));
    // CodeGen: 2 × 8 × 3 (its max), where its floor would give 16.
    expect(caps["codegen-2b-mono"]).toBe(48);
    expect(gw.config.limits.maxInflight).toBe(models.reduce((sum, m) => sum + heldAtMost(m), 0));
  });

  it("autoscales the gateway when any model autoscales, on the load of all of them", () => {
    expect(gw.autoscaled).toBe(true);
    expect(sp.gateway.workload.autoscaled).toBe(true);
    const scaling = gw.scaling;
    if (!scaling) throw new Error("no gateway scaling");
    // Floor: 2 × 8 × 1 (h2oGPT) + 2 × 8 × 1 (CodeGen at its min) = 32 -> 16 per pod; peak 16 + 48 = 64 -> 4 pods.
    expect(scaling).toMatchObject({ minReplicas: 2, inflightTarget: 16, peakInflight: 64, maxReplicas: 4 });
    const rendered = renderStackScaling({
      models: sp.models.map((e) => e.plan.renderInputs.scaling),
      gateway: scaling,
      sharedStore: gw.store !== undefined,
    });
    expect(rendered.shared.gatewayScaledObject?.spec.maxReplicaCount).toBe(4);
    // Only the autoscaled model has a ScaledObject of its own.
    expect(rendered.models.map((m) => m.scaledObject !== undefined)).toEqual(
      sp.models.map((e) => e.id === "codegen-2b-mono"),
    );
  });

  it("lets a gateway pod that counted no peers assume the gateway's own most pods", () => {
    expect(gw.store?.gateway.assumedPods).toBe(gw.scaling?.maxReplicas);
    expect(gw.config.store?.assumedPods).toBe(4);
  });
});

describe("a stack of fixed-size models", () => {
  it("keeps the gateway at its fixed size and each pod's assumed peers at that size", () => {
    const raw = twoModels("fixed-first");
    const all = raw.models as Record<string, ModelEntry>;
    const codegen: ModelEntry = { ...all["codegen-2b-mono"], replicas: 2 };
    delete codegen.autoscaling;
    all["codegen-2b-mono"] = codegen;
    const { sp } = plan(raw);
    expect(sp.gateway.plan.autoscaled).toBe(false);
    expect(sp.gateway.plan.scaling).toBeUndefined();
    expect(sp.gateway.plan.config.models.map((r) => r.maxInflight)).toEqual([16, 32]);
    expect(sp.gateway.plan.store?.gateway.assumedPods).toBe(sp.gateway.plan.replicas);
  });
});
