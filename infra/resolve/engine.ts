/**
 * The rules of the engine that serves a model (issue 37): which families each
 * engine serves, which settings apply to which engine (FT's int8Mode and gemm,
 * vLLM's `vllm` block), and whether a vLLM model's memory settings hold: the
 * context within the model's positions, the KV cache positive, holding one
 * sequence of maxModelLen tokens and fitting beside the weights.
 */
import type { GpuInstance } from "../catalog/gpus";
import type { Add, StackConfig } from "../config/schema";
import type { ResolvedModel, ResolvedStack, ResolvedVllm } from "../config/stack";
import { GiB, USABLE_GPU_FRACTION, type GpuMemoryEstimate } from "../model/sizing";
import { kvBytesPerToken, vllmMemory } from "../model/vllmSizing";
import { ENGINE_FAMILIES, type Engine } from "../model/types";

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** Why FT cannot serve a family it does not list (the fix names vLLM). */
const FT_REFUSAL: Record<string, string> = {
  llama:
    "FasterTransformer has no Llama model (no RMSNorm, gated MLP or grouped-query attention; its last commit was October 2023)",
};

/** The family is one the engine serves. */
export function checkEngineFamily(config: StackConfig, model: ResolvedModel, engine: Engine, add: Add): void {
  if (ENGINE_FAMILIES[engine].includes(model.family)) return;
  const reason = FT_REFUSAL[model.family] ?? `engine ${engine} does not serve family ${model.family}`;
  const [key, value] =
    config.model.preset !== undefined ? ["model.preset", model.preset] : ["model.family", model.family];
  add(
    key,
    value,
    `is a ${model.family} model, which engine ${engine} cannot serve: ${reason}`,
    `set model.engine to vllm (vLLM serves ${ENGINE_FAMILIES.vllm.join(", ")}), or choose a model of ${ENGINE_FAMILIES[engine].join(", ")}`,
  );
}

/** vLLM loads Hugging Face checkpoints: the GPT-J JAX archive goes through FT's own converter only. */
export function checkEngineSource(model: ResolvedModel, engine: Engine, add: Add): void {
  if (engine !== "vllm" || model.source.kind !== "archive") return;
  add(
    "model.source.archive",
    { sha256: model.source.sha256 },
    "is the GPT-J JAX slim archive, which only FasterTransformer's JAX converter reads; vLLM loads Hugging Face checkpoints",
    "use {huggingface: {repo: EleutherAI/gpt-j-6b, revision: <40-hex commit>}} with preset gpt-j-6b, or serve the archive with model.engine ft",
  );
}

/** Settings of the other engine: int8Mode and gemm on vLLM, vllm on FT (each as it was written). */
export function checkEngineSettings(raw: Record<string, unknown>, engine: Engine, add: Add): void {
  const serving = isRecord(raw.serving) ? raw.serving : {};
  if (engine === "vllm") {
    if (serving.int8Mode !== undefined)
      add(
        "serving.int8Mode",
        serving.int8Mode,
        "is FasterTransformer's int8 mode and does not apply to a vLLM model (vLLM serves the checkpoint's dtype)",
        "remove serving.int8Mode, or serve the model with model.engine ft",
      );
    const gemm = isRecord(raw.gemm) ? raw.gemm : {};
    for (const [k, v] of Object.entries(gemm))
      add(
        `gemm.${k}`,
        v,
        "is FasterTransformer's gpt_gemm tuning and does not apply to a vLLM model (vLLM has no gemm step)",
        `remove gemm.${k}`,
      );
    return;
  }
  const vllm = isRecord(serving.vllm) ? serving.vllm : serving.vllm === undefined ? {} : { "": serving.vllm };
  for (const [k, v] of Object.entries(vllm))
    add(
      k ? `serving.vllm.${k}` : "serving.vllm",
      v,
      "is a vLLM setting and does not apply to a model served by FasterTransformer (engine ft, the default)",
      k ? `remove serving.vllm.${k}, or set model.engine to vllm` : "remove serving.vllm, or set model.engine to vllm",
    );
}

/**
 * A vLLM model's memory: its context within the model, tensor parallelism over
 * its key/value heads, a KV cache that holds one sequence of maxModelLen tokens
 * and fits beside the weights. Returns the GPU memory estimate the workload
 * sizes its pods from (weights, KV cache, activations as headroom).
 */
