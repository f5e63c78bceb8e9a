/**
 * The stack's configuration: one typed schema for every key under the
 * `triton-ft:` namespace, with defaults and descriptions.
 *
 * Pure on purpose: `parseConfig` takes plain values, so `synth` (which reads
 * Pulumi.<stack>.yaml without the Pulumi engine) and the Pulumi program share
 * exactly the same parsing. Secrets never enter this module; only whether they
 * are set does.
 */
import { z } from "zod";
import { DEFAULT_KUBERNETES_VERSION } from "../catalog/eks";
import { parseCidr } from "./cidr";
import { knownKeysAt, parseLeniently, type Problem } from "./issues";
import { unknownKeyProblems } from "./keys";
import { autoscalingSchema } from "./autoscaling";
import { K8S_NAMESPACES } from "./limits";
import { ENGINES, FAMILIES } from "../model/types";
import { unsetMeans } from "./statedDefault";

export const PROJECT = "triton-ft";

/** An IPv4 CIDR, parsed by ipaddr.js (infra/config/cidr.ts): 999.1.1.1/32, 10.0.0.0/33 and 10.0.0.1/16 are refused with the reason. */
const cidr = z.string().superRefine((value, ctx) => {
  const p = parseCidr(value);
  if (!p.ok) ctx.addIssue({ code: "custom", message: p.reason, params: { fix: p.fix } });
});

const positiveInt = z.number().int().positive();

/**
 * EC2 resource ids: the type prefix and 8 (older) or 17 hex characters
 * (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/resource-ids.html, read 2026-11-25).
 */
const EC2_ID = (prefix: string) => new RegExp(`^${prefix}-(?:[0-9a-f]{8}|[0-9a-f]{17})$`);

const modelSourceSchema = z.union([
  z
    .object({
      huggingface: z
        .object({
          repo: z.string().min(1).describe("Hugging Face repo id, e.g. EleutherAI/gpt-j-6b."),
          revision: z
            .string()
            .min(1)
            .describe("Commit SHA (40 hex) of the repo to fetch; required. Branches and tags are refused."),
        })
        .strict(),
    })
    .strict(),
  z
    .object({
      archive: z
        .object({
          url: z
            .string()
            .url()
            .optional()
            .describe("https URL of a mesh-transformer-jax slim checkpoint (.tar.zstd).")
            .meta(unsetMeans("the preset's archive URL")),
          sha256: z.string().describe('SHA-256 of the archive (64 hex), quoted in YAML: sha256: "…".'),
          tokenizerRevision: z
            .string()
            .describe("Commit SHA (40 hex) of the preset's Hugging Face repo to take the tokenizer from; required."),
        })
        .strict(),
    })
    .strict(),
]);

const archSchema = z
  .object({
    layers: positiveInt,
    hidden: positiveInt,
    heads: positiveInt,
    kvHeads: positiveInt
      .optional()
      .describe("Key/value heads (num_key_value_heads; grouped-query attention, family llama).")
      .meta(unsetMeans("heads (multi-head attention)")),
    ffn: positiveInt,
    vocab: positiveInt,
    rotaryDims: z.number().int().min(0),
    maxPositions: positiveInt,
    startId: z.number().int().min(0),
    endId: z.number().int().min(0),
  })
  .strict();

export const modelSchema = z
  .object({
    preset: z
      .string()
      .optional()
      .describe(
        'Catalog preset name (see docs/config-reference.md, "Model catalog"). Supplies family, architecture and token ids.',
      )
      .meta(unsetMeans("none: family, arch and source given explicitly")),
    family: z
      .enum(FAMILIES)
      .optional()
      .describe(
        "gptneox | gptj | gpt | codegen | llama (llama: engine vllm only). Required without a preset; must match the preset's family with one.",
      )
      .meta(unsetMeans("the preset's family")),
    engine: z
      .enum(ENGINES)
      .optional()
      .describe(
        "ft | vllm: the Triton backend that serves the model, FasterTransformer or vLLM (docs/vllm.md, Choosing an engine). vLLM serves every family (llama only on vLLM), needs no conversion or gemm, and takes the settings of serving.vllm (models.<id>.vllm).",
      )
      .meta(unsetMeans("ft")),
    source: modelSourceSchema
      .optional()
      .describe(
        "{huggingface: {repo, revision}} (revision: a 40-hex commit, required) or, for the gpt-j-6b-jax preset, {archive: {sha256, tokenizerRevision, url?}} (sha256 quoted; tokenizerRevision a 40-hex commit).",
      )
      .meta(unsetMeans("none: required (the weights are pinned to a commit or a checksum)")),
    arch: archSchema
      .optional()
      .describe(
        "Explicit architecture for models without a preset: layers, hidden, heads, kvHeads (llama), ffn, vocab, rotaryDims, maxPositions, startId, endId, as in the model's config.json.",
      )
      .meta(unsetMeans("the preset's architecture")),
    name: z
      .string()
      .regex(/^[a-z0-9][a-z0-9-]{0,38}$/, "lowercase letters, digits and '-', at most 39 characters")
      .optional()
      .describe("Short name used in resource and image names.")
      .meta(unsetMeans("the preset name, or the repo's last path segment")),
  })
  .strict();

