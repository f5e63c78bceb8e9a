/**
 * A model's canary build (issue 36) as a model plan of its own, named
 * `<id>-canary`, so the per-model plan, renderers and components run for it.
 *
 * Its steps are the stable build's wherever they hash alike: the canary's
 * steps are first hashed as if they were the stable's (same name, scope and
 * folders), and every model step whose hash equals the stable's is shared:
 * the stable's pipeline runs it, the canary's steps read its folders and hash
 * its hash. Only the steps that differ are the canary's own, under its own
 * scope and folders, so nothing it runs touches a file of the stable build. A
 * canary that changes only maxBatchSize runs gemm and bake; fetch and convert
 * are the stable's.
 *
 * Promoted (`canary.promote`), the stable model serves the canary's image and
 * settings: its serving side is planned from the canary's view under the
 * stable's names, its build steps stay the stable's (nothing re-runs), and the
 * canary's own steps stay where they are and supply the digest.
 *
 * Pure: no Pulumi.
 */
import type { ResolvedCanary, ResolvedStack } from "../config/stack";
import type { Plan, PlanOptions } from "./index";
import { builderWorkTree, type BuilderWorkTree } from "./paths";
import { MODEL_STEP_IDS } from "./scope";
import type { StepId } from "./stepGraph";
import type { GatewayCanaryRollback } from "./types";

/** Plans a model view in the stack (plan/stack.ts: the stack's name and path hasher bound). */
export type ModelPlanner = (stack: ResolvedStack, opts: PlanOptions) => Plan;

export interface CanaryPlanEntry {
  /** The canary's resource name: `<of>-canary` (config/models.ts CANARY_SUFFIX). */
  id: string;
  /** The stable model's id. */
  of: string;
  /** The canary's plan: its own steps only (buildSteps), its Triton workload and nodes. */
  plan: Plan;
  /** The model steps it shares with the stable build (run by the stable's pipeline), in graph order. */
  shared: StepId[];
  /** The gateway's name of this canary build: "c-" + the first 8 hex of its bake step's hash. */
  buildId: string;
  weight: number;
  rollback: GatewayCanaryRollback;
  /** Promoted: the stable model serves this build's image; the canary has no Deployment, Service or nodes. */
  promote: boolean;
}

/** The canary's resolved view under another name (the probe and the promoted view use the stable's). */
function renamed(stack: ResolvedStack, name: string): ResolvedStack {
  return {
    ...stack,
    model: { ...stack.model, name },
    config: { ...stack.config, model: { ...stack.config.model, name } },
  };
}

/** The folders a canary's steps use: the stable's for what a shared step wrote, its own for the rest. */
function canaryWorkTree(stable: string, canary: string, shared: readonly StepId[]): BuilderWorkTree {
  const s = builderWorkTree(stable);
  const c = builderWorkTree(canary);
  const fetched = shared.includes("fetch");
  return {
    root: c.root,
    source: fetched ? s.source : c.source,
    tokenizer: fetched ? s.tokenizer : c.tokenizer,
    ft: shared.includes("convert") ? s.ft : c.ft,
    gemm: shared.includes("gemm") ? s.gemm : c.gemm,
  };
}

/** The bake's hash of a plan's graph, whichever pipeline runs it. */
function hashOf(plan: Plan, id: StepId, shared: Partial<Record<StepId, string>>): string {
  return plan.buildSteps.find((s) => s.id === id)?.inputHash ?? shared[id] ?? "";
}

/**
 * The canary plan of `stable` (whose plan is `stablePlan`, planned with
 * `stableOpts`). Its steps run on the stable's builder, scoped to the canary's
 * name; its pods get nodes of their own (a node label of its name, and in a
 * one-model stack a taint of its own too).
 */
export function canaryPlan(
  stable: ResolvedStack,
  canary: ResolvedCanary,
  stablePlan: Plan,
  stableOpts: PlanOptions,
  planOf: ModelPlanner,
): CanaryPlanEntry {
  const of = stable.model.name;
  const id = canary.stack.model.name;
  const stableHashes = Object.fromEntries(stablePlan.buildSteps.map((s) => [s.id, s.inputHash])) as Partial<
    Record<StepId, string>
  >;
  // The canary's steps hashed as the stable's would be: equal hashes are the same step.
  const probe = planOf(renamed(canary.stack, of), { ...stableOpts, steps: "all" });
  const sharedIds = MODEL_STEP_IDS.filter((s) => {
    const h = stableHashes[s];
    return h !== undefined && probe.buildSteps.find((p) => p.id === s)?.inputHash === h;
  });
  const shared = Object.fromEntries(sharedIds.map((s) => [s, stableHashes[s] ?? ""])) as Partial<
    Record<StepId, string>
  >;
  const opts: PlanOptions = {
    ...stableOpts,
    scope: id,
    steps: "model",
    severalModels: true,
    // A one-model stack's stable pods select no model label: a taint keeps them off the canary's nodes.
    ...(stableOpts.severalModels ? {} : { ownNodesTaint: true }),
    canary: { workTree: canaryWorkTree(of, id, sharedIds), shared },
  };
  const plan = planOf(canary.stack, opts);
  return {
    id,
    of,
    plan,
    shared: sharedIds,
    buildId: `c-${hashOf(plan, "bake", shared).slice(0, 8)}`,
    weight: canary.weight,
    rollback: { ...canary.rollback },
    promote: canary.promote,
  };
}

/**
 * The stable model's view once its canary is promoted: the canary's settings
 * (what its image was built with) under the stable's name, with the stable's
 * own pod count or autoscaling (the canary's fixed size was for its share).
 */
export function promotedView(stable: ResolvedStack, canary: ResolvedCanary): ResolvedStack {
  const s = stable.config.serving;
  const view = renamed(canary.stack, stable.model.name);
  return {
    ...view,
    config: {
      ...view.config,
      serving: {
        ...view.config.serving,
        replicas: s.replicas,
        ...(s.autoscaling ? { autoscaling: s.autoscaling } : {}),
      },
    },
    nodeDiskGiB: stable.nodeDiskGiB,
  };
}

/**
 * The stable model's plan with its canary promoted: the serving side of the
 * promoted view (the canary's limits and workload, the stable's names) and the
 * stable's build steps, unchanged, so no step is created, replaced or re-run.
 */
export function promotedPlan(
  stable: ResolvedStack,
  canary: ResolvedCanary,
  stablePlan: Plan,
  stableOpts: PlanOptions,
  planOf: ModelPlanner,
): Plan {
  const served = planOf(promotedView(stable, canary), stableOpts);
  return { ...served, buildSteps: stablePlan.buildSteps };
}
