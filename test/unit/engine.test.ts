import { describe, expect, it } from "vitest";
import type { SecretPresence } from "../../infra/config";
import { resolveStack } from "../../infra/resolve";
import { gpt2Config, withOverrides } from "../lib/fixtures";

const noSecrets: SecretPresence = {};

describe("engine (issue 37)", () => {
  it("is ft when unset, with no vLLM settings", () => {
    const { stack, problems } = resolveStack(gpt2Config(), noSecrets);
    expect(problems).toEqual([]);
    expect(stack?.engine).toBe("ft");
    expect(stack?.vllm).toBeUndefined();
  });

  it("resolves a vLLM model's settings with their defaults (one-model form)", () => {
    const cfg = withOverrides(gpt2Config(), { model: { engine: "vllm" } });
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
