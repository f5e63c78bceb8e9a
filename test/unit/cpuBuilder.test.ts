/**
 * The CPU builder of a vLLM-only stack (issue 37, item 2): a stack whose every
 * model is served by vLLM builds on a CPU instance the plan picks from
 * catalog/cpuBuilders.ts, sized from the models, with a host check that needs
 * no GPU; any FT model keeps the GPU builders exactly as before. Its cost line,
 * its build run and its critical path name the CPU instance; the GPU builder's
 * settings are refused on such a stack.
 */
import { describe, expect, it } from "vitest";
import { CPU_BUILDERS, cpuBuilderFor } from "../../infra/catalog/cpuBuilders";
import { GiB, builderDiskGiB, vllmBuildRamBytes, vllmBuilderDiskGiB } from "../../infra/model/sizing";
import { MODEL_PRESETS as PRESETS } from "../../infra/model/catalog";
import { resolveStack } from "../../infra/resolve";
import type { ResolvedStack } from "../../infra/config";
import { buildStackPlan } from "../../infra/plan/stack";
import { estimateCost } from "../../infra/cost";
import { costInput } from "../../infra/cost/fromStack";
import { PRICE_TABLE } from "../../infra/catalog/prices";
import { planOf, stackPlanOf } from "../lib/plan";
import { gpt2Config, onVllm, tinyllamaModel, withOverrides, type RawConfig } from "../lib/fixtures";
import { stackFileConfig } from "../lib/modelsForm";

const TODAY = "2026-11-29";
const SEED_VLLM_STACK = "test/stacks/models/Pulumi.seed-vllm.yaml";
const noSecrets = { hfToken: false, kubeconfig: false };
const hasher = (p: string) => `h:${p}`;

function resolved(cfg: Record<string, unknown>): ResolvedStack[] {
  const { models, problems } = resolveStack(cfg, noSecrets, { today: TODAY });
  if (!models) throw new Error(JSON.stringify(problems, null, 2));
  return models;
}
const conf = (steps: ReturnType<typeof planOf>["buildSteps"], id: string) =>
  new Map(steps.find((s) => s.id === id)?.config ?? []);

/** GPT-2 (FT, the fixtures' model) beside TinyLlama (vLLM) in the models form, both on g5.xlarge. */
function mixed(): RawConfig {
  const { model, ...rest } = gpt2Config();
  delete (rest as { serving?: unknown }).serving;
  return {
    ...rest,
    models: {
      gpt2: { ...(model as object), instanceType: "g5.xlarge" },
      tiny: { ...tinyllamaModel("vllm"), instanceType: "g5.xlarge" },
    },
  };
}

const tinyOnVllm = () => onVllm(withOverrides(gpt2Config(), { model: tinyllamaModel("vllm") }));

