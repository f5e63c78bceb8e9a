/**
 * A model's `canary` block in the gateway config: a second build of the model
 * (its own Triton Service and in-flight cap) that takes `weight` percent of
 * the model's new requests, and the rule that rolls it back by itself.
 * Rendered by the stack (infra/plan/gatewayConfig.ts); parsed strictly like
 * the rest of the config. docs/serving.md "Canary".
 */
import { z } from "zod";

export const CanaryRollbackSchema = z
  .object({
    /** Canary requests that ended in a server-side failure / canary requests finished, over the window: above it, rollback. */
    maxErrorRate: z.number().gt(0).lt(1),
    /** Canary p95 time to first token over the stable build's, over the window: above it, rollback. */
    maxTtftRatio: z.number().gt(1),
    /** The window both figures are taken over, seconds (kept in twelve slots, canary/canarySamples.ts). */
    windowSeconds: z.number().int().min(60).max(3600),
    /** Canary requests finished within the window before the rule is judged at all. */
    minRequests: z.number().int().min(1),
  })
  .strict();
export type CanaryRollback = z.infer<typeof CanaryRollbackSchema>;

export const CanarySchema = z
  .object({
    /** Names the canary build ("c-" and 8 hex of its bake step's hash): a rollback is sticky per id, a new id starts afresh. */
    id: z.string().regex(/^[a-z0-9][a-z0-9-]{0,62}$/, "lower-case letters, digits and '-', at most 63"),
    /** Percent of the model's new requests sent to the canary. */
    weight: z.number().int().min(1).max(99),
    triton: z
      .object({
        /** host:port of the canary's own Triton gRPC port (its ClusterIP Service). */
        grpc: z.string().min(1),
        ensemble: z.string().min(1).default("ensemble"),
      })
      .strict(),
    /** The canary's own in-flight cap, the same rule as the model's maxInflight. */
    maxInflight: z.number().int().positive(),
    rollback: CanaryRollbackSchema,
  })
  .strict();
export type Canary = z.infer<typeof CanarySchema>;