/** build.promoteFrom: the stack whose images this one serves instead of building (infra/promotion/). */
export const promoteFromSchema = z
  .object({
    stackReference: z
      .string()
      .min(1)
      .describe(
        "<org>/<project>/<stack> of the stack that built the images (its serverImage, gatewayImage, modelPlan outputs).",
      ),
  })
  .strict();

/** build.tritonWithFtFrom: the stack whose triton_with_ft this one takes instead of compiling it (infra/promotion/tritonWithFt.ts). */
export const tritonWithFtFromSchema = z
  .object({
    stackReference: z
      .string()
      .min(1)
      .describe(
        "<org>/<project>/<stack> of the stack that compiled triton_with_ft (its tritonWithFtBuilds output), in the same AWS account and region.",
      ),
  })
  .strict();

export const buildSchema = z
  .object({
    tritonVersion: z
      .string()
      .regex(/^\d{2}\.\d{2}$/, "a Triton container release such as 23.05")
      .default("23.05")
      .describe(
        "nvcr.io/nvidia/tritonserver:<version>-py3 base of triton_with_ft. The FT backend last built against 23.05.",
      ),
    backendCommit: z
      .string()
      .optional()
      .describe("Pinned fastertransformer_backend commit (40 hex).")
      .meta(unsetMeans("none: required")),
    ftCommit: z
      .string()
      .optional()
      .describe("Pinned FasterTransformer commit (40 hex), passed to CMake as FT_DIR.")
      .meta(unsetMeans("none: required")),
    builderInstanceType: z
      .union([z.string(), z.array(z.string()).min(1)])
      .default("g5.4xlarge")
      .describe(
        "EC2 GPU instance for conversion and gpt_gemm; must have the serving GPU model and enough RAM. With triton-ft:models on several GPU models: a list, one instance per serving GPU model (models on one GPU model share its builder). Refused when every model is served by vLLM: such a stack builds on a CPU instance the plan picks (docs/build.md, The CPU builder).",
      ),
    builderDiskGiB: positiveInt
      .optional()
      .describe("Builder root volume in GiB (a vLLM-only stack's CPU builder's too).")
      .meta(unsetMeans('a size derived from the model (docs/config-reference.md, "Sizing formulas")')),
    builderAmiId: z
      .string()
      .regex(/^ami-[0-9a-f]{8,17}$/, "an AMI id such as ami-0123456789abcdef0")
      .optional()
      .describe("Pin the builder AMI.")
      .meta(unsetMeans("the newest AWS Deep Learning AMI (GPU) matched by filter")),
    sshAllowedCidrs: z
      .array(cidr)
      .default([])
      .describe(
        "CIDRs allowed to reach the builder on SSH (the machine running pulumi up). Required, never 0.0.0.0/0.",
      ),
    sshPublicKey: z
      .string()
      .optional()
      .describe("OpenSSH public key for the builder.")
      .meta(unsetMeans("none: a key pair is generated with @pulumi/tls and kept secret")),
    stopBuilderWhenDone: z
      .boolean()
      .default(false)
      .describe("Stop the builder instance after the server image is baked, so an idle GPU host costs nothing."),
    promoteFrom: promoteFromSchema
      .optional()
      .describe(
        "{stackReference}: build nothing; serve the images (by digest) that the named stack built, after checking each model's model plan (what its image is built from) equals this stack's (docs/delivery.md, Promotion). Only build.tritonVersion, build.backendCommit and build.ftCommit (the pins the images carry) may be set beside it.",
      )
      .meta(unsetMeans("none: the stack builds its own images")),
    tritonWithFtFrom: tritonWithFtFromSchema
      .optional()
      .describe(
        "{stackReference}: take triton_with_ft by digest from the named stack instead of compiling it (no compile host), after checking at preview that it was built from the same pins (build.tritonVersion, build.backendCommit, build.ftCommit), recipe and SM list as this stack plans; everything else is built here (docs/build.md, Adding an environment).",
      )
      .meta(unsetMeans("this stack compiles its own triton_with_ft on its compile host")),
  })
  .strict();

