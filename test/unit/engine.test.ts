import { describe, expect, it } from "vitest";
import type { ConfigProblem, SecretPresence } from "../../infra/config";
import { resolveStack } from "../../infra/resolve";
import { gpt2Config, onVllm, tinyllamaModel, withOverrides, type RawConfig } from "../lib/fixtures";

const noSecrets: SecretPresence = {};

describe("engine (issue 37)", () => {
  it("is ft when unset, with no vLLM settings", () => {
    const { stack, problems } = resolveStack(gpt2Config(), noSecrets);
    expect(problems).toEqual([]);
    expect(stack?.engine).toBe("ft");
    expect(stack?.vllm).toBeUndefined();
  });

  it("resolves a vLLM model's settings with their defaults (one-model form)", () => {
    const cfg = onVllm(withOverrides(gpt2Config(), { model: { engine: "vllm" } }));
    const { stack, problems } = resolveStack(cfg, noSecrets);
    expect(problems).toEqual([]);
    expect(stack?.engine).toBe("vllm");
    expect(stack?.vllm).toMatchObject({
      tensorParallel: 1,
      gpuMemoryUtilization: 0.9,
      maxModelLen: 512 + 256,
      maxNumSeqs: 8,
      maxLogprobs: 20,
      dtype: "auto",
    });
    expect(stack?.vllm?.kvCacheGiB).toBeGreaterThan(0);
  });

  it("takes models.<id>.engine and models.<id>.vllm (several-models form)", () => {
    const base = gpt2Config();
    const { model, serving, ...rest } = base;
    const { instanceType } = serving as { instanceType: string };
    const cfg = {
      ...rest,
      models: {
        a: { ...(model as object), instanceType },
        b: { ...(model as object), instanceType, engine: "vllm", vllm: { maxLogprobs: 5, maxModelLen: 1024 } },
      },
    };
    const { models, problems } = resolveStack(cfg, noSecrets);
    expect(problems).toEqual([]);
    expect(models?.map((m) => m.engine)).toEqual(["ft", "vllm"]);
    expect(models?.[1]?.vllm).toMatchObject({ maxLogprobs: 5, maxModelLen: 1024 });
  });
});

function tinyllama(engine?: string, serving: Record<string, unknown> = {}): RawConfig {
  const cfg = withOverrides(gpt2Config(), {
    model: tinyllamaModel(engine),
    serving: { instanceType: "g5.xlarge", ...serving },
  });
  return engine === "vllm" ? onVllm(cfg) : cfg;
}

const summary = (ps: ConfigProblem[]) => ps.map((p) => `${p.key} = ${JSON.stringify(p.value)}: ${p.message}`);

