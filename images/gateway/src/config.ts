/**
 * The gateway's configuration: one JSON file (GATEWAY_CONFIG, rendered by the
 * Pulumi program into a ConfigMap from the same plan as the model repository)
 * and the consumers' hashed keys (GATEWAY_KEYS_FILE, a Kubernetes Secret).
 * Unknown keys are mistakes: both are parsed strictly.
 */
import { readFileSync } from "node:fs";
import { z } from "zod";
import { StoreConfigSchema } from "./store/storeConfig";
import { CanarySchema } from "./canary/canaryConfig";

const positive = z.number().int().positive();

/** The engines a model's ensemble may run on (infra/model/types.ts ENGINES: the same words). */
export const ENGINES = ["ft", "vllm"] as const;
export type Engine = (typeof ENGINES)[number];

export const ChatTemplateSchema = z
  .object({
    /** Prefix of a system turn; without one, system text opens the first user turn. */
    system: z.string().optional(),
    user: z.string(),
    assistant: z.string(),
    /** Written after every turn's content. */
    turnEnd: z.string(),
    /** Sequences that end the assistant's turn: the next turn's prefixes. */
    stop: z.array(z.string().min(1)),
  })
  .strict();
export type ChatTemplate = z.infer<typeof ChatTemplateSchema>;

/**
 * A model that may sleep (0 Triton replicas): while it has no ready Triton, its
 * requests are held on each gateway pod (admission/holdQueue.ts) instead of refused,
 * and the pod's held-requests gauge wakes it (the ScaledObject activates on it).
 */
export const WakeSchema = z
  .object({
    /** Requests held per gateway pod; one more is refused with 429 and Retry-After. */
    queueDepth: positive,
    /** Longest a request is held; then 503 model_unavailable with Retry-After. */
    activationTimeoutSeconds: positive,
    /** Seconds between SSE comments to a held stream: at most 10, so clients and the NLB's idle timers never fire. */
    keepaliveSeconds: z.number().int().min(1).max(10).default(10),
  })
  .strict();
export type Wake = z.infer<typeof WakeSchema>;

/**
 * One served model: the OpenAI id clients send, its limits (the numbers its
 * model repository was rendered with) and where its ensemble is.
 */
export const ModelConfigSchema = z
  .object({
    /** The OpenAI `model` id clients send; also the model's name on the KServe v2 paths, so one path segment. */
    id: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/, "letters, digits, '.', '_', ':' and '-'"),
    /** Unix seconds reported by /v1/models. */
    created: z.number().int().nonnegative().default(0),
    maxInputLen: positive,
    maxOutputLen: positive,
    maxBatchSize: positive,
    vocab: positive,
    /** Byte cap on a prompt, checked before anything else looks at it (same rule as preprocessing). */
    maxPromptBytes: positive,
    /** Cap on generated tokens per prompt across its choices (n or best_of × max_tokens); default maxOutputLen × maxBatchSize. */
    maxChoiceTokens: positive.optional(),
    chatTemplate: ChatTemplateSchema.optional(),
    triton: z
      .object({
        /** host:port of this model's Triton gRPC port (its ClusterIP Service). */
        grpc: z.string().min(1),
        ensemble: z.string().min(1).default("ensemble"),
      })
      .strict(),
    /**
     * Generations in flight to this model's Triton before the gateway answers 503: its queue
     * stays short. Divided into fair shares like limits.maxInflight, which caps all models together.
     */
    maxInflight: positive,
    /**
     * Whether this model's Triton stops a generation when its gRPC call is
     * cancelled. Off (the default): FasterTransformer never does, on any
     * Triton (request cancellation arrived in Triton 23.10 and the FT backend
     * does not check it), so when a client leaves or a stop sequence ends the
     * text, the gateway reads the generation to its end and the request keeps
     * its slots and counts its tokens until then. On: a backend that honours
     * cancellation on Triton 23.10 or later (TensorRT-LLM's, Python models
     * that check is_cancelled()); the call is cancelled and released at once.
     */
    cancellable: z.boolean().default(false),
    /**
     * The engine behind this model's ensemble (docs/consuming.md, the compatibility matrix per engine):
     * `ft` (the default) FasterTransformer, `vllm` the project's vLLM model (images/vllm). What a request
     * may ask of the model follows from it; the gRPC contract is the same.
     */
    engine: z.enum(ENGINES).default("ft"),
    /**
     * Most top alternatives per generated token a request may ask (completions `logprobs`, chat
     * `top_logprobs`): the vLLM model's `max_logprobs`. 0 (the default): none, as FasterTransformer
     * computes the sampled token's log probability only.
     */
    maxLogprobs: z.number().int().nonnegative().default(0),
    /** Present only for a model that may sleep; absent (the default): requests to a model without a ready Triton get 503 upstream_unavailable at once. */
    wake: WakeSchema.optional(),
    /**
     * A second build taking `weight` percent of the model's new requests, rolled back by itself when it
     * breaks its rule (canary/canaryConfig.ts); absent (the default): every request goes to `triton`.
     */
    canary: CanarySchema.optional(),
  })
  .strict()
  .superRefine((m, ctx) => {
    if (m.engine === "ft" && m.maxLogprobs > 0) {
      ctx.addIssue({
        code: "custom",
        path: ["maxLogprobs"],
        message: `model ${m.id} is served by FasterTransformer, which computes no alternatives: maxLogprobs must be 0, got ${m.maxLogprobs}`,
      });
    }
    // A model that sleeps has no ready build to compare with, and holding requests for two builds is not defined.
    if (m.wake && m.canary) {
      ctx.addIssue({
        code: "custom",
        path: ["canary"],
        message: `model ${m.id} has both wake and canary: a model that may sleep cannot have a canary; remove one`,
      });
    }
    if (m.canary && m.canary.triton.grpc === m.triton.grpc && m.canary.triton.ensemble === m.triton.ensemble) {
      ctx.addIssue({
        code: "custom",
        path: ["canary", "triton"],
        message: `the canary of model ${m.id} calls the stable build's Triton (${m.triton.grpc}, ${m.triton.ensemble}): give it its own`,
      });
    }
  });