/** A consumer entry: a team name, optionally ':<key generation>' for a rotation. */
const consumerEntry = z
  .string()
  .regex(
    /^[a-z0-9][a-z0-9-]{0,30}(:[a-z0-9-]{1,16})?$/,
    "a team name (lower-case letters, digits, '-'), optionally ':<key generation>' for a rotation",
  );

/**
 * A team's own limits (serving.consumers in its map form), across all gateway
 * pods with a shared store (serving.store), per gateway pod without one:
 * unset ones take the gateway's defaults (600 requests/minute, concurrency
 * max(2, maxBatchSize), no tokens/minute limit, share 1), and the models it
 * may use (unset: every model).
 */
export const teamLimitsSchema = z
  .object({
    requestsPerMinute: positiveInt
      .optional()
      .describe("Requests per minute, across all gateway pods (per pod with serving.store.mode none).")
      .meta(unsetMeans("600 (the gateway's default)")),
    tokensPerMinute: positiveInt
      .optional()
      .describe(
        "Tokens (prompt + max_tokens reserved, settled to the real usage) per minute, across all gateway pods (per pod with serving.store.mode none).",
      )
      .meta(unsetMeans("no limit")),
    maxConcurrent: positiveInt
      .optional()
      .describe("Prompts in flight at once, across all gateway pods (per pod with serving.store.mode none).")
      .meta(unsetMeans("max(2, serving.maxBatchSize)")),
    share: z
      .number()
      .positive()
      .optional()
      .describe("Weight of the team's fair share of the gateway's in-flight cap.")
      .meta(unsetMeans("1")),
    models: z
      .array(z.string().min(1))
      .min(1)
      .optional()
      .describe(
        "The model ids the team's keys may use. Another model answers the team's key as if it did not exist (404 model_not_found).",
      )
      .meta(unsetMeans("every model")),
  })
  .strict();
export type TeamLimits = z.infer<typeof teamLimitsSchema>;

/** The SHA-256 of a key, as `sha256sum` prints it: 64 lower-case hex digits. */
export const KEY_SHA256 = /^[0-9a-f]{64}$/;

/**
 * A map entry of serving.consumers: the team's limits and, for a team that
 * holds its own key, that key's SHA-256 (the key itself never enters the stack).
 */
export const consumerSettingsSchema = teamLimitsSchema
  .extend({
    keySha256: z
      .array(
        z
          .string()
          .regex(
            KEY_SHA256,
            'is not a SHA-256 in hex: 64 lower-case hex digits, as `printf %s "$KEY" | sha256sum` prints them',
          ),
      )
      .min(1)
      .optional()
      .describe(
        "SHA-256 (64 hex) of each key the team holds in its own secret store: no key is generated, the key never enters Pulumi state, apiKeys.<entry> reads `external`. Two hashes during a rotation.",
      )
      .meta(unsetMeans("none: a key is generated (secret output apiKeys.<entry>)")),
  })
  .strict();
export type ConsumerSettings = z.infer<typeof consumerSettingsSchema>;

/**
 * The gateway's shared store (Valkey): where team limits are counted across
 * gateway pods and usage is kept (docs/serving.md "Shared store").
 */
export const storeSchema = z
  .object({
    mode: z
      .enum(["managed", "inCluster", "none"])
      .optional()
      .describe(
        "managed: an ElastiCache Serverless cache (Valkey, TLS, AUTH), cluster.mode create only; inCluster: a Valkey Deployment beside the gateway, with a volume; none: every limit and usage count per gateway pod.",
      )
      .meta(unsetMeans("managed with cluster.mode create, else inCluster")),
    storageGiB: positiveInt
      .optional()
      .describe("inCluster: size of the Valkey volume (its append-only file: counters and usage survive restarts).")
      .meta(unsetMeans("1")),
    storageClassName: z
      .string()
      .regex(K8S_NAMESPACES.label, "a StorageClass name")
      .optional()
      .describe("inCluster: StorageClass of the Valkey volume.")
      .meta(unsetMeans("the cluster's default class")),
  })
  .strict();
