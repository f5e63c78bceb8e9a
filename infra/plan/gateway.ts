/**
 * The gateway's plan: the one gateway of a stack, in front of every model. It
 * belongs to the stack, never to one model: its routes come from every model
 * (each with its own in-flight cap), its replica range and scaler from the load
 * of all of them, its store's degraded-mode pod count from its own replica
 * range. A one-model stack's gateway is this plan over its one model.
 *
 * Pure: no Pulumi.
 */
import { findPreset } from "../model/catalog";
import { renderGatewayConfig } from "./gatewayConfig";

import type { ResolvedStack } from "../config/stack";
import type { TeamLimits } from "../config/schema";
import { consumerEntries, heldKeys, teamLimits } from "../config/teams";
import { planGatewayScaling, stackAutoscalingPlan, type GatewayScalingPlan } from "../resolve/scaling";
import { storePlan, type StorePlan } from "./store";

import {
  ENSEMBLE_MODEL,
  PORTS,
  workloadName,
  SYSTEM_NODE_LABEL,
  WAKE_KEEPALIVE_SECONDS,
} from "../conventions/workload";
import type { GatewayCanaryRollback, GatewayConfigFile, GatewayRoute, GatewayWake } from "./types";
/** The gateway's side of the plan: its config file (from the same numbers as the model repositories) and deployment. */
export interface GatewayPlan {
  config: GatewayConfigFile;
  /** serving.gatewayReplicas: the fixed size, or the floor when autoscaled. */
  replicas: number;
  /** A KEDA ScaledObject owns the Deployment's replicas: any model of the stack is autoscaled (render/scaling.ts). */
  autoscaled: boolean;
  /** With `autoscaled`: the gateway's replica range and scaler, from every model's load (resolve/scaling.ts planGatewayScaling). */
  scaling?: GatewayScalingPlan;
  /** serving.consumers' entries: one API key each (`team:v2` is a second key of `team`). */
  consumers: string[];
  /** Entries whose team holds its key (keySha256): their hashes; nothing is generated for them. */
  heldKeys: Record<string, string[]>;
  /** Each team's own limits (across pods with a store), for the teams that set any; the others take the gateway's defaults. */
  teams: Record<string, TeamLimits>;
  /** serving.store: the shared store the stack provides; absent with mode none. */
  store?: StorePlan;
  tlsCertificateArn?: string;
  /** Node label the gateway pods require: the stack's system node group (cluster mode create only). */
  systemNodeLabel?: { key: string; value: string };
}

/** Triton pods a model can have: its autoscaling maximum, or its fixed replica count. */
export function modelMaxReplicas(model: ResolvedStack): number {
  const s = model.config.serving;
  return s.autoscaling?.max ?? s.replicas;
}

/**
 * The gateway's `wake` block of a model that sleeps (autoscaling min 0), else undefined. The queue
 * defaults to the model's in-flight cap: once it is awake the gateway sends it no more than that at
 * once, so a deeper queue would only make the last held requests wait longer.
 */
export function gatewayWake(model: ResolvedStack, maxInflight: number): GatewayWake | undefined {
  const sleep = stackAutoscalingPlan(model)?.sleep;
  if (!sleep) return undefined;
  return {
    queueDepth: model.config.serving.autoscaling?.holdQueueDepth ?? maxInflight,
    activationTimeoutSeconds: sleep.activationTimeoutSeconds,
    keepaliveSeconds: WAKE_KEEPALIVE_SECONDS,
  };
}

/** A model as the gateway routes to it: its limits, chat template, Triton Service, in-flight cap and wake settings. */
export function gatewayRoute(model: ResolvedStack): GatewayRoute {
  const s = model.config.serving;
  const tritonService = `${workloadName({ modelName: model.model.name })}.${s.namespace}.svc.cluster.local`;
  const maxInflight = 2 * s.maxBatchSize * modelMaxReplicas(model);
  const wake = gatewayWake(model, maxInflight);
  return {
    id: model.model.name,
    maxInputLen: s.maxInputLen,
    maxOutputLen: s.maxOutputLen,
    maxBatchSize: s.maxBatchSize,
    vocab: model.model.arch.vocab,
    ...(s.maxChoiceTokens ? { maxChoiceTokens: s.maxChoiceTokens } : {}),
    ...(model.model.preset ? { chatTemplate: findPreset(model.model.preset)?.chatTemplate } : {}),
    tritonGrpc: `${tritonService}:${PORTS.grpc}`,
    // Two batches per Triton replica in flight at most: more only lengthens everyone's queue. Autoscaled:
    // per the most Triton pods the model can have; the ScaledObject adds them as the queue grows, and a
    // cap at the floor would refuse the very load that makes it scale (16 where 4 replicas need 64).
    // The gateway-wide cap (limits.maxInflight) defaults to the sum of the models' caps.
    maxInflight,
    ...(wake ? { wake } : {}),
    ...engineFields(model),
  };
}

