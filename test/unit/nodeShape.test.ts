/**
 * EKS node shapes and the "a serving pod must fit its node" arithmetic shared
 * by validation and the real control-plane suite's fake nodes (test/k8s).
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { GPU_INSTANCES } from "../../infra/catalog/gpus";
import { eksNodeShape, podFitProblems, KERNEL_VISIBLE_MEMORY_FRACTION } from "../../infra/resolve/nodeShape";
import {
  GPU_NODE_DAEMONSET_CPU_MILLIS,
  GPU_NODE_DAEMONSET_MEMORY_BYTES,
  nodeDaemonSetRequests,
  planWorkload,
  prePullOnNodes,
} from "../../infra/resolve/workload";
import { PRE_PULL_REQUESTS } from "../../infra/conventions/workload";
import { PROMETHEUS_URL } from "../lib/scalingFixtures";
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
    const ds = nodeDaemonSetRequests(false);
    expect(podFitProblems(s, { cpuMillis: 100, memoryBytes: 100 * MiB, gpus: 1 }, 1, ds)).toEqual([]);
    const p = podFitProblems(s, { cpuMillis: 4000, memoryBytes: 16 * GiB, gpus: 2 }, 1, ds);
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
        nodeDaemonSetRequests(prePullOnNodes(stack)),
      ),
    ).toEqual([]);
  });
});

describe("the triton_with_ft pre-pull's requests on its nodes (render/prePull.ts)", () => {
  const s = eksNodeShape({ type: "g5.xlarge", vcpus: 4, ramGiB: 16, gpuCount: 1 });

  it("count on a node that runs it: a pod at allocatable beside EKS's and DCGM's DaemonSets no longer fits", () => {
    const atLimit = s.allocatable.memoryBytes - GPU_NODE_DAEMONSET_MEMORY_BYTES;
    const pod = { cpuMillis: 100, memoryBytes: atLimit, gpus: 1 };
    expect(podFitProblems(s, pod, 1, nodeDaemonSetRequests(false))).toEqual([]);
    expect(podFitProblems(s, pod, 1, nodeDaemonSetRequests(true)).map((p) => p.resource)).toEqual(["memory"]);
    expect(nodeDaemonSetRequests(true)).toEqual({
      cpuMillis: GPU_NODE_DAEMONSET_CPU_MILLIS + PRE_PULL_REQUESTS.cpuMillis,
      memoryBytes: GPU_NODE_DAEMONSET_MEMORY_BYTES + PRE_PULL_REQUESTS.memoryBytes,
    });
  });

  it("run on an FT model's fixed nodes in a stack that builds; not on Karpenter's, a vLLM model's or a promoted stack's", () => {
    const resolved = (raw: ReturnType<typeof gpt2Config>) => {
      const { stack } = resolveStack(raw, { hfToken: false, kubeconfig: false });
      if (!stack) throw new Error("fixture must resolve");
      return stack;
    };
    const fixed = resolved(gpt2Config());
    expect(prePullOnNodes(fixed)).toBe(true);
    const autoscaled = resolved(
      withOverrides(gpt2Config(), { serving: { autoscaling: { min: 1, max: 2, prometheusUrl: PROMETHEUS_URL } } }),
    );
    expect(prePullOnNodes(autoscaled)).toBe(false);
    expect(
      prePullOnNodes({
        ...fixed,
        config: { ...fixed.config, build: { ...fixed.config.build, promoteFrom: { stackReference: "org/p/dev" } } },
      }),
    ).toBe(false);
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
    // 15 GiB + EKS's DaemonSets (512 MiB) + the stack's DCGM exporter (128 MiB) + the triton_with_ft pre-pull (16 MiB).
    expect(problems[0]?.message).toMatch(/memory 16016MiB > allocatable \d+MiB.*stay Pending/);
  });
});
