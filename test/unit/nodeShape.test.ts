/**
 * EKS node shapes and the "a serving pod must fit its node" arithmetic shared
 * by validation and the real control-plane suite's fake nodes (test/k8s).
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { GPU_INSTANCES } from "../../infra/catalog/gpus";
import { eksNodeShape, podFitProblems, KERNEL_VISIBLE_MEMORY_FRACTION } from "../../infra/resolve/nodeShape";
import { planWorkload } from "../../infra/resolve/workload";
import { resolveStack } from "../../infra/resolve";
import { gpt2Config, withOverrides } from "../lib/fixtures";

const MiB = 1024 ** 2;
const GiB = 1024 ** 3;

describe("eksNodeShape", () => {
  it("g5.xlarge: capacity from the catalog, allocatable after kube-reserved and the eviction threshold", () => {
    const s = eksNodeShape({ type: "g5.xlarge", vcpus: 4, ramGiB: 16, gpuCount: 1 });
    expect(s.capacity).toEqual({
      cpuMillis: 4000,
      memoryBytes: Math.floor((16 * GiB * KERNEL_VISIBLE_MEMORY_FRACTION) / MiB) * MiB,
      gpus: 1,
      pods: 110,
    });
    // 6 % of core 1, 1 % of core 2, 0.5 % of cores 3-4; 255 MiB + 11 MiB × 110 pods + 100 MiB eviction.
    expect(s.allocatable.cpuMillis).toBe(4000 - 80);
    expect(s.allocatable.memoryBytes).toBe(s.capacity.memoryBytes - (255 + 11 * 110 + 100) * MiB);
    expect(s.allocatable.gpus).toBe(1);
  });

  it("reports every resource a pod set exceeds, with the numbers", () => {
    const s = eksNodeShape({ type: "g5.xlarge", vcpus: 4, ramGiB: 16, gpuCount: 1 });
    expect(podFitProblems(s, { cpuMillis: 100, memoryBytes: 100 * MiB, gpus: 1 }, 1)).toEqual([]);
    const p = podFitProblems(s, { cpuMillis: 4000, memoryBytes: 16 * GiB, gpus: 2 }, 1);
    expect(p.map((x) => x.resource)).toEqual(["cpu", "memory", "nvidia.com/gpu"]);
    expect(p[2]).toEqual({ resource: "nvidia.com/gpu", requested: 2, allocatable: 1, unit: "GPU" });
  });
});

describe("the planned serving pods fit their nodes", () => {
  // Every catalog instance at every tensor-parallel size it can host: the
  // planner's requests, the per-node DaemonSets included, fit allocatable.
  const cases = GPU_INSTANCES.flatMap((i) =>
    [1, 2, 4, 8].filter((tp) => tp <= i.gpuCount && 12 % tp === 0).map((tp) => ({ type: i.type, tp })),
  );
  it.each(cases)("$type at TP $tp", ({ type, tp }) => {
    const raw = withOverrides(gpt2Config(), {
      build: { builderInstanceType: type },
      serving: { instanceType: type, tensorParallel: tp },
    });
    const { stack, problems } = resolveStack(raw, { hfToken: false, kubeconfig: false });
    expect(problems).toEqual([]);
    if (!stack) return;
    const w = planWorkload(stack);
    const shape = eksNodeShape(stack.servingInstance);
    expect(
      podFitProblems(
        shape,
        { cpuMillis: w.cpuRequestMillis, memoryBytes: w.memoryRequestBytes, gpus: tp },
        w.podsPerNode,
      ),
    ).toEqual([]);
  });
});

describe("validation refuses serving pods that exceed a node's allocatable", () => {
  afterEach(() => {
    vi.doUnmock("../../infra/resolve/workload");
    vi.resetModules();
  });

  it("names serving.instanceType, the resource, requested and allocatable", async () => {
    // Inflate the planner's memory request past g5.xlarge's allocatable: the rule must catch it at preview.
    vi.resetModules();
    vi.doMock("../../infra/resolve/workload", async (importOriginal) => {
      const real = await importOriginal<typeof import("../../infra/resolve/workload")>();
      return {
        ...real,
        planWorkload: (s: Parameters<typeof real.planWorkload>[0]) => ({
          ...real.planWorkload(s),
          memoryRequestBytes: 15 * GiB,
        }),
      };
    });
    const { resolveStack: resolve } = await import("../../infra/resolve");
    const { stack, problems } = resolve(gpt2Config(), { hfToken: false, kubeconfig: false });
    expect(stack).toBeUndefined();
    expect(problems).toHaveLength(1);
    expect(problems[0]?.key).toBe("triton-ft:serving.instanceType");
    expect(problems[0]?.value).toBe("g5.xlarge");
    // 15 GiB + EKS's DaemonSets (512 MiB) + the stack's DCGM exporter (128 MiB).
    expect(problems[0]?.message).toMatch(/memory 16000MiB > allocatable \d+MiB.*stay Pending/);
  });
});