export type StoreSettings = z.infer<typeof storeSchema>;

/** vLLM's dtypes this stack passes through (vLLM's own `dtype` engine argument). */
export const VLLM_DTYPES = ["auto", "float16", "bfloat16", "float32"] as const;

/** The vLLM defaults stated once: resolve/vllm.ts applies them, the config reference shows them. */
export const VLLM_DEFAULTS = { gpuMemoryUtilization: 0.9, maxLogprobs: 20, dtype: "auto" } as const;

/**
 * A vLLM model's own settings (engine vllm): `serving.vllm` in the one-model form,
 * `models.<id>.vllm` in the several-models form. Refused on an FT model.
 */
export const vllmSchema = z
  .object({
    gpuMemoryUtilization: z
      .number()
      .gt(0)
      .max(1)
      .optional()
      .describe("Fraction of each GPU's memory vLLM may take (weights, activations and KV cache).")
      .meta(unsetMeans(String(VLLM_DEFAULTS.gpuMemoryUtilization))),
    maxModelLen: positiveInt
      .optional()
      .describe(
        "vLLM's context length (max_model_len): at least maxInputLen + maxOutputLen, at most the model's positions.",
      )
      .meta(unsetMeans("maxInputLen + maxOutputLen")),
    kvCacheGiB: z
      .number()
      .positive()
      .optional()
      .describe(
        "KV-cache memory per GPU in GiB (vLLM's kv_cache_memory_bytes); must hold one sequence of maxModelLen tokens and fit beside the weights.",
      )
      .meta(unsetMeans("GPU memory × gpuMemoryUtilization − weights − activations, per GPU (docs/vllm.md)")),
    maxLogprobs: z
      .number()
      .int()
      .min(0)
      .optional()
      .describe("Most top alternatives per token a request may ask for (OpenAI logprobs / top_logprobs).")
      .meta(unsetMeans(String(VLLM_DEFAULTS.maxLogprobs))),
    dtype: z
      .enum(VLLM_DTYPES)
      .optional()
      .describe(
        "vLLM's dtype: auto (the checkpoint's; fp32 checkpoints served as float16), float16, bfloat16, float32.",
      )
      .meta(unsetMeans(VLLM_DEFAULTS.dtype)),
  })
  .strict();
export type VllmSettings = z.infer<typeof vllmSchema>;