describe("the builder a stack gets", () => {
  it("every model on vLLM: one CPU builder from the catalog, with the CPU host check and no GPU expected", () => {
    const [stack] = resolved(tinyOnVllm());
    if (!stack) throw new Error("no stack");
    expect(stack.cpuBuilder).toBe(true);
    const sp = stackPlanOf(stack);
    expect(sp.builders).toHaveLength(1);
    const [b] = sp.builders;
    expect(b?.name).toBe("builder");
    expect(b?.instanceType).toBe("m7i.xlarge");
    expect(b?.cpu).toEqual({ vcpus: 4, memoryGiB: 16 });
    expect(b?.smList).toEqual([]);
    const plan = sp.models[0]?.plan;
    if (!plan) throw new Error("no plan");
    expect(plan.build.builderInstanceType).toBe("m7i.xlarge");
    expect(plan.build.builderDiskGiB).toBe(b?.diskGiB);
    const hostReady = plan.buildSteps.find((s) => s.id === "host-ready");
    expect(hostReady?.script).toBe("scripts/remote/cpu-host-ready.sh");
    const c = conf(plan.buildSteps, "host-ready");
    expect([...c.keys()].filter((k) => k.startsWith("EXPECTED_GPU"))).toEqual([]);
    // A model planned on its own (a stack of one) gets the same CPU builder and host check.
    expect(planOf(stack).buildSteps.find((s) => s.id === "host-ready")?.script).toBe(
      "scripts/remote/cpu-host-ready.sh",
    );
  });

  it("any FT model: the GPU builder as before, a vLLM model beside it baking there (host-ready.sh, the GPU expected)", () => {
    const models = resolved(mixed());
    expect(models.map((m) => m.cpuBuilder)).toEqual([undefined, undefined]);
    const sp = buildStackPlan(models, "test", hasher);
    expect(sp.builders.map((b) => [b.name, b.instanceType, b.cpu])).toEqual([["builder", "g5.xlarge", undefined]]);
    const hostReady = sp.models[0]?.plan.buildSteps.find((s) => s.id === "host-ready");
    expect(hostReady?.script).toBe("scripts/remote/host-ready.sh");
    expect(conf(sp.models[0]?.plan.buildSteps ?? [], "host-ready").get("EXPECTED_GPU_NAME")).toBe("A10G");
    expect(sp.models[1]?.plan.build.builderInstanceType).toBe("g5.xlarge");
  });

  it("keeps the server image's fingerprint a GPU builder gives (a promoted stack, which builds nothing, compares it)", () => {
    const [stack] = resolved(tinyOnVllm());
    if (!stack) throw new Error("no stack");
    const { cpuBuilder, ...onGpu } = stack;
    expect(cpuBuilder).toBe(true);
    const cpu = planOf(stack);
    const gpu = planOf(onGpu);
    expect(cpu.buildSteps.find((s) => s.id === "host-ready")?.script).not.toBe(
      gpu.buildSteps.find((s) => s.id === "host-ready")?.script,
    );
    expect(cpu.image.fingerprint).toBe(gpu.image.fingerprint);
  });

  it("an FT-only stack's plan has no CPU builder", () => {
    const [stack] = resolved(gpt2Config());
    if (!stack) throw new Error("no stack");
    expect(stack.cpuBuilder).toBeUndefined();
    expect(stackPlanOf(stack).builders[0]?.cpu).toBeUndefined();
  });

  it("models on different GPU models share the one CPU builder, its disk holding them all", () => {
    const raw = stackFileConfig(SEED_VLLM_STACK);
    const models = resolved(raw);
    const sp = buildStackPlan(models, "seed-vllm", hasher);
    expect(new Set(models.map((m) => m.servingInstance.gpuModel))).toEqual(new Set(["A10G", "L4"]));
    expect(sp.builders.map((b) => [b.name, b.instanceType, b.models])).toEqual([
      ["builder", "m7i.xlarge", ["tinyllama", "gpt2"]],
    ]);
    expect(sp.builders[0]?.diskGiB).toBe(vllmBuilderDiskGiB(models.map((m) => m.model)));
    expect(sp.builders[0]?.diskGiB).toBeGreaterThan(vllmBuilderDiskGiB([models[0]?.model ?? models[1]!.model]));
    // The second model runs its own steps only; the first owns the host check.
    expect(sp.models.map((m) => m.plan.buildSteps.map((s) => s.id))).toEqual([
      ["host-ready", "fetch", "bake", "gateway-image"],
      ["fetch", "bake"],
    ]);
  });
});

describe("sizing the CPU builder", () => {
  it("takes the smallest catalog entry with the memory the build needs: the CodeGen re-layout's, else the base", () => {
    const byName = (name: string) => {
      const p = PRESETS.find((x) => x.name === name);
      if (!p) throw new Error(`no preset ${name}`);
      return p;
    };
    const gptj = byName("gpt-j-6b");
    expect(cpuBuilderFor(vllmBuildRamBytes(gptj.family, gptj.arch)).type).toBe("m7i.xlarge");
    const codegen16 = byName("codegen-16b-mono");
    // 16.1 B parameters × (29.2 GiB / 7.06 B, measured) × 1.25 ≈ 83 GiB: the 128 GiB m7i.8xlarge.
    expect(vllmBuildRamBytes(codegen16.family, codegen16.arch) / GiB).toBeGreaterThan(64);
    expect(cpuBuilderFor(vllmBuildRamBytes(codegen16.family, codegen16.arch)).type).toBe("m7i.8xlarge");
  });

  it("fits every preset's build in the catalog's largest entry", () => {
    const largest = CPU_BUILDERS[CPU_BUILDERS.length - 1];
    for (const p of PRESETS)
      expect(vllmBuildRamBytes(p.family, p.arch), p.name).toBeLessThanOrEqual((largest?.memoryGiB ?? 0) * GiB);
  });

  it("sizes its disk for the checkpoint and the image, below the GPU builder's (no triton_with_ft, no conversion)", () => {
    for (const p of PRESETS) {
      const cpu = vllmBuilderDiskGiB([p]);
      expect(cpu, p.name).toBeLessThan(builderDiskGiB(p.family, p.arch));
      expect(cpu, p.name).toBeGreaterThan(40);
    }
  });

  it("checks build.builderDiskGiB against the CPU builder's need, and uses it", () => {
    const [stack] = resolved(tinyOnVllm());
    const need = vllmBuilderDiskGiB([stack!.model]);
    const small = withOverrides(tinyOnVllm(), { build: { builderDiskGiB: need - 1 } });
    expect(resolveStack(small, noSecrets, { today: TODAY }).problems).toEqual([
      {
        key: "triton-ft:build.builderDiskGiB",
        value: need - 1,
        message: `is below the ${need} GiB this model needs on the CPU builder`,
        fix: `use at least ${need}, or unset it`,
      },
    ]);
    const [big] = resolved(withOverrides(tinyOnVllm(), { build: { builderDiskGiB: need + 50 } }));
    expect(stackPlanOf(big!).builders[0]?.diskGiB).toBe(need + 50);
  });
});