export type ModelConfig = z.infer<typeof ModelConfigSchema>;

export const GatewayConfigSchema = z
  .object({
    models: z
      .array(ModelConfigSchema)
      .min(1)
      .superRefine((models, ctx) => {
        // The id is the route: two entries with one id would make one of them unreachable.
        const seen = new Set<string>();
        models.forEach((m, i) => {
          if (seen.has(m.id))
            ctx.addIssue({ code: "custom", path: [i, "id"], message: `model ${m.id} is listed twice` });
          seen.add(m.id);
        });
      }),
    limits: z
      .object({
        /** Largest request body in bytes. */
        bodyBytes: positive.default(1_048_576),
        /** Default per-key limits; a consumer may carry its own in the keys file. */
        requestsPerMinute: positive.default(600),
        maxConcurrent: positive.default(8),
        /** Generations in flight across all keys and models before the gateway answers 503, in fair shares per team. */
        maxInflight: positive.default(64),
        requestTimeoutSeconds: positive.default(300),
        /** Stop sequences per request, and bytes per stop sequence. */
        maxStop: positive.default(4),
        maxStopBytes: positive.default(256),
      })
      .strict()
      .prefault({}),
    listen: z
      .object({
        host: z.string().default("0.0.0.0"),
        port: z.number().int().min(0).max(65535).default(8080),
        /** Prometheus /metrics, on its own port so it is never behind the load balancer. */
        metricsPort: z.number().int().min(0).max(65535).default(9090),
      })
      .strict()
      .prefault({}),
    /** Log prompt and completion text (off by default: prompts may hold personal data). */
    logText: z.boolean().default(false),
    /** The shared Valkey/Redis (store/storeConfig.ts); without one, every limit and usage count is per pod. */
    store: StoreConfigSchema.optional(),
  })
  .strict();
export type GatewayConfig = z.infer<typeof GatewayConfigSchema>;
export type Limits = GatewayConfig["limits"];
export type GatewayConfigInput = z.input<typeof GatewayConfigSchema>;

export const ConsumerSchema = z
  .object({
    /** Team name: the metrics and logs label. */
    name: z.string().regex(/^[a-z0-9][a-z0-9-]{0,62}$/, "lower-case letters, digits and '-'"),
    /** Hex SHA-256 of each valid key; two during a rotation. */
    keySha256: z.array(z.string().regex(/^[0-9a-f]{64}$/, "64 lower-case hex digits")).min(1),
    /** The team's own limits (across all pods with a store, else per pod); unset ones take `limits`' defaults. */
    requestsPerMinute: positive.optional(),
    tokensPerMinute: positive.optional(),
    maxConcurrent: positive.optional(),
    /** Weight of the team's fair share of limits.maxInflight (and of each model's maxInflight); default 1. */
    share: z.number().positive().optional(),
    /** The model ids this team may use; absent: every model. Others look to it as if they did not exist. */
    models: z.array(z.string().min(1)).min(1).optional(),
  })
  .strict();
export type Consumer = z.infer<typeof ConsumerSchema>;

export const KeysFileSchema = z.object({ consumers: z.array(ConsumerSchema) }).strict();
export type KeysFile = z.infer<typeof KeysFileSchema>;

function parseFile<T>(schema: z.ZodType<T>, file: string, what: string): T {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, "utf8"));
  } catch (error) {
    throw new Error(`${what} ${file}: ${(error as Error).message}`, { cause: error });
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `  ${i.path.join(".") || "(root)"}: ${i.message}`);
    throw new Error(`${what} ${file} is invalid:\n${problems.join("\n")}`);
  }
  return parsed.data;
}

export function loadConfig(file: string): GatewayConfig {
  return parseFile(GatewayConfigSchema, file, "gateway config");
}

export function loadKeys(file: string): KeysFile {
  const keys = parseFile(KeysFileSchema, file, "keys file");
  const names = new Set<string>();
  for (const c of keys.consumers) {
    if (names.has(c.name)) throw new Error(`keys file ${file}: consumer ${c.name} is listed twice`);
    names.add(c.name);
  }
  return keys;
}