export const servingSchema = z
  .object({
    instanceType: z.string().default("g5.2xlarge").describe("GPU instance type of the serving node group."),
    tensorParallel: positiveInt
      .default(1)
      .describe("Tensor-parallel size: GPUs per Triton pod. Must divide the head count."),
    replicas: z
      .number()
      .int()
      .min(0)
      .default(1)
      .describe(
        "Triton pods, a fixed size. Leave unset with serving.autoscaling. 0 is refused: a model that sleeps needs serving.autoscaling with min 0.",
      ),
    autoscaling: autoscalingSchema
      .optional()
      .describe(
        "Queue-based autoscaling (KEDA + Karpenter): {min, max, target, prometheusUrl, capacityType, capacityReservationIds, fastImagePull; with min 0: idleMinutes, holdQueueDepth, activationTimeoutSeconds}. See docs/scaling.md, Autoscaling and observability and Scale to zero.",
      )
      .meta(unsetMeans("none: a fixed number of pods (replicas)")),
    maxBatchSize: positiveInt.default(8).describe("max_batch_size of every model in the repository."),
    maxInputLen: positiveInt
      .default(512)
      .describe("Longest prompt in tokens; longer prompts are rejected by preprocessing."),
    maxOutputLen: positiveInt.default(256).describe("Largest max_tokens a request may ask for."),
    maxChoiceTokens: positiveInt
      .optional()
      .describe("Cap on n (or best_of) × max_tokens per prompt.")
      .meta(unsetMeans("maxOutputLen × maxBatchSize")),
    loadBalancerScheme: z
      .enum(["internal", "internet-facing"])
      .default("internal")
      .describe("NLB scheme. internet-facing requires allowedCidrs."),
    allowedCidrs: z
      .array(cidr)
      .default([])
      .describe("Client CIDRs allowed through the load balancer (loadBalancerSourceRanges)."),
    idleTimeoutSeconds: z
      .number()
      .int()
      .min(60)
      .max(6000)
      .default(1200)
      .describe("NLB TCP idle timeout, raised from AWS's 350 s default for long generations."),
    namespace: z
      .string()
      .regex(K8S_NAMESPACES.label, "a DNS-1123 label")
      .default("triton")
      .describe("Kubernetes namespace of the Triton workload."),
    serviceMonitor: z
      .boolean()
      .default(false)
      .describe("Create a Prometheus Operator ServiceMonitor for the metrics port 8002 (the cluster needs its CRD)."),
    streaming: z
      .boolean()
      .default(true)
      .describe(
        "FT decoupled mode: tokens stream to the gateway as generated. false serves the ensemble one-to-one (KServe unary calls in-cluster), with no streaming.",
      ),
    consumers: z
      .union([z.array(consumerEntry), z.record(consumerEntry, consumerSettingsSchema)])
      .default([])
      .describe(
        "Teams that call the gateway: a list of names, or a map name -> {requestsPerMinute?, tokensPerMinute?, maxConcurrent?, share?, models?, keySha256?} (limits across all gateway pods with serving.store, per pod without; unset ones take the gateway's defaults; models limits the team to those model ids). Each entry gets a generated API key (secret output apiKeys.<entry>). `team:v2` adds a second key for the same team (rotation: add it, switch, remove the old entry). Required for an internet-facing load balancer.",
      ),
    tlsCertificateArn: z
      .string()
      .regex(/^arn:aws[a-z-]*:acm:[a-z0-9-]+:\d{12}:certificate\/[A-Za-z0-9-]+$/, "an ACM certificate ARN")
      .optional()
      .describe("ACM certificate for the load balancer's TLS listener (443). Required for internet-facing.")
      .meta(unsetMeans("none: the listener is plain HTTP on 80")),
    gatewayReplicas: positiveInt.default(2).describe("Gateway pods (on the system nodes)."),
    store: storeSchema
      .prefault({})
      .describe(
        "The gateway's shared store, where team limits hold across gateway pods and usage is kept: {mode: managed | inCluster | none, storageGiB, storageClassName}. See docs/serving.md, Shared store.",
      ),
    int8Mode: z
      .number()
      .int()
      .min(0)
      .max(2)
      .default(0)
      .describe(
        "FT's int8_mode: 0 fp16; 1 weight-only int8, quantized at load (gpt family only; sm_70 to sm_89, refused on H100/H200). 2 (SmoothQuant) needs a calibrated checkpoint the plan does not produce and is refused.",
      ),
    vllm: vllmSchema
      .optional()
      .describe(
        "A vLLM model's settings (model.engine vllm): {gpuMemoryUtilization, maxModelLen, kvCacheGiB, maxLogprobs, dtype}. See docs/vllm.md.",
      )
      .meta(unsetMeans("none: vLLM's derived defaults (engine vllm); refused with engine ft")),
  })
  .strict();

export const gemmSchema = z
  .object({
    batchSize: positiveInt.optional().describe("gpt_gemm batch size.").meta(unsetMeans("serving.maxBatchSize")),
    beamWidth: positiveInt.default(1).describe("gpt_gemm beam width."),
    maxInputLen: positiveInt.optional().describe("gpt_gemm max input length.").meta(unsetMeans("serving.maxInputLen")),
  })
  .strict();

export const clusterSchema = z
  .object({
    mode: z
      .enum(["create", "kubeconfig", "stackReference"])
      .default("create")
      .describe("create a new EKS cluster, or use an existing one via the `kubeconfig` secret or a stack reference."),
    stackReference: z
      .string()
      .optional()
      .describe("org/project/stack whose outputs hold the cluster (mode stackReference).")
      .meta(unsetMeans("none: required with mode stackReference")),
    kubeconfigOutput: z
      .string()
      .default("kubeconfig")
      .describe("Output name of the kubeconfig in the referenced stack."),
    clusterNameOutput: z
      .string()
      .default("clusterName")
      .describe("Output name of the cluster name in the referenced stack."),
    kubernetesVersion: z
      .string()
      .default(DEFAULT_KUBERNETES_VERSION)
      .describe(
        'EKS control-plane version (mode create), quoted ("1.35"). Refused when EKS does not offer it; a warning in extended support (infra/catalog/eks.ts).',
      ),
    nodeRootVolumeGiB: positiveInt
      .optional()
      .describe("GPU node root volume.")
      .meta(unsetMeans("room for two server images")),
    endpointAccess: z
      .enum(["public", "private"])
      .optional()
      .describe("EKS API endpoint (mode create): private, or public from endpointPublicAccessCidrs only.")
      .meta(
        unsetMeans(
          "private when every build.sshAllowedCidrs entry is RFC 1918 (pulumi up runs inside the VPC or a network joined to it), else public",
        ),
      ),
    endpointPublicAccessCidrs: z
      .array(cidr)
      .optional()
      .describe("CIDRs that may reach a public EKS API endpoint. Never 0.0.0.0/0.")
      .meta(unsetMeans("build.sshAllowedCidrs (where pulumi up runs)")),
  })
  .strict();