/**
 * What the gateway serves per engine: nothing for an FT model (the gateway's defaults are FT's, so an FT
 * stack's config stays as it was); a vLLM model's engine, its max_logprobs (top alternatives per token) and
 * `cancellable`, since the vLLM model aborts a request whose gRPC call is cancelled (images/vllm, model.py).
 */
export function engineFields(model: ResolvedStack): Pick<GatewayRoute, "engine" | "maxLogprobs" | "cancellable"> {
  if (model.engine === "ft" || !model.vllm) return {};
  return { engine: model.engine, maxLogprobs: model.vllm.maxLogprobs, cancellable: true };
}

/** What the gateway needs of a live canary: its build (a model view of its own) and its traffic settings. */
export interface CanaryRouteInput {
  stack: ResolvedStack;
  buildId: string;
  weight: number;
  rollback: GatewayCanaryRollback;
}

/**
 * A model's route with its canary: the `canary` block (the canary's own
 * Triton, in-flight cap and rule), and the limits as the stricter of the two
 * builds, so a request the gateway admits for the model is valid on either.
 */
export function withCanary(route: GatewayRoute, canary: CanaryRouteInput): GatewayRoute {
  const c = gatewayRoute(canary.stack);
  const min = (a: number | undefined, b: number | undefined) =>
    a === undefined ? b : b === undefined ? a : Math.min(a, b);
  const maxChoiceTokens = min(route.maxChoiceTokens, c.maxChoiceTokens);
  // One engine for both builds, or the FT defaults: a request must be valid on either.
  const { engine, maxLogprobs, cancellable, ...rest } = route;
  const sameEngine = engine !== undefined && engine === c.engine;
  return {
    ...rest,
    ...(sameEngine
      ? { engine, maxLogprobs: min(maxLogprobs, c.maxLogprobs), cancellable: !!cancellable && !!c.cancellable }
      : {}),
    maxInputLen: Math.min(route.maxInputLen, c.maxInputLen),
    maxOutputLen: Math.min(route.maxOutputLen, c.maxOutputLen),
    maxBatchSize: Math.min(route.maxBatchSize, c.maxBatchSize),
    vocab: Math.min(route.vocab, c.vocab),
    ...(maxChoiceTokens !== undefined ? { maxChoiceTokens } : {}),
    canary: {
      id: canary.buildId,
      weight: canary.weight,
      triton: { grpc: c.tritonGrpc, ensemble: ENSEMBLE_MODEL },
      maxInflight: c.maxInflight,
      rollback: { ...canary.rollback },
    },
  };
}

/**
 * The stack's gateway. `stack` carries the stack-wide settings (consumers,
 * gateway replicas, store, TLS, cluster mode: the same in every model's view,
 * config/models.ts); `models` are every model it routes to, in the stack's
 * order (default: `stack` alone, a one-model stack).
 */
export function gatewayPlan(
  stack: ResolvedStack,
  models: readonly ResolvedStack[] = [stack],
  /**
   * The models' live canaries (plan/canary.ts), by stable model id: each adds a `canary` block to its model's route.
   * @default none
   */
  canaries: ReadonlyMap<string, CanaryRouteInput> = new Map(),
): GatewayPlan {
  const s = stack.config.serving;
  const config = renderGatewayConfig(
    models.map((m) => {
      const route = gatewayRoute(m);
      const canary = canaries.get(m.model.name);
      return canary ? withCanary(route, canary) : route;
    }),
  );
  // Autoscaled when any model is: its Triton pods grow, and the gateway pods in front of them must follow.
  const scaling = models.some((m) => m.config.serving.autoscaling)
    ? planGatewayScaling({
        replicas: s.gatewayReplicas,
        models: models.map((m) => ({
          maxBatchSize: m.config.serving.maxBatchSize,
          // A model that sleeps is at one pod or more whenever it has traffic: its floor for the gateway's share.
          minReplicas: Math.max(1, m.config.serving.autoscaling?.min ?? m.config.serving.replicas),
          maxReplicas: modelMaxReplicas(m),
        })),
      })
    : undefined;
  // One store for the stack's gateway, named after the first model's workload (a one-model stack keeps its
  // names). A pod that has counted no peers assumes the most gateway pods there can be: the gateway's own range.
  const store = storePlan(
    stack,
    workloadName({ modelName: stack.model.name }),
    scaling?.maxReplicas ?? s.gatewayReplicas,
  );
  return {
    config: store ? { ...config, store: store.gateway } : config,
    ...(store ? { store } : {}),
    replicas: s.gatewayReplicas,
    autoscaled: scaling !== undefined,
    ...(scaling ? { scaling } : {}),
    consumers: consumerEntries(s.consumers),
    heldKeys: heldKeys(s.consumers),
    teams: teamLimits(s.consumers),
    ...(s.tlsCertificateArn ? { tlsCertificateArn: s.tlsCertificateArn } : {}),
    // The stack labels its own system node group; an existing cluster's pools are not the stack's to name.
    ...(stack.config.cluster.mode === "create" ? { systemNodeLabel: { ...SYSTEM_NODE_LABEL } } : {}),
  };
}
