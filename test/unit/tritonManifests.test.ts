import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { Namespace } from "kubernetes-models/v1/Namespace";
import { Service } from "kubernetes-models/v1/Service";
import { Deployment } from "kubernetes-models/apps/v1/Deployment";
import { PodDisruptionBudget } from "kubernetes-models/policy/v1/PodDisruptionBudget";
import { ObjectMeta } from "@kubernetes-models/apimachinery/apis/meta/v1/ObjectMeta";
import { LabelSelector } from "@kubernetes-models/apimachinery/apis/meta/v1/LabelSelector";
import { resolveStack } from "../../infra/resolve";
import type { ResolvedStack } from "../../infra/config/stack";
import {
  manifestFiles,
  renderManifests,
  type RenderInput,
  type TritonManifests,
} from "../../infra/render/tritonManifests";
import {
  eksReservedCpuMillis,
  eksReservedMemoryBytes,
  nodeDaemonSetRequests,
  planWorkload,
  shmSize,
  type WorkloadPlan,
} from "../../infra/resolve/workload";
import { GPU_MODELS } from "../../infra/catalog/gpus";
import { GiB, TRITON_WITH_FT_IMAGE_BYTES, fp16WeightBytes } from "../../infra/model/sizing";
import { GPTJ_REVISION, gpt2Config, withOverrides, type RawConfig } from "../lib/fixtures";
import { planOf } from "../lib/plan";

const DIGEST = `123456789012.dkr.ecr.us-east-1.amazonaws.com/triton-ft-test/server@sha256:${"ab".repeat(32)}`;
const LAUNCH = {
  argv: ["mpirun", "-n", "1", "/opt/tritonserver/bin/tritonserver", "--model-repository=/models"],
  env: { CUDA_VISIBLE_DEVICES: "0" },
  workingDir: "/workspace",
};
const NO_SECRETS = { hfToken: false, kubeconfig: false };

function resolved(cfg: RawConfig): ResolvedStack {
  const { stack, problems } = resolveStack(cfg, NO_SECRETS);
  if (!stack) throw new Error(JSON.stringify(problems));
  return stack;
}

/** GPT-J 6B at TP 2 on g5.12xlarge (4 GPUs): two pods per node. */
function gptjConfig(): RawConfig {
  return withOverrides(gpt2Config(), {
    model: { preset: "gpt-j-6b", source: { huggingface: { repo: "EleutherAI/gpt-j-6b", revision: GPTJ_REVISION } } },
    build: { builderInstanceType: "g5.4xlarge" },
    serving: { instanceType: "g5.12xlarge", tensorParallel: 2, replicas: 3, maxInputLen: 1024, maxOutputLen: 512 },
  });
}

/** The manifests of a stack (and the workload numbers they were rendered from). */
function render(cfg: RawConfig, extra: Partial<RenderInput> = {}): TritonManifests & { plan: WorkloadPlan } {
  const s = resolved(cfg);
  const input: RenderInput = {
    // The plan's workload input; build-step hashes play no part, so a stand-in hasher.
    ...planOf(s, (p) => `h:${p}`).renderInputs.triton,
    launch: LAUNCH,
    image: DIGEST,
    serviceMonitor: false,
    ...extra,
  };
  return { ...renderManifests(input), plan: input.workload };
}

function container(m: TritonManifests) {
  const c = m.deployment.spec?.template.spec?.containers[0];
  if (!c) throw new Error("no container");
  return c;
}