export const networkSchema = z
  .object({
    mode: z
      .enum(["create", "existing"])
      .default("create")
      .describe("create a VPC, or use existing VPC and subnet ids."),
    vpcCidr: cidr
      .default("10.42.0.0/16")
      .describe("CIDR of the created VPC, /16 to /20: private subnets get prefix+3, public ones prefix+8 per AZ."),
    availabilityZones: z.number().int().min(2).max(6).default(2).describe("AZs of the created VPC."),
    vpcId: z
      .string()
      .regex(EC2_ID("vpc"), "a VPC id such as vpc-0123456789abcdef0")
      .optional()
      .describe("Existing VPC id (mode existing).")
      .meta(unsetMeans("none: required with mode existing")),
    publicSubnetIds: z
      .array(z.string().regex(EC2_ID("subnet"), "a subnet id such as subnet-0123456789abcdef0"))
      .default([])
      .describe("Existing public subnets for the builder (mode existing)."),
    privateSubnetIds: z
      .array(z.string().regex(EC2_ID("subnet"), "a subnet id such as subnet-0123456789abcdef0"))
      .default([])
      .describe("Existing private subnets for cluster nodes (mode existing)."),
  })
  .strict();

/**
 * The serving keys that belong to one model (its instance, size, limits and
 * streaming). In the `models` form they sit under `models.<id>`, and
 * `triton-ft:serving` keeps only the stack-wide keys (load balancer, namespace,
 * consumers, gateway).
 */
export const MODEL_SERVING_KEYS = [
  "instanceType",
  "tensorParallel",
  "replicas",
  "autoscaling",
  "maxBatchSize",
  "maxInputLen",
  "maxOutputLen",
  "maxChoiceTokens",
  "streaming",
  "int8Mode",
  "vllm",
] as const;
export type ModelServingKey = (typeof MODEL_SERVING_KEYS)[number];

/**
 * A model id: the OpenAI `model` clients send, and the name in its resources
 * (same rule as model.name). The schema takes any text as a key of `models`;
 * infra/config/modelIds.ts applies this rule, so a bad id gets one problem that
 * says what is wrong with it, and its model stays in the stack (no follow-on
 * problems from a model that vanished).
 */
export const MODEL_ID = /^[a-z0-9][a-z0-9-]{0,38}$/;
export const MODEL_ID_MAX_CHARS = 39;

/** The rollback rule's defaults (docs/serving.md, Canary): stated once, shown in the config reference. */
export const CANARY_DEFAULTS = {
  weight: 10,
  replicas: 1,
  maxErrorRate: 0.05,
  maxTtftRatio: 1.5,
  windowSeconds: 300,
  minRequests: 50,
} as const;

/**
 * `models.<id>.canary`: a second build of the model, served beside the stable
 * one to a share of its new requests (issue 36). The keys that may differ from
 * the stable build are the ones that shape the image (source, revisions, the
 * serving limits baked into the model repository) and the serving instance;
 * the rest (family, architecture, tensor parallelism, streaming) is the
 * stable's. The gateway's side of the rule: docs/serving.md, Canary.
 */
