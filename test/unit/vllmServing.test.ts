/**
 * Serving a vLLM model (issue 37): its Deployment, start-up budget, scaler,
 * dashboard row and alerts, beside an FT model in one stack. What differs from
 * an FT model differs only where the engine does; the rest is the same render.
 */
import { describe, expect, it } from "vitest";
import { renderManifests, type TritonManifests } from "../../infra/render/tritonManifests";
import {
  shmSize,
  vllmShmSize,
  VLLM_BROADCAST_QUEUE_BYTES,
  VLLM_WORKER_QUEUE_BYTES,
} from "../../infra/resolve/workload";
import { SERVER_FIXED_START_SECONDS, VLLM_ASSUMED, WEIGHT_READ_BYTES_PER_SECOND } from "../../infra/catalog/timings";
import { parameterCount } from "../../infra/model/catalog";
import { STARTUP_SAFETY_FACTOR } from "../../infra/resolve/workload";
import { workloadName } from "../../infra/conventions/workload";
import type { GrafanaPanel, GrafanaRow } from "../../infra/render/dashboard";
import { gpt2Config, onVllm, withOverrides } from "../lib/fixtures";
import { renderOneModelScaling, resolvedStack, shippedQueries } from "../lib/scalingFixtures";
import {
  MIXED_FT_MODEL,
  MIXED_VLLM_MODELS,
  mixedStackConfig,
  mixedStackPlan,
  renderMixedScaling,
  seedMixedConfig,
} from "../lib/mixedStack";

const DIGEST = `123456789012.dkr.ecr.us-east-1.amazonaws.com/triton-ft-test/server@sha256:${"ab".repeat(32)}`;

function manifestsOf(raw = mixedStackConfig()): Record<string, TritonManifests> {
  const { plan } = mixedStackPlan(raw);
  return Object.fromEntries(
    plan.models.map((m) => [m.id, renderManifests({ ...m.plan.renderInputs.triton, image: DIGEST })]),
  );
}

function container(m: TritonManifests) {
  const c = m.deployment.spec?.template.spec?.containers[0];
  if (!c) throw new Error("no container");
  return c;
}

describe("a vLLM model's Deployment", () => {
  const rendered = manifestsOf();
  const { models } = mixedStackPlan();
  const kogpt = models.find((m) => m.model.name === "kogpt-6b");

  it("asks for tensorParallel GPUs and keeps the restricted pod security of an FT model", () => {
    const tp2 = manifestsOf(mixedStackConfig({ "kogpt-6b": { instanceType: "g5.12xlarge", tensorParallel: 2 } }))[
      "kogpt-6b"
    ];
    expect(tp2 && container(tp2).resources?.limits?.["nvidia.com/gpu"]).toBe("2");
    const vllm = rendered["kogpt-6b"];
    const ft = rendered[MIXED_FT_MODEL];
    if (!vllm || !ft) throw new Error("missing model");
    expect(container(vllm).resources?.limits?.["nvidia.com/gpu"]).toBe("1");
    expect(vllm.deployment.spec?.template.spec?.securityContext).toEqual(
      ft.deployment.spec?.template.spec?.securityContext,
    );
    expect(container(vllm).securityContext).toEqual(container(ft).securityContext);
    expect(container(vllm).securityContext?.readOnlyRootFilesystem).toBe(true);
  });

  it("mounts /dev/shm in memory, sized for its Python model and, with TP > 1, vLLM's queues and NCCL", () => {
    if (!kogpt?.vllm) throw new Error("kogpt is not a vLLM model");
    const one = vllmShmSize(kogpt);
    const two = vllmShmSize({ ...kogpt, vllm: { ...kogpt.vllm, tensorParallel: 2 } });
    // Two workers' response queues, the broadcast queue and NCCL's buffers.
    expect(two - one).toBeGreaterThanOrEqual(VLLM_BROADCAST_QUEUE_BYTES + 2 * VLLM_WORKER_QUEUE_BYTES);
    const tp2 = { "kogpt-6b": { instanceType: "g5.12xlarge", tensorParallel: 2 } };
    const dshm = (m: TritonManifests | undefined) =>
      m?.deployment.spec?.template.spec?.volumes?.find((v) => v.name === "dshm")?.emptyDir;
    const resolvedTp2 = mixedStackPlan(mixedStackConfig(tp2)).models.find((m) => m.model.name === "kogpt-6b");
    if (!resolvedTp2) throw new Error("missing model");
    expect(shmSize(resolvedTp2)).toBe(vllmShmSize(resolvedTp2));
    expect(dshm(manifestsOf(mixedStackConfig(tp2))["kogpt-6b"])).toEqual({
      medium: "Memory",
      sizeLimit: `${vllmShmSize(resolvedTp2) / 1024 ** 2}Mi`,
    });
    // More than the same model on FT at TP 2 needs: vLLM's queues.
    const ftTp2 = manifestsOf(mixedStackConfig({ "kogpt-6b": { ...tp2["kogpt-6b"], engine: "ft" } }))["kogpt-6b"];
    expect(vllmShmSize(resolvedTp2)).toBeGreaterThan(parseInt(String(dshm(ftTp2)?.sizeLimit), 10) * 1024 ** 2);
    expect(container(rendered["kogpt-6b"] as TritonManifests).volumeMounts).toContainEqual({
      name: "dshm",
      mountPath: "/dev/shm",
    });
  });

  it("gives the startup probe vLLM's start: its weights read plus the engine's fixed start, doubled", () => {
    if (!kogpt?.vllm) throw new Error("kogpt is not a vLLM model");
    const weights = parameterCount(kogpt.model.family, kogpt.model.arch) * 2;
    const load = Math.ceil(
      weights / WEIGHT_READ_BYTES_PER_SECOND + SERVER_FIXED_START_SECONDS + VLLM_ASSUMED.startupSeconds,
    );
    const budget = Math.ceil(load * STARTUP_SAFETY_FACTOR);
    const probe = container(rendered["kogpt-6b"] as TritonManifests).startupProbe;
    expect(probe?.failureThreshold).toBe(Math.ceil(budget / (probe?.periodSeconds ?? 10)));
    // The same model on FT starts faster (FT has no compile or graph capture).
    const ftProbe = container(
      manifestsOf(mixedStackConfig({ "kogpt-6b": { engine: "ft" } }))["kogpt-6b"] as TritonManifests,
    ).startupProbe;
    expect(probe?.failureThreshold).toBeGreaterThan(ftProbe?.failureThreshold ?? Infinity);
  });
});

