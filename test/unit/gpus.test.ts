/**
 * The GPU catalog's facts (infra/catalog/gpus.ts) and the rules that follow
 * from them: every type has every fact, the SM comes from the GPU model, the
 * image's SM list, FT's int8 refusal on sm_90, the builder for an H100 stack,
 * and the capacity warning for reservation-only families.
 */
import { describe, expect, it } from "vitest";
import {
  GPU_FAMILIES,
  GPU_INSTANCES,
  GPU_MODELS,
  findGpuInstance,
  int8ModeUnsupported,
  smList,
  type GpuModel,
} from "../../infra/catalog/gpus";
import { resolveStack } from "../../infra/resolve";
import { stackSmList } from "../../infra/plan/steps";
import { gpt2Config, withOverrides, GPTJ_REVISION, type RawConfig } from "../lib/fixtures";

const SM: Record<GpuModel, number> = {
  A10G: 86,
  "A100-40GB": 80,
  "A100-80GB": 80,
  L4: 89,
  L40S: 89,
  H100: 90,
  H200: 90,
};

const inst = (t: string) => {
  const i = findGpuInstance(t);
  if (!i) throw new Error(`${t} is not in the catalog`);
  return i;
};

describe("GPU catalog facts", () => {
  it("offers every size of the g6, g6e, p5, p5e and p5en families", () => {
    const types = GPU_INSTANCES.map((i) => i.type);
    for (const f of ["g6", "g6e"])
      for (const s of ["xlarge", "2xlarge", "4xlarge", "8xlarge", "16xlarge", "12xlarge", "24xlarge", "48xlarge"])
        expect(types).toContain(`${f}.${s}`);
    expect(types).toEqual(expect.arrayContaining(["p5.4xlarge", "p5.48xlarge", "p5e.48xlarge", "p5en.48xlarge"]));
    expect(new Set(types).size).toBe(types.length);
  });

  it("gives every instance type every fact, consistent with its family and GPU model", () => {
    for (const i of GPU_INSTANCES) {
      expect(i.type.startsWith(`${i.family}.`), i.type).toBe(true);
      expect(GPU_FAMILIES[i.family], i.type).toBeDefined();
      expect(GPU_FAMILIES[i.family]?.source.url, i.type).toMatch(/^https:\/\//);
      expect(i.sm, i.type).toBe(GPU_MODELS[i.gpuModel].sm);
      for (const n of [i.gpuCount, i.gpuMemoryGiB, i.vcpus, i.ramGiB]) expect(n, i.type).toBeGreaterThan(0);
      // NVSwitch only on 8-GPU HGX boards.
      if (i.nvswitch) expect(i.gpuCount, i.type).toBe(8);
    }
    for (const [name, g] of Object.entries(GPU_MODELS)) {
      expect(g.nvidiaSmiName, name).not.toBe("");
      expect(g.karpenterGpuName, name).toMatch(/^[a-z0-9]+$/);
      expect(g.memoryBandwidthGBps, name).toBeGreaterThan(0);
      expect(g.source.url, name).toMatch(/^https:\/\//);
    }
  });

  it("has the SM of each GPU model", () => {
    for (const [m, sm] of Object.entries(SM)) expect(GPU_MODELS[m as GpuModel].sm, m).toBe(sm);
  });

  it("has the published shapes of the new families", () => {
    expect(inst("g6.12xlarge")).toMatchObject({
      gpuModel: "L4",
      gpuCount: 4,
      gpuMemoryGiB: 24,
      vcpus: 48,
      ramGiB: 192,
    });
    expect(inst("g6e.12xlarge")).toMatchObject({ gpuModel: "L40S", gpuCount: 4, gpuMemoryGiB: 48, ramGiB: 384 });
    expect(inst("g6e.xlarge")).toMatchObject({ gpuCount: 1, vcpus: 4, ramGiB: 32 });
    expect(inst("p5.4xlarge")).toMatchObject({
      gpuModel: "H100",
      gpuCount: 1,
      vcpus: 16,
      ramGiB: 256,
      nvswitch: false,
    });
    expect(inst("p5.48xlarge")).toMatchObject({ gpuModel: "H100", gpuCount: 8, ramGiB: 2048, nvswitch: true });
    expect(inst("p5en.48xlarge")).toMatchObject({ gpuModel: "H200", gpuCount: 8, nvswitch: true });
  });

  it("tells an L4 from an L40S by nvidia-smi name", () => {
    // host-ready matches at a word boundary; the names must differ as words.
    expect(GPU_MODELS.L4.nvidiaSmiName).toBe("NVIDIA L4");
    expect(GPU_MODELS.L40S.nvidiaSmiName).toBe("NVIDIA L40S");
  });
});

describe("SM list of triton_with_ft", () => {
  it("is the sorted, unique SMs of the GPUs that run the image", () => {
    expect(smList([inst("g6.xlarge"), inst("g6e.xlarge")])).toEqual([89]);
    expect(smList([inst("p5.4xlarge"), inst("g5.xlarge"), inst("p4d.24xlarge"), inst("g5.2xlarge")])).toEqual([
      80, 86, 90,
    ]);
    expect(stackSmList({ servingInstance: inst("p5.48xlarge"), builderInstance: inst("p5.4xlarge") })).toEqual([90]);
  });
});

describe("FT int8_mode", () => {
  it("is refused on sm_90 with the kernel's reason, allowed on sm_80 to sm_89", () => {
    expect(int8ModeUnsupported(1, 90)).toMatch(/fpA_intB.*sm_70 to sm_89.*sm_90/);
    expect(int8ModeUnsupported(2, 90)).toMatch(/SmoothQuant.*sm_80 to sm_89/);
    expect(int8ModeUnsupported(1, 89)).toBeUndefined();
    expect(int8ModeUnsupported(1, 86)).toBeUndefined();
    expect(int8ModeUnsupported(0, 90)).toBeUndefined();
  });

  const gpt2On = (type: string, int8Mode: number): RawConfig =>
    withOverrides(gpt2Config(), {
      build: { ...gpt2Config().build, builderInstanceType: type },
      serving: { instanceType: type, int8Mode },
    });

  it("refuses serving.int8Mode on an H100 stack at preview, naming the key, value and fix", () => {
    const { problems } = resolveStack(gpt2On("p5.4xlarge", 1), {});
    const p = problems.find((x) => x.key === "triton-ft:serving.int8Mode");
    expect(p?.value).toBe(1);
    expect(p?.message).toMatch(/p5\.4xlarge \(H100, sm_90\).*Arch unsupported/);
    expect(p?.fix).toMatch(/0 \(fp16\)/);
  });

  it("renders int8_mode for a GPT model on an sm_89 GPU, and refuses it for other families", async () => {
    const { stack, problems } = resolveStack(gpt2On("g6.xlarge", 1), {});
    expect(problems).toEqual([]);
    const { repositoryOptions } = await import("../../infra/plan");
    expect(repositoryOptions(stack!).int8Mode).toBe(1);
    const { renderModelRepository } = await import("../../infra/plan/modelRepository");
    const ft = renderModelRepository(repositoryOptions(stack!)).files.find((f) =>
      f.path.includes("fastertransformer/config.pbtxt"),
    );
    expect(ft?.content).toMatch(/key: "int8_mode"\s+value \{\s*string_value: "1"/);
    const gptj = withOverrides(gpt2On("g6.xlarge", 1), {
      model: { preset: "gpt-j-6b", source: { huggingface: { repo: "EleutherAI/gpt-j-6b", revision: GPTJ_REVISION } } },
      build: { ...gpt2Config().build, builderInstanceType: "g6.4xlarge" },
    });
    const refused = resolveStack(gptj, {}).problems.find((x) => x.key === "triton-ft:serving.int8Mode");
    expect(refused?.message).toMatch(/only for model_type GPT/);
  });
});

describe("Karpenter NodePool", () => {
  it("requires the serving family and GPU name besides the type", async () => {
    const { renderNodePool } = await import("../../infra/render/karpenter");
    const { stack } = resolveStack(
      withOverrides(gpt2Config(), {
        build: { ...gpt2Config().build, builderInstanceType: "g6e.xlarge" },
        serving: { instanceType: "g6e.12xlarge", autoscaling: { min: 1, max: 2 } },
      }),
      {},
    );
    const { buildPlan } = await import("../../infra/plan");
    const plan = buildPlan(stack!, "unit", () => "0");
    const pool = renderNodePool({
      name: "t",
      labels: {},
      instance: stack!.servingInstance,
      plan: plan.autoscaling!,
      capacityType: "on-demand",
      capacityReservationIds: [],
      fastImagePull: false,
      rootVolumeGiB: 100,
      taint: { key: "k", value: "v", effect: "NoSchedule" },
      nodeLabels: {},
      refs: { role: "r", subnetIds: [], securityGroupIds: [], tags: {} },
    });
    const req = Object.fromEntries(pool.spec.template.spec.requirements.map((r) => [r.key, r.values]));
    expect(req["karpenter.k8s.aws/instance-family"]).toEqual(["g6e"]);
    expect(req["karpenter.k8s.aws/instance-gpu-name"]).toEqual(["l40s"]);
  });
});

describe("builder and capacity rules with the new GPUs", () => {
  it("accepts a p5.4xlarge builder for an H100 stack and refuses an L40S one", () => {
    const h100 = withOverrides(gpt2Config(), {
      build: { ...gpt2Config().build, builderInstanceType: "p5.4xlarge" },
      serving: { instanceType: "p5.48xlarge" },
    });
    expect(resolveStack(h100, {}).problems).toEqual([]);
    const wrong = withOverrides(h100, { build: { ...h100.build, builderInstanceType: "g6e.4xlarge" } });
    const p = resolveStack(wrong, {}).problems.find((x) => x.key === "triton-ft:build.builderInstanceType");
    expect(p?.message).toMatch(/L40S GPUs but serving uses H100/);
    expect(p?.fix).toContain("p5.4xlarge");
  });

  it("warns when a reservation-only family has no capacity reservation", () => {
    const base = withOverrides(gpt2Config(), {
      build: { ...gpt2Config().build, builderInstanceType: "p5.4xlarge" },
      serving: { instanceType: "p5.4xlarge", replicas: undefined, autoscaling: { min: 1, max: 2 } },
    });
    const w = resolveStack(base, {}).warnings.find(
      (x) => x.key === "triton-ft:serving.autoscaling.capacityReservationIds",
    );
    expect(w?.message).toMatch(/Capacity Blocks/);
    const reserved = withOverrides(base, {
      serving: {
        instanceType: "p5.4xlarge",
        autoscaling: { min: 1, max: 2, capacityReservationIds: ["cr-0123456789abcdef0"] },
      },
    });
    expect(resolveStack(reserved, {}).warnings.map((x) => x.key)).not.toContain(
      "triton-ft:serving.autoscaling.capacityReservationIds",
    );
    const fixed = resolveStack(
      withOverrides(gpt2Config(), {
        build: { ...gpt2Config().build, builderInstanceType: "p5.4xlarge" },
        serving: { instanceType: "p5.4xlarge" },
      }),
      {},
    );
    expect(fixed.warnings.find((x) => x.key === "triton-ft:serving.instanceType")?.message).toMatch(
      /fixed GPU node group/,
    );
    // On-demand families get no such warning.
    const g6 = resolveStack(
      withOverrides(gpt2Config(), {
        build: { ...gpt2Config().build, builderInstanceType: "g6.xlarge" },
        serving: { instanceType: "g6.xlarge" },
      }),
      {},
    );
    expect(g6.warnings.map((x) => x.key)).not.toContain("triton-ft:serving.instanceType");
  });
});