export const canarySchema = z
  .object({
    source: modelSourceSchema
      .optional()
      .describe(
        "The canary's weights, as model.source: another revision (or, for the JAX archive, another tokenizerRevision).",
      )
      .meta(unsetMeans("the stable build's source")),
    maxBatchSize: positiveInt
      .optional()
      .describe("The canary's max_batch_size.")
      .meta(unsetMeans("the stable build's")),
    maxInputLen: positiveInt
      .optional()
      .describe("The canary's longest prompt in tokens.")
      .meta(unsetMeans("the stable build's")),
    maxOutputLen: positiveInt
      .optional()
      .describe("The canary's largest max_tokens.")
      .meta(unsetMeans("the stable build's")),
    instanceType: z
      .string()
      .optional()
      .describe("The canary's serving instance type: same GPU model as the stable build's (gpt_gemm tunes for it).")
      .meta(unsetMeans("the stable build's")),
    replicas: positiveInt
      .default(CANARY_DEFAULTS.replicas)
      .describe("The canary's Triton pods, a fixed size on nodes of its own (the canary never autoscales)."),
    weight: z
      .number()
      .int()
      .min(1)
      .max(99)
      .default(CANARY_DEFAULTS.weight)
      .describe("Percent (1..99) of the model's new requests the gateway sends to the canary."),
    rollback: z
      .object({
        maxErrorRate: z
          .number()
          .gt(0)
          .lt(1)
          .default(CANARY_DEFAULTS.maxErrorRate)
          .describe(
            "Roll back when the canary's server-side failures / its finished requests exceed this over the window.",
          ),
        maxTtftRatio: z
          .number()
          .gt(1)
          .default(CANARY_DEFAULTS.maxTtftRatio)
          .describe("Roll back when the canary's p95 time to first token exceeds this multiple of the stable build's."),
        windowSeconds: z
          .number()
          .int()
          .min(60)
          .max(3600)
          .default(CANARY_DEFAULTS.windowSeconds)
          .describe("The window both rules are judged over, seconds."),
        minRequests: positiveInt
          .default(CANARY_DEFAULTS.minRequests)
          .describe("Canary requests finished in the window before either rule is judged."),
      })
      .strict()
      .prefault({})
      .describe("When the gateway stops sending the canary new requests (sticky per canary build)."),
    promote: z
      .boolean()
      .default(false)
      .describe(
        "true: the canary's image (by digest) and settings become the model's stable build, nothing is rebuilt, the canary's pods and nodes go. See docs/serving.md, Canary: config, build and promotion.",
      ),
  })
  .strict();
export type CanaryConfig = z.infer<typeof canarySchema>;

/**
 * One entry of `triton-ft:models`: what `triton-ft:model`, the per-model keys of
 * `triton-ft:serving` and `triton-ft:gemm` say for a one-model stack.
 */
export const modelEntrySchema = modelSchema
  .omit({ name: true })
  .extend(
    servingSchema.pick(Object.fromEntries(MODEL_SERVING_KEYS.map((k) => [k, true])) as { [K in ModelServingKey]: true })
      .shape,
  )
  .extend({
    gemm: gemmSchema.prefault({}).describe("gpt_gemm shape of this model, as triton-ft:gemm."),
    canary: canarySchema
      .optional()
      .describe(
        "A second build served beside this one to a weighted share of its requests, rolled back by the gateway when worse: {source, maxBatchSize, maxInputLen, maxOutputLen, instanceType, replicas, weight, rollback, promote}. See docs/serving.md, Canary.",
      )
      .meta(unsetMeans("none: one build")),
  })
  .strict();
export type ModelEntry = z.infer<typeof modelEntrySchema>;

/** Every key of the `triton-ft:` namespace. Secrets (`hfToken`, `kubeconfig`) are handled apart. */
export const configSchema = z
  .object({
    model: modelSchema
      .optional()
      .describe("The one model of a one-model stack. Exclusive with triton-ft:models.")
      .meta(unsetMeans("none: a stack sets model or models")),
    models: z
      .record(z.string(), modelEntrySchema)
      .optional()
      .describe(
        "Several models behind one endpoint: a map from model id (the OpenAI `model` clients send; lowercase letters, digits and '-', starting with a letter or digit, at most 39 characters) to {preset | family+arch, engine, source, instanceType, tensorParallel, replicas | autoscaling, maxBatchSize, maxInputLen, maxOutputLen, maxChoiceTokens, streaming, int8Mode, vllm, gemm, canary}. Exclusive with triton-ft:model; the first entry keeps a one-model stack's resource names. See docs/serving.md, Several models.",
      )
      .meta(unsetMeans("none: a stack sets model or models")),
    build: buildSchema.prefault({}),
    serving: servingSchema
      .extend({
        canary: canarySchema
          .optional()
          .describe(
            "A one-model stack's canary: a second build of triton-ft:model served beside it to a weighted share of its requests, on GPU nodes of its own (labelled and tainted with its name), rolled back by the gateway when worse. The keys of triton-ft:models.<id>.canary. Exclusive with triton-ft:models (set models.<id>.canary there). See docs/serving.md, Canary.",
          )
          .meta(unsetMeans("none: one build")),
      })
      .prefault({}),
    gemm: gemmSchema.prefault({}),
    cluster: clusterSchema.prefault({}),
    network: networkSchema.prefault({}),
    tags: z.record(z.string(), z.string()).default({}).describe("Extra AWS tags on every resource."),
  })
  .strict();