export function checkVllm(
  config: StackConfig,
  model: ResolvedModel,
  instance: GpuInstance,
  v: ResolvedVllm,
  add: Add,
): GpuMemoryEstimate {
  const s = config.serving;
  const a = model.arch;
  const given = s.vllm ?? {};
  const needLen = s.maxInputLen + s.maxOutputLen;
  if (v.maxModelLen < needLen)
    add(
      "serving.vllm.maxModelLen",
      v.maxModelLen,
      `is below serving.maxInputLen + serving.maxOutputLen (${needLen}): a request within the limits would not fit`,
      `use at least ${needLen}, or unset it (it defaults to ${needLen})`,
    );
  if (v.maxModelLen > a.maxPositions)
    add(
      given.maxModelLen !== undefined ? "serving.vllm.maxModelLen" : "serving.maxInputLen",
      given.maxModelLen ?? s.maxInputLen,
      `gives a context of ${v.maxModelLen} tokens, beyond the model's ${a.maxPositions} positions`,
      `keep the context (vllm.maxModelLen, default maxInputLen + maxOutputLen) at most ${a.maxPositions}`,
    );
  const kvHeads = a.kvHeads ?? a.heads;
  if (kvHeads % v.tensorParallel !== 0 && v.tensorParallel % kvHeads !== 0)
    add(
      "serving.tensorParallel",
      v.tensorParallel,
      `neither divides nor is a multiple of the model's ${kvHeads} key/value heads: vLLM cannot split the KV cache`,
      `use a tensorParallel that divides ${kvHeads} or that ${kvHeads} divides`,
    );
  const memory = vllmMemory(model.family, a, v);
  const usable = USABLE_GPU_FRACTION * instance.gpuMemoryGiB;
  const kvKey = given.kvCacheGiB !== undefined ? "serving.vllm.kvCacheGiB" : "serving.vllm.gpuMemoryUtilization";
  const kvValue = given.kvCacheGiB ?? v.gpuMemoryUtilization;
  const round = (x: number) => Math.round(x * 100) / 100;
  const weights = round(memory.weightsBytes / GiB);
  const activations = round(memory.activationBytes / GiB);
  const oneSequence = round((kvBytesPerToken(a, v.tensorParallel, v.dtype) * v.maxModelLen) / GiB);
  if (v.kvCacheGiB <= 0)
    add(
      kvKey,
      kvValue,
      `leaves no KV cache on ${instance.type} (${instance.gpuModel}, ${instance.gpuMemoryGiB} GiB): weights ${weights} GiB + activations ${activations} GiB per GPU use the memory vLLM may take`,
      "raise serving.vllm.gpuMemoryUtilization or serving.tensorParallel, lower serving.vllm.maxModelLen / maxBatchSize, or pick a GPU with more memory",
    );
  else if (v.kvCacheGiB < oneSequence)
    add(
      kvKey,
      kvValue,
      `gives a KV cache of ${v.kvCacheGiB} GiB per GPU, which cannot hold one sequence of maxModelLen ${v.maxModelLen} tokens (${oneSequence} GiB)`,
      `give at least ${oneSequence} GiB of KV cache (serving.vllm.kvCacheGiB), or lower serving.vllm.maxModelLen`,
    );
  else if (given.kvCacheGiB !== undefined && weights + activations + given.kvCacheGiB > usable)
    add(
      "serving.vllm.kvCacheGiB",
      given.kvCacheGiB,
      `plus weights ${weights} GiB and activations ${activations} GiB exceeds the ${usable.toFixed(1)} GiB usable on one ${instance.gpuModel}`,
      `use at most ${Math.floor((usable - weights - activations) * 100) / 100}, or unset it (derived from the GPU memory)`,
    );
  const kvCacheBytes = Math.max(0, v.kvCacheGiB) * GiB;
  return {
    weightsBytes: memory.weightsBytes,
    kvCacheBytes,
    headroomBytes: memory.activationBytes,
    totalBytes: memory.weightsBytes + kvCacheBytes + memory.activationBytes,
  };
}

/**
 * On a builder shared by several models, the first model's pipeline prepares the
 * host and builds its triton_with_ft (plan/stack.ts). A vLLM model builds none, so
 * an FT model must not come after a vLLM model on the same GPU model's builder.
 */
export function checkBuilderOwners(models: readonly ResolvedStack[], add: Add): void {
  const firstOn = new Map<string, ResolvedStack>();
  for (const m of models) {
    const gpu = m.builderInstance.gpuModel;
    const owner = firstOn.get(gpu);
    if (!owner) {
      firstOn.set(gpu, m);
      continue;
    }
    if (owner.engine === "vllm" && m.engine === "ft")
      add(
        `models.${m.model.name}`,
        m.model.name,
        `is an FT model listed after vLLM model ${owner.model.name} on the same ${gpu} builder, whose first model builds that builder's triton_with_ft (a vLLM model builds none)`,
        `list ${m.model.name} (and every FT model on ${gpu}) before ${owner.model.name} in triton-ft:models`,
      );
  }
}

/**
 * A stack whose every model is served by vLLM builds on a CPU builder the plan
 * picks (config/models.ts buildsOnCpu, catalog/cpuBuilders.ts): the settings of
 * the GPU builder and of triton_with_ft apply to no step of it. Stack-wide keys,
 * each reported once.
 */
export function checkCpuBuilder(raw: Record<string, unknown>, add: Add): void {
  const build = isRecord(raw.build) ? raw.build : {};
  if (build.builderInstanceType !== undefined)
    add(
      "build.builderInstanceType",
      build.builderInstanceType,
      "is the GPU builder FasterTransformer's conversion and gpt_gemm run on; every model of this stack is served by vLLM, whose fetch and bake need no GPU and run on a CPU builder the plan sizes from the models (docs/build.md, The CPU builder)",
      "remove build.builderInstanceType (set build.builderDiskGiB to size the CPU builder's disk), or serve a model with engine ft",
    );
  if (build.tritonWithFtFrom !== undefined)
    add(
      "build.tritonWithFtFrom",
      build.tritonWithFtFrom,
      "takes a triton_with_ft image, which no vLLM model uses: every model of this stack is served by vLLM",
      "remove build.tritonWithFtFrom",
    );
}
