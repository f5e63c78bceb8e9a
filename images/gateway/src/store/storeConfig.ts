/**
 * The `store` section of the gateway config: where the shared Valkey/Redis
 * lives and how to reach it. Its password is never here: it comes from the
 * environment variable `passwordEnv` names, fed by a Kubernetes Secret.
 * Parsed strictly like the rest of the config (unknown keys are mistakes).
 */
import { z } from "zod";

export const StoreConfigSchema = z
  .object({
    /** DNS name of the endpoint: ElastiCache's, or the in-cluster Service's. */
    host: z.string().min(1),
    port: z.number().int().min(1).max(65535).default(6379),
    /** `cluster`: ElastiCache Serverless, which speaks cluster mode only; `standalone`: one server. */
    mode: z.enum(["standalone", "cluster"]).default("standalone"),
    /** TLS to the store, the server's certificate checked against `host`; on unless turned off. */
    tls: z.boolean().default(true),
    /** PEM file of the CA that signed the store's certificate; unset: the system's CAs (ElastiCache's certificates chain to them). */
    caFile: z.string().min(1).optional(),
    /** Prefix of every key, so several stacks can share one store. */
    keyPrefix: z
      .string()
      .regex(/^[A-Za-z0-9_.-]{1,48}:$/, "letters, digits, '_', '.', '-', ending with ':'")
      .default("triton-ft:"),
    /** AUTH user (an ElastiCache user, or Valkey's `default`). */
    username: z.string().min(1).default("default"),
    /** Environment variable holding the AUTH password; the gateway refuses to start when it is empty. */
    passwordEnv: z
      .string()
      .regex(/^[A-Z_][A-Z0-9_]*$/, "an environment variable name")
      .default("GATEWAY_STORE_PASSWORD"),
    /**
     * Gateway pods assumed until the first heartbeat counts them (a pod that
     * starts while the store is down): the stack renders its replica count,
     * or the autoscaler's maximum, so per-pod limits never add up to more than the team's.
     */
    assumedPods: z.number().int().positive().default(1),
    /** A store call taking longer fails, and the gateway falls back to per-pod limits until the store answers again. */
    commandTimeoutMs: z.number().int().positive().default(500),
  })
  .strict();
export type StoreConfig = z.infer<typeof StoreConfigSchema>;
export type StoreConfigInput = z.input<typeof StoreConfigSchema>;