describe("the GPU builder's settings on a CPU-built stack", () => {
  it("refuses build.builderInstanceType and build.tritonWithFtFrom, with key, value and fix", () => {
    const cfg = withOverrides(gpt2Config(), {
      model: tinyllamaModel("vllm"),
      build: { tritonWithFtFrom: { stackReference: "org/triton-ft/dev" } },
    });
    const problems = resolveStack(cfg, noSecrets, { today: TODAY }).problems;
    expect(problems.map((p) => [p.key, p.value])).toEqual([
      ["triton-ft:build.builderInstanceType", "g5.xlarge"],
      ["triton-ft:build.tritonWithFtFrom", { stackReference: "org/triton-ft/dev" }],
    ]);
    expect(problems[0]?.message).toMatch(/every model of this stack is served by vLLM/);
    expect(problems[0]?.fix).toMatch(/^remove build\.builderInstanceType/);
    expect(problems[1]?.fix).toBe("remove build.tritonWithFtFrom");
  });

  it("refuses a builder list once, without the GPU-matching problems of the list", () => {
    const { model, ...rest } = gpt2Config();
    delete (rest as { serving?: unknown }).serving;
    const cfg = {
      ...rest,
      build: { ...rest.build, builderInstanceType: ["g5.4xlarge", "g6.4xlarge"] },
      models: {
        a: { ...tinyllamaModel("vllm"), instanceType: "g5.xlarge" },
        b: { ...(model as object), engine: "vllm", instanceType: "g6e.xlarge" },
      },
    };
    const problems = resolveStack(cfg, noSecrets, { today: TODAY }).problems;
    expect(problems.map((p) => p.key)).toEqual(["triton-ft:build.builderInstanceType"]);
  });

  it("accepts build.builderInstanceType on a stack with an FT model", () => {
    expect(resolveStack(mixed(), noSecrets, { today: TODAY }).problems).toEqual([]);
  });
});

/** The committed vLLM-only stack's estimate, as synth computes it. */
function seedVllmReport(): ReturnType<typeof estimateCost> {
  const raw = stackFileConfig(SEED_VLLM_STACK);
  const { stack, models, problems } = resolveStack(raw, noSecrets, { stackName: "seed-vllm", today: TODAY });
  if (!stack || !models) throw new Error(JSON.stringify(problems, null, 2));
  const sp = buildStackPlan(models, "seed-vllm", hasher);
  return estimateCost(costInput(stack, models, sp, { stackName: "seed-vllm", region: "us-east-1", today: TODAY }));
}

describe("the CPU builder's cost and time", () => {
  const m7i = PRICE_TABLE.regions["us-east-1"]?.ec2OnDemandHourly.usd["m7i.xlarge"];

  it("prices the CPU builder at its own instance type: a CPU builder line, no GPU builder", () => {
    const r = seedVllmReport();
    const builderLines = r.items.filter((i) => i.id.startsWith("builder-"));
    expect(builderLines.length).toBeGreaterThan(0);
    for (const l of builderLines) expect(l.label).toMatch(/^CPU builder \(m7i\.xlarge\): /);
    expect(r.items.some((i) => /\bg5\.4xlarge\b|compile host/.test(i.label))).toBe(false);
    expect(m7i).toBe(0.2016);
    expect(r.buildRuns).toHaveLength(1);
    const [run] = r.buildRuns;
    expect(run?.instanceType).toBe("m7i.xlarge");
    expect(run?.usd).toBeCloseTo((run?.hours ?? 0) * (m7i ?? NaN), 10);
  });

  it("starts each model's critical path with the CPU builder's launch, and has no compile or GPU step on it", () => {
    for (const m of seedVllmReport().models) {
      const steps = m.criticalPath.map((s) => s.step);
      expect(steps[0], m.id).toBe("CPU builder launch");
      expect(steps, m.id).not.toContain("triton-with-ft");
      expect(steps, m.id).not.toContain("gemm");
      expect(steps, m.id).not.toContain("compile-host ready");
    }
  });
});