describe("a vLLM model's scaler, dashboard row and alerts", () => {
  const scaling = renderMixedScaling();
  const { plan } = mixedStackPlan();
  const ids = plan.models.map((m) => m.id);
  const own = (id: string) => scaling.models[ids.indexOf(id)];
  const service = (id: string) => `${workloadName({ modelName: id })}-metrics`;
  const ns = plan.models[0]?.plan.renderInputs.triton.namespace ?? "";

  it("scales a vLLM model on vLLM's waiting over running requests, an FT model on Triton's queue time", () => {
    const sleeping = own("codegen-2b-mono")?.scaledObject;
    const queue = sleeping?.spec.triggers.find((t) => t.name === "queue-compute-ratio")?.metadata.query ?? "";
    expect(queue).toContain(
      `vllm:num_requests_waiting{namespace="${ns}",service="${service("codegen-2b-mono")}",model_name="ensemble"}`,
    );
    expect(queue).toContain("vllm:num_requests_running");
    expect(queue).not.toContain("nv_inference_queue_duration_us");
    // It sleeps as an FT model does: the gateway's held requests wake it.
    expect(sleeping?.spec.triggers.map((t) => t.name)).toEqual(["queue-compute-ratio", "in-use"]);
    expect(sleeping?.spec.minReplicaCount).toBe(0);
    // The FT model of a stack that autoscales it: Triton's queue time (a fixed FT model has no scaler here).
    const ft = renderMixedScaling(
      mixedStackConfig({ [MIXED_FT_MODEL]: { replicas: undefined, autoscaling: { min: 1, max: 2 } } }),
    ).models[0]?.scaledObject?.spec.triggers[0]?.metadata.query;
    expect(ft).toContain("nv_inference_queue_duration_us");
    expect(ft).not.toContain("vllm:");
  });

  it("gives each vLLM model's row vLLM's queue, KV cache, TTFT and token panels on its own series, and an FT row none", () => {
    const panels = scaling.shared.dashboard.panels;
    const rows: Record<string, Array<GrafanaPanel>> = {};
    let current = "";
    for (const p of panels) {
      if (p.type === "row") current = (p as GrafanaRow).title.split(" ")[0] ?? "";
      else if (current) (rows[current] ??= []).push(p);
    }
    const vllmTitles = [
      "vLLM: requests waiting and running",
      "vLLM: KV-cache usage",
      "vLLM: time to first token (engine)",
      "vLLM: tokens and preemptions per second",
    ];
    for (const id of MIXED_VLLM_MODELS) {
      const row = rows[id] ?? [];
      expect(row.map((p) => p.title)).toEqual(expect.arrayContaining(vllmTitles));
      for (const p of row.filter((q) => q.title.startsWith("vLLM")))
        for (const t of p.targets) expect(t.expr).toContain(`service="${service(id)}",model_name="ensemble"`);
      const ratio = row.find((p) => p.title === "Queue / compute time ratio");
      expect(ratio?.targets[0]?.expr).toContain("vllm:num_requests_waiting");
    }
    const ftRow = rows[MIXED_FT_MODEL] ?? [];
    expect(ftRow.length).toBeGreaterThan(0);
    expect(ftRow.filter((p) => p.title.startsWith("vLLM"))).toEqual([]);
    expect(JSON.stringify(ftRow)).not.toContain("vllm:");
  });

  it("alerts on a vLLM model's preemptions and on its own queue, and never on FT's series", () => {
    const groups = scaling.shared.prometheusRule.spec.groups;
    for (const id of MIXED_VLLM_MODELS) {
      const g = groups.find((x) => x.name === `${workloadName({ modelName: id })}.rules`);
      const alerts = g?.rules.map((r) => r.alert) ?? [];
      expect(alerts).toContain("VllmPreempting");
      expect(g?.rules.find((r) => r.alert === "VllmPreempting")?.expr).toContain(
        `vllm:num_preemptions_total{namespace="${ns}",service="${service(id)}",model_name="ensemble"}`,
      );
      expect(g?.rules.find((r) => r.alert === "TritonQueueTimeHigh")?.expr).toContain("vllm:num_requests_waiting");
      expect(JSON.stringify(g)).not.toContain("fastertransformer");
    }
    const ft = groups.find((x) => x.name === `${workloadName({ modelName: MIXED_FT_MODEL })}.rules`);
    expect(ft?.rules.map((r) => r.alert)).not.toContain("VllmPreempting");
    expect(JSON.stringify(ft)).not.toContain("vllm:");
  });
});