describe("validation per engine", () => {
  it("refuses the Llama preset on FT, with the reason and the fix", () => {
    const { problems } = resolveStack(tinyllama(), noSecrets);
    expect(summary(problems)).toEqual([
      'triton-ft:model.preset = "tinyllama-1.1b": is a llama model, which engine ft cannot serve: FasterTransformer has no Llama model (no RMSNorm, gated MLP or grouped-query attention; its last commit was October 2023)',
    ]);
    expect(problems[0]?.fix).toMatch(/set model.engine to vllm/);
  });

  it("serves the Llama preset on vLLM, with GQA-aware KV sizing", () => {
    const { stack, problems } = resolveStack(tinyllama("vllm"), noSecrets);
    expect(problems).toEqual([]);
    expect(stack?.model.arch.kvHeads).toBe(4);
    // 22 layers × 4 KV heads × 64 × 2 (K, V) × 2 bytes = 22,528 bytes a token: 768 tokens fit in 0.02 GiB.
    expect(stack?.vllm).toMatchObject({ maxModelLen: 768, maxNumSeqs: 8, tensorParallel: 1 });
    // A10G 24 GiB × 0.9 − 2.05 GiB weights − activations ≈ 17.6 GiB.
    expect(stack?.vllm?.kvCacheGiB).toBeGreaterThan(17);
    expect(stack?.vllm?.kvCacheGiB).toBeLessThan(19);
  });

  it("refuses the other engine's settings, all at once, each as written", () => {
    const vllm = withOverrides(tinyllama("vllm", { int8Mode: 1 }), { gemm: { beamWidth: 2, batchSize: 4 } });
    expect(summary(resolveStack(vllm, noSecrets).problems)).toEqual([
      "triton-ft:serving.int8Mode = 1: is FasterTransformer's int8 mode and does not apply to a vLLM model (vLLM serves the checkpoint's dtype)",
      "triton-ft:gemm.beamWidth = 2: is FasterTransformer's gpt_gemm tuning and does not apply to a vLLM model (vLLM has no gemm step)",
      "triton-ft:gemm.batchSize = 4: is FasterTransformer's gpt_gemm tuning and does not apply to a vLLM model (vLLM has no gemm step)",
    ]);
    const ft = withOverrides(gpt2Config(), { serving: { instanceType: "g5.xlarge", vllm: { maxLogprobs: 5 } } });
    expect(summary(resolveStack(ft, noSecrets).problems)).toEqual([
      "triton-ft:serving.vllm.maxLogprobs = 5: is a vLLM setting and does not apply to a model served by FasterTransformer (engine ft, the default)",
    ]);
  });

  it("refuses the GPT-J JAX archive on vLLM (only FT's converter reads it)", () => {
    const cfg = withOverrides(gpt2Config(), {
      model: {
        preset: "gpt-j-6b-jax",
        engine: "vllm",
        source: { archive: { sha256: "a".repeat(64), tokenizerRevision: "b".repeat(40) } },
      },
      serving: { instanceType: "g5.12xlarge", tensorParallel: 2 },
    });
    delete (cfg.build as Record<string, unknown>).builderInstanceType;
    const problems = resolveStack(cfg, noSecrets).problems.filter((p) => p.key.includes("source"));
    expect(summary(problems)).toEqual([
      `triton-ft:model.source.archive = {"sha256":"${"a".repeat(64)}"}: is the GPT-J JAX slim archive, which only FasterTransformer's JAX converter reads; vLLM loads Hugging Face checkpoints`,
    ]);
  });

  it("names models.<id> keys in the several-models form", () => {
    const base = gpt2Config();
    const { model, ...rest } = base;
    delete (rest as { serving?: unknown }).serving;
    const cfg = {
      ...rest,
      models: {
        a: { ...(model as object), instanceType: "g5.xlarge", vllm: { dtype: "float16" } },
        b: { ...(tinyllama().model as object), instanceType: "g5.xlarge" },
      },
    };
    expect(summary(resolveStack(cfg, noSecrets).problems)).toEqual([
      'triton-ft:models.a.vllm.dtype = "float16": is a vLLM setting and does not apply to a model served by FasterTransformer (engine ft, the default)',
      'triton-ft:models.b.preset = "tinyllama-1.1b": is a llama model, which engine ft cannot serve: FasterTransformer has no Llama model (no RMSNorm, gated MLP or grouped-query attention; its last commit was October 2023)',
    ]);
  });

  it("refuses a context outside the limits and the model", () => {
    const short = tinyllama("vllm", { vllm: { maxModelLen: 512 } });
    expect(summary(resolveStack(short, noSecrets).problems)).toEqual([
      "triton-ft:serving.vllm.maxModelLen = 512: is below serving.maxInputLen + serving.maxOutputLen (768): a request within the limits would not fit",
    ]);
    const long = tinyllama("vllm", { vllm: { maxModelLen: 4096 } });
    expect(summary(resolveStack(long, noSecrets).problems)).toEqual([
      "triton-ft:serving.vllm.maxModelLen = 4096: gives a context of 4096 tokens, beyond the model's 2048 positions",
    ]);
  });

  it("refuses a KV cache that cannot hold one sequence, none at all, or one that does not fit", () => {
    const tiny = tinyllama("vllm", { maxInputLen: 1024, maxOutputLen: 1024, vllm: { kvCacheGiB: 0.01 } });
    expect(summary(resolveStack(tiny, noSecrets).problems)).toEqual([
      "triton-ft:serving.vllm.kvCacheGiB = 0.01: gives a KV cache of 0.01 GiB per GPU, which cannot hold one sequence of maxModelLen 2048 tokens (0.04 GiB)",
    ]);
    const none = tinyllama("vllm", { vllm: { gpuMemoryUtilization: 0.1 } });
    const [noneProblem] = resolveStack(none, noSecrets).problems;
    expect(noneProblem?.key).toBe("triton-ft:serving.vllm.gpuMemoryUtilization");
    expect(noneProblem?.message).toMatch(/^leaves no KV cache on g5.xlarge \(A10G, 24 GiB\): weights 2.05 GiB/);
    const big = tinyllama("vllm", { vllm: { kvCacheGiB: 30 } });
    const [bigProblem] = resolveStack(big, noSecrets).problems;
    expect(bigProblem?.key).toBe("triton-ft:serving.vllm.kvCacheGiB");
    expect(bigProblem?.message).toMatch(
      /^plus weights 2.05 GiB and activations .* GiB exceeds the 22.1 GiB usable on one A10G$/,
    );
  });

  it("accepts a tensor parallelism above the key/value heads (vLLM replicates them)", () => {
    const cfg = tinyllama("vllm", { instanceType: "g5.48xlarge", tensorParallel: 8 });
    // 8 divides 32 query heads and is a multiple of 4 KV heads: accepted (vLLM replicates KV heads).
    expect(resolveStack(cfg, noSecrets).problems).toEqual([]);
  });
});

describe("builders shared by both engines", () => {
  it("refuses an FT model after a vLLM model on one builder (the first model builds its triton_with_ft)", () => {
    const { model, ...rest } = gpt2Config();
    delete (rest as { serving?: unknown }).serving;
    const llama = tinyllama("vllm").model as object;
    const gpt2 = { ...(model as object), instanceType: "g5.xlarge" };
    const vllmFirst = { ...rest, models: { tiny: { ...llama, instanceType: "g5.xlarge" }, gpt2 } };
    const [p] = resolveStack(vllmFirst, noSecrets).problems;
    expect(p?.key).toBe("triton-ft:models.gpt2");
    expect(p?.message).toMatch(/listed after vLLM model tiny on the same A10G builder/);
    const ftFirst = { ...rest, models: { gpt2, tiny: { ...llama, instanceType: "g5.xlarge" } } };
    expect(resolveStack(ftFirst, noSecrets).problems).toEqual([]);
  });
});