describe("workload plan", () => {
  it("derives pods per node, nodes with a surge slot, and requests from the instance", () => {
    const s = resolved(gptjConfig());
    const p = planWorkload(s);
    expect(p.podsPerNode).toBe(2);
    // 3 replicas + 1 surge pod at 2 per node.
    expect(p.gpuNodes).toBe(2);
    // Beside EKS's DaemonSets (250m, 512 MiB), the DCGM exporter (100m, 128 MiB) and, on this FT model's
    // fixed nodes, the triton_with_ft pre-pull (1m, 16 MiB).
    const perNode = nodeDaemonSetRequests(true);
    expect(perNode).toEqual({ cpuMillis: 250 + 100 + 1, memoryBytes: (512 + 128 + 16) * 1024 ** 2 });
    const cpuFree = 48_000 - eksReservedCpuMillis(48) - perNode.cpuMillis;
    expect(p.cpuRequestMillis).toBe(Math.floor(cpuFree / 2 / 100) * 100 - 100);
    expect(p.cpuRequestMillis).toBe(23_600);
    const memFree = (192 * GiB - eksReservedMemoryBytes(48) - perNode.memoryBytes) * 0.9;
    expect(p.memoryRequestBytes).toBeLessThanOrEqual(memFree / 2);
    expect(p.memoryRequestBytes).toBeGreaterThan(memFree / 2 - 256 * 1024 ** 2);
  });

  it("computes EKS's kube-reserved CPU tiers", () => {
    expect(eksReservedCpuMillis(1)).toBe(60);
    expect(eksReservedCpuMillis(4)).toBe(80);
    expect(eksReservedCpuMillis(8)).toBe(90);
  });

  it("sizes /dev/shm for NCCL only with tensor parallelism", () => {
    const tp1 = shmSize(resolved(gpt2Config()));
    const tp2 = shmSize(resolved(gptjConfig()));
    expect(tp1).toBe(256 * 1024 ** 2);
    // 2 ranks × 2 neighbours × 32 channels × 4 MiB = 512 MiB plus the Python arenas.
    expect(tp2).toBe(768 * 1024 ** 2);
  });

  it("derives the startup budget from the weights and the rollout budget from image pull plus load", () => {
    const small = planWorkload(resolved(gpt2Config()));
    const s = resolved(gptjConfig());
    const big = planWorkload(s);
    const weights = fp16WeightBytes(s.model.family, s.model.arch);
    expect(big.loadSeconds).toBe(Math.ceil(weights / (125 * 1024 ** 2) + 60));
    expect(big.startupBudgetSeconds).toBe(2 * big.loadSeconds);
    expect(big.pullSeconds).toBe(Math.ceil((TRITON_WITH_FT_IMAGE_BYTES + weights) / (50 * 1024 ** 2)));
    expect(big.startupBudgetSeconds).toBeGreaterThan(small.startupBudgetSeconds);
    expect(big.podRolloutSeconds).toBe(big.pullSeconds + big.startupBudgetSeconds + 180);
    expect(big.timeouts.deploymentCreateSeconds).toBe(big.podRolloutSeconds);
    expect(big.timeouts.deploymentUpdateSeconds).toBe(3 * (big.podRolloutSeconds + big.terminationGracePeriodSeconds));
  });

  it("derives the drain from decode bandwidth and the longest generation", () => {
    const s = resolved(gptjConfig());
    const p = planWorkload(s);
    const step = (s.memory.weightsBytes + s.memory.kvCacheBytes) / (GPU_MODELS.A10G.memoryBandwidthGBps * 1e9 * 0.5);
    expect(p.drainSeconds).toBe(Math.max(10, Math.ceil(2 * 512 * step)));
    expect(p.terminationGracePeriodSeconds).toBe(p.preStopSeconds + p.drainSeconds + 15);
    expect(p.deregistrationDelaySeconds).toBe(p.terminationGracePeriodSeconds);
  });
});