describe("the committed mixed stack (test/stacks/models/Pulumi.seed-mixed.yaml)", () => {
  const rendered = manifestsOf(seedMixedConfig());
  const { models } = mixedStackPlan(seedMixedConfig());
  const scaling = renderMixedScaling(seedMixedConfig());
  const groups = scaling.shared.prometheusRule.spec.groups;
  const groupOf = (id: string) => groups.find((g) => g.name === `${workloadName({ modelName: id })}.rules`);

  it("runs tritonserver itself for the vLLM model (no MPI) and FT's under mpirun, each with its own drain", () => {
    const llama = rendered.tinyllama;
    const gpt2 = rendered.gpt2;
    if (!llama || !gpt2) throw new Error("missing model");
    const drain = (m: TritonManifests) => m.deployment.spec?.template.spec?.terminationGracePeriodSeconds;
    expect(container(llama).command?.[0]).toBe("/opt/tritonserver/bin/tritonserver");
    expect(container(llama).command).not.toContain("mpirun");
    expect(container(llama).command?.at(-1)).toMatch(/^--exit-timeout-secs=\d+$/);
    expect(container(gpt2).command?.[0]).toBe("mpirun");
    expect(drain(llama)).toBeGreaterThan(0);
    const tinyllama = models.find((m) => m.model.name === "tinyllama");
    if (!tinyllama) throw new Error("missing model");
    expect(tinyllama.engine).toBe("vllm");
    expect(llama.deployment.spec?.template.spec?.volumes?.find((v) => v.name === "dshm")?.emptyDir?.sizeLimit).toBe(
      `${vllmShmSize(tinyllama) / 1024 ** 2}Mi`,
    );
  });

  it("gives TinyLlama's row vLLM's panels and alert, GPT-2's none", () => {
    const text = JSON.stringify(scaling.shared.dashboard);
    expect(text).toContain(
      `service=\\"${workloadName({ modelName: "tinyllama" })}-metrics\\",model_name=\\"ensemble\\"`,
    );
    expect(text).not.toContain(`service=\\"${workloadName({ modelName: "gpt2" })}-metrics\\",model_name`);
    expect(groupOf("tinyllama")?.rules.map((r) => r.alert)).toContain("VllmPreempting");
    expect(groupOf("gpt2")?.rules.map((r) => r.alert)).not.toContain("VllmPreempting");
    expect(JSON.stringify(groupOf("gpt2"))).not.toContain("vllm:");
  });
});

describe("a one-model stack on vLLM (Pulumi.dev.yaml's GPT-2 with engine vllm)", () => {
  const s = resolvedStack(onVllm(withOverrides(gpt2Config(), { model: { engine: "vllm" } })));
  const scaling = renderOneModelScaling(s);

  it("reads vLLM's series wherever the FT stack reads FT's, and adds vLLM's panels and alert", () => {
    expect(s.engine).toBe("vllm");
    const queries = shippedQueries(scaling).map((q) => q.expr);
    expect(queries.join("\n")).not.toContain("fastertransformer");
    const titles = scaling.shared.dashboard.panels.map((p) => p.title);
    expect(titles).toEqual(
      expect.arrayContaining([
        "vLLM: requests waiting and running",
        "vLLM: KV-cache usage",
        "vLLM: time to first token (engine)",
      ]),
    );
    const rules = scaling.shared.prometheusRule.spec.groups.flatMap((g) => g.rules);
    expect(rules.map((r) => r.alert)).toContain("VllmPreempting");
    expect(rules.find((r) => r.alert === "TritonQueueTimeHigh")?.expr).toContain("vllm:num_requests_waiting");
  });
});