/** The namespace as parsed: the one-model form (`model`) or the several-models form (`models`). */
export type ParsedConfig = z.infer<typeof configSchema>;

/**
 * One model's view of the stack, in the one-model form every rule, plan and
 * renderer reads: `model`, that model's serving keys and gemm, and its
 * builder (infra/config/models.ts makes one per entry of `models`).
 */
export type StackConfig = Omit<ParsedConfig, "model" | "models" | "build" | "serving"> & {
  model: z.infer<typeof modelSchema>;
  /** The model's serving keys; its canary (serving.canary in the one-model form) is the view's (config/models.ts). */
  serving: Omit<ParsedConfig["serving"], "canary">;
  build: Omit<ParsedConfig["build"], "builderInstanceType"> & { builderInstanceType: string };
};

/** Secret keys: read with getSecret, never stored in plans, printed as [secret]. */
export const SECRET_KEYS = {
  hfToken: "Hugging Face token for gated or private repos (Pulumi secret).",
  kubeconfig: "Kubeconfig of an existing cluster (Pulumi secret, cluster.mode kubeconfig).",
  sshPrivateKey: "Private key matching build.sshPublicKey (Pulumi secret); pulumi up runs the build steps with it.",
} as const;
export type SecretKey = keyof typeof SECRET_KEYS;

/** What each secret's absence means, the secrets' stated defaults (the config reference shows them). */
export const SECRET_UNSET: Readonly<Record<SecretKey, string>> = {
  hfToken: "none: downloads are anonymous",
  kubeconfig: "none: required with cluster.mode kubeconfig",
  sshPrivateKey: "none: required with build.sshPublicKey",
};

/** The subset of facts about secrets that validation may see: presence only (absent = not set). */
export type SecretPresence = Partial<Record<SecretKey, boolean>>;

/** One configuration mistake, phrased for a person: which key, what value, how to fix it. */
export type ConfigProblem = Problem;

/** Records one problem (or warning) under `triton-ft:<key>`. */
export type Add = (key: string, value: unknown, message: string, fix: string) => void;

export const CONFIG_KEYS = ["model", "models", "build", "serving", "gemm", "cluster", "network", "tags"] as const;

/** Every top-level key of the namespace the program reads: the objects above and the secrets. */
export const NAMESPACE_KEYS: readonly string[] = [...CONFIG_KEYS, ...Object.keys(SECRET_KEYS)];

/**
 * Schema-level parse. Collects every problem, not just the first: unknown
 * top-level keys (with a did-you-mean and the `--path` hint), unknown nested
 * keys, wrong types, ranges and formats. Bad values are dropped (their
 * defaults apply) so the semantic rules still run and report in the same
 * pass; `dropped` names them so rules about them are left out.
 *
 * `raw` holds the namespace's keys without the `triton-ft:` prefix; a key
 * whose value the program did not read (unknown keys from the engine) may map
 * to undefined: it is reported by name only.
 */
export function parseConfig(raw: Record<string, unknown>): {
  config?: ParsedConfig;
  problems: ConfigProblem[];
  dropped: string[];
} {
  const keys = Object.keys(raw);
  const problems: ConfigProblem[] = unknownKeyProblems(
    keys,
    { topLevel: NAMESPACE_KEYS, nested: (k) => knownKeysAt(configSchema, [k]) },
    PROJECT,
  );
  const values: Record<string, unknown> = {};
  for (const key of keys) {
    if ((CONFIG_KEYS as readonly string[]).includes(key) && raw[key] !== undefined) values[key] = raw[key];
  }
  const parsed = parseLeniently(configSchema, values, PROJECT);
  return { config: parsed.config, problems: [...problems, ...parsed.problems], dropped: parsed.dropped };
}