describe("rendered workload", () => {
  it("runs the server image by digest with the launch plan", () => {
    const c = container(render(gpt2Config()));
    expect(c.image).toBe(DIGEST);
    // Triton's own drain after SIGTERM is the derived drain time, inside the grace period.
    const plan = planWorkload(resolved(gpt2Config()));
    expect(c.command).toEqual([...LAUNCH.argv, `--exit-timeout-secs=${plan.drainSeconds}`]);
    expect(plan.drainSeconds).toBeLessThan(plan.terminationGracePeriodSeconds);
    expect(c.workingDir).toBe("/workspace");
    // The launch env plus the scratch locations of the read-only root filesystem.
    expect(c.env).toEqual([
      { name: "CUDA_CACHE_PATH", value: "/tmp/cuda-cache" },
      { name: "CUDA_VISIBLE_DEVICES", value: "0" },
      { name: "HF_HOME", value: "/tmp/huggingface" },
      { name: "HOME", value: "/tmp" },
      { name: "PYTHONDONTWRITEBYTECODE", value: "1" },
      { name: "TMPDIR", value: "/tmp" },
    ]);
    expect(c.ports?.map((p) => [p.name, p.containerPort])).toEqual([
      ["http", 8000],
      ["grpc", 8001],
      ["metrics", 8002],
    ]);
  });

  it("refuses an image that is not pinned by digest", () => {
    expect(() =>
      render(gpt2Config(), { image: "123456789012.dkr.ecr.us-east-1.amazonaws.com/x/server:latest" }),
    ).toThrow(/must be pinned by digest/);
  });

  it("requests TP GPUs, CPU and memory from the plan, memory limit equal to request", () => {
    const m = render(gptjConfig());
    const r = container(m).resources;
    expect(r?.requests?.["nvidia.com/gpu"]).toBe("2");
    expect(r?.limits?.["nvidia.com/gpu"]).toBe("2");
    expect(r?.requests?.cpu).toBe("23600m");
    expect(r?.requests?.memory).toBe(`${m.plan.memoryRequestBytes / 1024 ** 2}Mi`);
    expect(r?.limits?.memory).toBe(r?.requests?.memory);
    expect(r?.limits?.cpu).toBeUndefined();
  });

  it("mounts a sized memory-backed /dev/shm", () => {
    const m = render(gptjConfig());
    expect(container(m).volumeMounts).toEqual([
      { name: "dshm", mountPath: "/dev/shm" },
      { name: "tmp", mountPath: "/tmp" },
    ]);
    expect(m.deployment.spec?.template.spec?.volumes).toEqual([
      { name: "dshm", emptyDir: { medium: "Memory", sizeLimit: "768Mi" } },
      { name: "tmp", emptyDir: { sizeLimit: "1Gi" } },
    ]);
  });

  it("runs under the restricted Pod Security profile as the image's triton-server user", () => {
    const m = render(gpt2Config());
    const pod = m.deployment.spec?.template.spec;
    expect(pod?.automountServiceAccountToken).toBe(false);
    expect(pod?.securityContext).toEqual({
      runAsNonRoot: true,
      runAsUser: 1000,
      runAsGroup: 1000,
      seccompProfile: { type: "RuntimeDefault" },
    });
    expect(container(m).securityContext).toEqual({
      runAsNonRoot: true,
      allowPrivilegeEscalation: false,
      privileged: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ["ALL"] },
    });
    expect(container(m).command).not.toContain("--allow-run-as-root");
    // Deliberate scanner findings carry their reason on the Deployment.
    const ann = m.deployment.metadata?.annotations ?? {};
    expect(Object.values(ann).map((v) => v.split("=")[0])).toEqual(["CKV_K8S_11", "CKV_K8S_40"]);
    for (const v of Object.values(ann)) expect(v.split("=")[1]?.length).toBeGreaterThan(40);
  });

  it("probes startup and readiness on /v2/health/ready and liveness on /v2/health/live", () => {
    const m = render(gptjConfig());
    const c = container(m);
    expect(c.startupProbe?.httpGet).toEqual({ path: "/v2/health/ready", port: "http" });
    const budget = (c.startupProbe?.periodSeconds ?? 0) * (c.startupProbe?.failureThreshold ?? 0);
    expect(budget).toBeGreaterThanOrEqual(m.plan.startupBudgetSeconds);
    expect(budget).toBeLessThan(m.plan.startupBudgetSeconds + 10);
    expect(c.readinessProbe?.httpGet?.path).toBe("/v2/health/ready");
    expect(c.livenessProbe?.httpGet?.path).toBe("/v2/health/live");
  });

  it("rolls out without losing capacity and terminates gracefully", () => {
    const m = render(gptjConfig());
    const spec = m.deployment.spec;
    expect(spec?.replicas).toBe(3);
    expect(spec?.strategy).toEqual({ type: "RollingUpdate", rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } });
    expect(spec?.progressDeadlineSeconds).toBe(m.plan.podRolloutSeconds);
    expect(spec?.template.spec?.terminationGracePeriodSeconds).toBe(m.plan.terminationGracePeriodSeconds);
    expect(container(m).lifecycle?.preStop?.exec?.command).toEqual(["sleep", String(m.plan.preStopSeconds)]);
  });

  it("tolerates the GPU taint and requires the serving instance type", () => {
    const pod = render(gptjConfig()).deployment.spec?.template.spec;
    expect(pod?.tolerations).toEqual([{ key: "nvidia.com/gpu", operator: "Exists", effect: "NoSchedule" }]);
    expect(pod?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms).toEqual([
      { matchExpressions: [{ key: "node.kubernetes.io/instance-type", operator: "In", values: ["g5.12xlarge"] }] },
    ]);
  });

  it("labels everything with the Kubernetes recommended labels and selects on the stable ones", () => {
    const m = render(gpt2Config());
    const expected = {
      "app.kubernetes.io/name": "tritonserver",
      "app.kubernetes.io/instance": "gpt2-test",
      "app.kubernetes.io/version": "23.05",
      "app.kubernetes.io/component": "inference-server",
      "app.kubernetes.io/part-of": "triton-ft",
      "app.kubernetes.io/managed-by": "pulumi",
    };
    for (const obj of [m.deployment, m.service, m.podDisruptionBudget]) expect(obj.metadata?.labels).toEqual(expected);
    expect(m.deployment.spec?.template.metadata?.labels).toEqual(expected);
    expect(m.metricsService.metadata?.labels).toEqual({ ...expected, "app.kubernetes.io/component": "metrics" });
    const selector = { "app.kubernetes.io/name": "tritonserver", "app.kubernetes.io/instance": "gpt2-test" };
    expect(m.deployment.spec?.selector.matchLabels).toEqual(selector);
    expect(m.service.spec?.selector).toEqual(selector);
    expect(m.namespace.metadata?.labels?.["elbv2.k8s.aws/pod-readiness-gate-inject"]).toBe("enabled");
    expect(m.namespace.metadata?.labels).toMatchObject({
      "pod-security.kubernetes.io/enforce": "restricted",
      "pod-security.kubernetes.io/enforce-version": "latest",
    });
  });

  it("puts only the metrics port on a ClusterIP Service", () => {
    const m = render(gpt2Config());
    expect(m.metricsService.spec?.type).toBe("ClusterIP");
    expect(m.metricsService.spec?.ports).toEqual([
      { name: "metrics", port: 8002, targetPort: "metrics", protocol: "TCP" },
    ]);
  });

  it("protects capacity with a PodDisruptionBudget", () => {
    expect(render(gptjConfig()).podDisruptionBudget.spec).toMatchObject({
      minAvailable: 2,
      unhealthyPodEvictionPolicy: "AlwaysAllow",
    });
    expect(render(gpt2Config()).podDisruptionBudget.spec?.minAvailable).toBe(1);
  });

  it("renders a ServiceMonitor for the metrics Service only when asked", () => {
    expect(render(gpt2Config()).serviceMonitor).toBeUndefined();
    const m = render(gpt2Config(), { serviceMonitor: true });
    expect(m.serviceMonitor?.spec.endpoints).toEqual([
      { port: "metrics", path: "/metrics", interval: "15s", scrapeTimeout: "10s" },
    ]);
    const metricsLabels = m.metricsService.metadata?.labels ?? {};
    for (const [k, v] of Object.entries(m.serviceMonitor?.spec.selector.matchLabels ?? {}))
      expect(metricsLabels[k]).toBe(v);
    // The NLB Service must not match: it carries no metrics port.
    expect(m.service.metadata?.labels?.["app.kubernetes.io/component"]).not.toBe("metrics");
  });
});

describe("Triton Service", () => {
  it("is ClusterIP only: HTTP and gRPC in-cluster, no load balancer (the gateway is what the NLB exposes)", () => {
    const m = render(gpt2Config());
    expect(m.service.spec?.type).toBe("ClusterIP");
    expect(m.service.spec?.loadBalancerClass).toBeUndefined();
    expect(m.service.metadata?.annotations).toBeUndefined();
    expect(m.service.spec?.ports?.map((p) => p.port)).toEqual([8000, 8001]);
    expect(m.service.spec?.loadBalancerSourceRanges).toBeUndefined();
  });

  it("internet-facing is refused without source ranges (validation; the gateway's Service carries them)", () => {
    const open = withOverrides(gpt2Config(), {
      serving: { instanceType: "g5.xlarge", loadBalancerScheme: "internet-facing", allowedCidrs: [] },
    });
    const { stack, problems } = resolveStack(open, NO_SECRETS);
    expect(stack).toBeUndefined();
    expect(problems.map((p) => p.key)).toContain("triton-ft:serving.allowedCidrs");
    expect(problems.find((p) => p.key === "triton-ft:serving.allowedCidrs")?.message).toMatch(/internet-facing/);
  });
});

describe("Kubernetes schema", () => {
  const cases: Array<[string, RawConfig, boolean]> = [
    ["gpt2 TP1", gpt2Config(), true],
    ["gpt-j TP2", gptjConfig(), false],
  ];
  for (const [label, cfg, monitor] of cases) {
    it(`validates every rendered manifest (${label})`, () => {
      const m = render(cfg, { serviceMonitor: monitor });
      new Namespace(m.namespace).validate();
      new Deployment(m.deployment).validate();
      new Service(m.service).validate();
      new Service(m.metricsService).validate();
      new PodDisruptionBudget(m.podDisruptionBudget).validate();
      if (m.serviceMonitor) {
        // kubernetes-models has no prometheus-operator CRDs: validate the standard parts.
        new ObjectMeta(m.serviceMonitor.metadata).validate();
        new LabelSelector(m.serviceMonitor.spec.selector).validate();
      }
    });
  }

  it("the schema check rejects a wrongly typed field", () => {
    const m = render(gpt2Config());
    const broken = structuredClone(m.deployment) as unknown as { spec: { replicas: unknown } };
    broken.spec.replicas = "one";
    expect(() => new Deployment(broken as never).validate()).toThrow(/replicas/);
  });

  it("writes YAML files that parse back to the same objects, in apply order", () => {
    const m = render(gpt2Config(), { serviceMonitor: true });
    const files = manifestFiles(m);
    expect(Object.keys(files)).toEqual([
      "00-namespace.yaml",
      "10-deployment.yaml",
      "20-service.yaml",
      "21-metrics-service.yaml",
      "30-poddisruptionbudget.yaml",
      "40-servicemonitor.yaml",
    ]);
    expect(parse(files["10-deployment.yaml"] ?? "")).toEqual(m.deployment);
    expect(parse(files["20-service.yaml"] ?? "")).toEqual(m.service);
    expect(Object.keys(manifestFiles(render(gpt2Config())))).not.toContain("40-servicemonitor.yaml");
  });
});
