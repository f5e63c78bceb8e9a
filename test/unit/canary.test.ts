/**
 * A model's canary (issue 36, the infra side). Under the mock runtime
 * (test/lib/pulumi.ts), as the engine would compare resources (type, name and
 * serialised inputs): adding a canary to the example stack of several models
 * creates only its resources and re-runs no step of the stable build;
 * promoting it replaces nothing and creates, changes or re-runs no build step.
 * And the plan: what the canary shares with its stable build, the gateway's
 * canary block (the contract with the gateway side), the config's refusals.
 */
import { describe, expect, it } from "vitest";
import { resolveStack } from "../../infra/resolve";
import type { ResolvedStack } from "../../infra/config";
import { buildStackPlan, type StackPlan } from "../../infra/plan/stack";
import type { StepId } from "../../infra/plan/stepGraph";
import { REPO_ROOT, repoPathHasher } from "../../infra/repoFiles";
import { renderStackScaling, sharedScalingInput } from "../../infra/render/scaling";
import { runProgram, type ProgramRun } from "../lib/pulumi";
import { SEED_CANARY_STACK, SEED_MODELS_STACK, stackFileConfig } from "../lib/modelsForm";

const hasher = repoPathHasher(REPO_ROOT);

type Raw = Record<string, unknown>;
type Entry = Record<string, unknown>;
const config = (file: string) => stackFileConfig(file) as Raw;
const entryOf = (raw: Raw, id: string) => (raw.models as Record<string, Entry>)[id] as Entry;

/** The example canary stack with `canary` of kogpt-6b changed by `f`. */
function withCanary(f: (c: Entry) => Entry): Raw {
  const raw = config(SEED_CANARY_STACK);
  const kogpt = entryOf(raw, "kogpt-6b");
  kogpt.canary = f({ ...(kogpt.canary as Entry) });
  return raw;
}
const promoted = () => withCanary((c) => ({ ...c, promote: true }));

function resolved(raw: Raw): ResolvedStack[] {
  const r = resolveStack(raw, {}, { today: "2026-11-25" });
  expect(r.problems).toEqual([]);
  if (!r.models) throw new Error("no models");
  return r.models;
}
const plan = (raw: Raw) => buildStackPlan(resolved(raw), "seed-models", hasher);

function stepHashes(sp: StackPlan): Record<string, Partial<Record<StepId, string>>> {
  return Object.fromEntries(
    sp.models.map((m) => [m.id, Object.fromEntries(m.plan.buildSteps.map((s) => [s.id, s.inputHash]))]),
  );
}

/** Every resource as the engine compares it: `type/name` to its serialised inputs. */
function inputs(run: ProgramRun): Map<string, string> {
  return new Map(run.resources.map((r) => [`${r.type}/${r.name}`, JSON.stringify(r.inputs)]));
}

function diff(before: ProgramRun, after: ProgramRun) {
  const a = inputs(before);
  const b = inputs(after);
  return {
    added: [...b.keys()].filter((k) => !a.has(k)).sort(),
    removed: [...a.keys()].filter((k) => !b.has(k)).sort(),
    changed: [...b.keys()].filter((k) => a.has(k) && a.get(k) !== b.get(k)).sort(),
  };
}

const isBuildStep = (key: string) => key.startsWith("command:remote:");

/** A committed one-model stack file (Pulumi.<stack>.yaml), with `serving.canary` set to `canary` if given. */
function oneModel(stack: "dev" | "prod", canary?: Entry): Raw {
  const raw = config(`Pulumi.${stack}.yaml`);
  if (canary) raw.serving = { ...(raw.serving as Entry), canary };
  return raw;
}

type Toleration = { key?: string; operator?: string; value?: string; effect?: string };
type PodSpec = {
  tolerations?: Toleration[];
  affinity?: { nodeAffinity?: { requiredDuringSchedulingIgnoredDuringExecution?: unknown } };
};
const podSpec = (run: ProgramRun, deployment: string) =>
  (run.one("kubernetes:apps/v1:Deployment", deployment).inputs.spec as { template: { spec: PodSpec } }).template.spec;
const CANARY_TAINT_KEY = "triton-ft.io/canary";
const tolerates = (spec: PodSpec, key: string) => (spec.tolerations ?? []).some((t) => t.key === key);

describe("a canary in a one-model stack (serving.canary), under the mock runtime", () => {
  // dev: a fixed GPU node group; prod: Karpenter launches the stable's GPU nodes.
  for (const [stack, model, canary] of [
    ["dev", "gpt2", { maxBatchSize: 16 }],
    ["prod", "gpt-j-6b", { maxBatchSize: 16, replicas: 1 }],
  ] as const) {
    it(`${stack}: the stable build's resources are byte-identical with and without it; the rest is the canary's or the gateway side`, async () => {
      const before = await runProgram(oneModel(stack), { stack });
      const after = await runProgram(oneModel(stack, { ...canary }), { stack });
      const d = diff(before, after);
      expect(d.removed).toEqual([]);
      expect(d.added.filter((k) => !k.includes(`${model}-canary`))).toEqual([]);
      const a = inputs(before);
      const b = inputs(after);
      // The stable's Deployment, Service, node group (dev) or NodePool (prod): not one byte changed.
      const stable = [...a.keys()].filter((k) =>
        /^(kubernetes:apps\/v1:Deployment\/triton-|kubernetes:core\/v1:Service\/triton-|eks:index:ManagedNodeGroup\/|kubernetes:karpenter)/.test(
          k,
        ),
      );
      expect(stable.length).toBeGreaterThan(1);
      for (const k of stable) expect(b.get(k), k).toBe(a.get(k));
      // No step of the stable build is changed, and none re-runs.
      expect(d.changed.filter(isBuildStep)).toEqual([]);
      expect((after.outputs as Raw).modelBuildStepHashes).toEqual((before.outputs as Raw).modelBuildStepHashes);
      // The canary's own nodes: labelled and tainted with its name; its pods select the label and tolerate the taint.
      const group = after.one("eks:index:ManagedNodeGroup", `cluster-gpu-${model}-canary`).inputs as {
        taints: Toleration[];
        labels: Record<string, string>;
      };
      expect(group.taints).toContainEqual({ key: CANARY_TAINT_KEY, value: `${model}-canary`, effect: "NO_SCHEDULE" });
      expect(group.labels["triton-ft.io/model"]).toBe(`${model}-canary`);
      const canarySpec = podSpec(after, `triton-${model}-canary-deployment`);
      expect(canarySpec.tolerations).toContainEqual({
        key: CANARY_TAINT_KEY,
        operator: "Equal",
        value: `${model}-canary`,
        effect: "NoSchedule",
      });
      expect(JSON.stringify(canarySpec.affinity)).toContain(
        `"key":"triton-ft.io/model","operator":"In","values":["${model}-canary"]`,
      );
      // The stable's pods tolerate no canary taint: they cannot land on the canary's nodes.
      expect(tolerates(podSpec(after, "triton-deployment"), CANARY_TAINT_KEY)).toBe(false);
      // The device plugin tolerates it too, or the canary's nodes would advertise no GPU.
      const plugin = JSON.stringify(after.one("kubernetes:helm.sh/v3:Release", "cluster-nvidia-device-plugin").inputs);
      expect(plugin).toContain(`"key":"${CANARY_TAINT_KEY}","operator":"Exists"`);
    }, 120_000);
  }

  it("dev, promoted: the stable Deployment rolls to the canary's image in place; the canary's nodes and pods go, nothing is added", async () => {
    const live = await runProgram(oneModel("dev", { maxBatchSize: 16 }), { stack: "dev" });
    const after = await runProgram(oneModel("dev", { maxBatchSize: 16, promote: true }), { stack: "dev" });
    const d = diff(live, after);
    expect(d.added).toEqual([]);
    expect(d.removed.filter((k) => !k.includes("gpt2-canary"))).toEqual([]);
    expect(d.removed).toContain("eks:index:ManagedNodeGroup/cluster-gpu-gpt2-canary");
    expect(d.removed.filter(isBuildStep)).toEqual([]);
    expect(d.changed.filter(isBuildStep)).toEqual([]);
    // The stable's nodes are as they were; its Deployment takes the canary's image, no canary toleration.
    const group = (run: ProgramRun) => inputs(run).get("eks:index:ManagedNodeGroup/cluster-gpu");
    expect(group(after)).toBe(group(live));
    const image = (run: ProgramRun, name: string) =>
      JSON.stringify(run.one("kubernetes:apps/v1:Deployment", name).inputs.spec).match(/"image":"([^"]+)"/)?.[1];
    expect(image(after, "triton-deployment")).toBe(image(live, "triton-gpt2-canary-deployment"));
    expect(tolerates(podSpec(after, "triton-deployment"), CANARY_TAINT_KEY)).toBe(false);
  }, 120_000);
});

describe("a canary on the example stack, under the mock runtime", () => {
  it("adding it creates only its own resources; the stable build's steps and resources stay as they are", async () => {
    const before = await runProgram(config(SEED_MODELS_STACK), { stack: "seed-models" });
    const after = await runProgram(config(SEED_CANARY_STACK), { stack: "seed-models" });
    const d = diff(before, after);
    expect(d.removed).toEqual([]);
    // Every new resource is the canary's: named after it.
    expect(d.added.filter((k) => !k.includes("kogpt-6b-canary"))).toEqual([]);
    // Its own steps: gemm and bake (maxBatchSize shapes both); fetch and convert are the stable's.
    const steps = d.added.filter((k) => /^command:remote:Command\/build-kogpt-6b-canary-[a-z-]+$/.test(k));
    expect(steps.filter((k) => !k.includes("-config-"))).toEqual([
      "command:remote:Command/build-kogpt-6b-canary-bake",
      "command:remote:Command/build-kogpt-6b-canary-deployed-server",
      "command:remote:Command/build-kogpt-6b-canary-gemm",
    ]);
    // Its steps wait for the stable model's own fetch and convert (not another model's on the same builder).
    const bakeAfter = after.one("command:remote:Command", "build-kogpt-6b-canary-bake").options.dependsOn;
    expect(bakeAfter).toContain("command:remote:Command::build-kogpt-6b-convert");
    expect(bakeAfter).toContain("command:remote:Command::build-kogpt-6b-canary-gemm");
    expect(bakeAfter.filter((d) => /build-(convert|fetch)$/.test(d))).toEqual([]);
    // Its Triton, Service and nodes of its own.
    for (const k of [
      "kubernetes:apps/v1:Deployment/triton-kogpt-6b-canary-deployment",
      "kubernetes:core/v1:Service/triton-kogpt-6b-canary-service",
      "eks:index:ManagedNodeGroup/cluster-gpu-kogpt-6b-canary",
      "aws:ecr/repository:Repository/registry-server-kogpt-6b-canary",
    ])
      expect(d.added).toContain(k);
    // Changed: the gateway (its config gains the route's canary block; its NetworkPolicy reaches the canary),
    // the builders' ECR policies (the canary's repository), the shared alerts and dashboard. No step, no model.
    expect(d.changed).toEqual([
      "aws:iam/rolePolicy:RolePolicy/builder-ecr",
      "aws:iam/rolePolicy:RolePolicy/builder-l4-ecr",
      "kubernetes:apps/v1:Deployment/gateway-deployment",
      "kubernetes:core/v1:ConfigMap/gateway-config",
      "kubernetes:core/v1:ConfigMap/scaling-dashboard",
      "kubernetes:monitoring.coreos.com/v1:PrometheusRule/scaling-alerts",
      "kubernetes:networking.k8s.io/v1:NetworkPolicy/gateway-triton-h2ogpt-6-9b-gateway",
    ]);
    // No step of the stable builds re-runs: the same hashes.
    expect((after.outputs as Raw).modelBuildStepHashes).toEqual((before.outputs as Raw).modelBuildStepHashes);
  }, 120_000);

  it("promoting it replaces nothing, creates no build step and re-runs none: the model's Deployment rolls to the canary's image", async () => {
    const live = await runProgram(config(SEED_CANARY_STACK), { stack: "seed-models" });
    const after = await runProgram(promoted(), { stack: "seed-models" });
    const d = diff(live, after);
    expect(d.added).toEqual([]);
    // Gone: the canary's serving side only; its build steps and repository stay (they hold the digest).
    expect(d.removed.filter((k) => !k.includes("kogpt-6b-canary"))).toEqual([]);
    expect(d.removed.filter(isBuildStep)).toEqual([]);
    expect(d.removed.filter((k) => k.includes(":ecr/"))).toEqual([]);
    expect(d.removed).toContain("kubernetes:apps/v1:Deployment/triton-kogpt-6b-canary-deployment");
    expect(d.removed).toContain("eks:index:ManagedNodeGroup/cluster-gpu-kogpt-6b-canary");
    expect(d.changed.filter(isBuildStep)).toEqual([]);
    expect(d.changed).toEqual([
      "kubernetes:apps/v1:Deployment/gateway-deployment",
      "kubernetes:apps/v1:Deployment/triton-kogpt-6b-deployment",
      "kubernetes:core/v1:ConfigMap/gateway-config",
      "kubernetes:core/v1:ConfigMap/scaling-dashboard",
      "kubernetes:keda.sh/v1alpha1:ScaledObject/scaling-gateway-scaledobject",
      "kubernetes:monitoring.coreos.com/v1:PrometheusRule/scaling-alerts",
      "kubernetes:networking.k8s.io/v1:NetworkPolicy/gateway-triton-h2ogpt-6-9b-gateway",
    ]);
    // An update, not a replacement: the Deployment keeps its name and selector, and takes the canary's image.
    const deployment = (run: ProgramRun) => run.one("kubernetes:apps/v1:Deployment", "triton-kogpt-6b-deployment");
    const spec = (run: ProgramRun) => deployment(run).inputs.spec as { selector: unknown; template: unknown };
    expect(deployment(after).inputs.metadata).toEqual(deployment(live).inputs.metadata);
    expect(spec(after).selector).toEqual(spec(live).selector);
    const image = (run: ProgramRun, name: string) =>
      JSON.stringify(run.one("kubernetes:apps/v1:Deployment", name).inputs.spec).match(/"image":"([^"]+)"/)?.[1];
    expect(image(after, "triton-kogpt-6b-deployment")).toBe(image(live, "triton-kogpt-6b-canary-deployment"));
    expect(image(after, "triton-kogpt-6b-deployment")).not.toBe(image(live, "triton-kogpt-6b-deployment"));
    expect((after.outputs as Raw).modelBuildStepHashes).toEqual((live.outputs as Raw).modelBuildStepHashes);
  }, 120_000);
});

describe("the canary's plan", () => {
  it("shares every step whose hash is the stable's, and changes no hash of the stable build", () => {
    const stable = plan(config(SEED_MODELS_STACK));
    const sp = plan(config(SEED_CANARY_STACK));
    expect(stepHashes(sp)).toEqual(stepHashes(stable));
    const [c] = sp.canaries;
    expect(c?.id).toBe("kogpt-6b-canary");
    expect(c?.shared).toEqual(["fetch", "convert"]);
    expect(c?.plan.buildSteps.map((s) => s.id)).toEqual(["gemm", "bake"]);
    // Its bake reads the stable's converted weights and tokenizer, and its own gemm config.
    const bake = c?.plan.buildSteps.find((s) => s.id === "bake");
    const value = (k: string) => bake?.config.find(([key]) => key === k)?.[1];
    expect(value("WEIGHTS_DIR")).toBe("/opt/triton-ft/work/kogpt-6b/ft/1-gpu");
    expect(value("TOKENIZER_SOURCE_DIR")).toBe("/opt/triton-ft/work/kogpt-6b/source");
    expect(value("GEMM_CONFIG")).toBe("/opt/triton-ft/work/kogpt-6b-canary/gemm/gemm_config.in");
    expect(value("STEP_SCOPE")).toBe("kogpt-6b-canary");
    // Its hashes cover the stable's fetch and convert: a new stable revision is a new canary too.
    expect(c?.buildId).toBe(`c-${(bake?.inputHash ?? "").slice(0, 8)}`);
  });

  it("another revision shares only gemm (it reads no weight): the canary fetches and converts into folders of its own", () => {
    const sp = plan(
      withCanary(() => ({
        source: { huggingface: { repo: "kakaobrain/kogpt", revision: "0123456789abcdef0123456789abcdef01234567" } },
      })),
    );
    const [c] = sp.canaries;
    expect(c?.shared).toEqual(["gemm"]);
    expect(c?.plan.buildSteps.map((s) => s.id)).toEqual(["fetch", "convert", "bake"]);
    const fetch = c?.plan.buildSteps.find((s) => s.id === "fetch");
    expect(fetch?.config.find(([k]) => k === "MODEL_DIR")?.[1]).toBe("/opt/triton-ft/work/kogpt-6b-canary/source");
  });

  it("another instance type of the same GPU builds nothing: the canary serves the stable's image", () => {
    const sp = plan(withCanary(() => ({ instanceType: "g5.4xlarge" })));
    const [c] = sp.canaries;
    expect(c?.shared).toEqual(["fetch", "convert", "gemm", "bake"]);
    expect(c?.plan.buildSteps).toEqual([]);
    expect(c?.plan.serving.instanceType).toBe("g5.4xlarge");
  });

  it("renders the contract's canary block, and the model's limits as the stricter of both builds", () => {
    const sp = plan(withCanary((c) => ({ ...c, maxInputLen: 256, maxOutputLen: 512 })));
    const entry = sp.gateway.plan.config.models.find((m) => m.id === "kogpt-6b");
    const c = sp.canaries[0];
    expect(entry?.canary).toEqual({
      id: c?.buildId,
      weight: 10,
      triton: { grpc: "triton-kogpt-6b-canary.triton.svc.cluster.local:8001", ensemble: "ensemble" },
      maxInflight: 16,
      rollback: { maxErrorRate: 0.05, maxTtftRatio: 1.5, windowSeconds: 300, minRequests: 50 },
    });
    expect(entry?.canary?.id).toMatch(/^c-[0-9a-f]{8}$/);
    // Stable: batch 4, input 512, output 256; canary: batch 8, input 256, output 512.
    expect([entry?.maxBatchSize, entry?.maxInputLen, entry?.maxOutputLen]).toEqual([4, 256, 256]);
    // The gateway-wide in-flight cap counts the canary's Triton too.
    const caps = sp.gateway.plan.config.models.reduce((s, m) => s + m.maxInflight + (m.canary?.maxInflight ?? 0), 0);
    expect(sp.gateway.plan.config.limits.maxInflight).toBe(caps);
    // The other models' entries carry no canary block.
    expect(sp.gateway.plan.config.models.filter((m) => m.canary).map((m) => m.id)).toEqual(["kogpt-6b"]);
  });

  it("promoted: the route loses its canary block and takes the canary's limits; no build step is added", () => {
    const live = plan(config(SEED_CANARY_STACK));
    const sp = plan(promoted());
    const entry = sp.gateway.plan.config.models.find((m) => m.id === "kogpt-6b");
    expect(entry?.canary).toBeUndefined();
    expect(entry?.maxBatchSize).toBe(8);
    expect(stepHashes(sp)).toEqual(stepHashes(live));
    expect(sp.canaries[0]?.plan.buildSteps.map((s) => [s.id, s.inputHash])).toEqual(
      live.canaries[0]?.plan.buildSteps.map((s) => [s.id, s.inputHash]),
    );
    // The model's Deployment keeps its names and its own pod count.
    expect(sp.models[1]?.plan.renderInputs.triton.modelName).toBe("kogpt-6b");
    expect(sp.models[1]?.plan.kubernetes.replicas).toBe(live.models[1]?.plan.kubernetes.replicas);
    expect(sp.gateway.workload.tritons.map((t) => t.modelName)).not.toContain("kogpt-6b-canary");
  });

  it("alerts when the gateway rolled it back, and shows each build in the model's dashboard row", () => {
    const sp = plan(config(SEED_CANARY_STACK));
    const scaling = renderStackScaling(
      sharedScalingInput(
        sp.gateway.plan,
        sp.models.map((m) => m.plan.renderInputs.scaling),
      ),
    );
    const groups = scaling.shared.prometheusRule?.spec.groups ?? [];
    const canaryAlerts = groups.flatMap((g) =>
      g.rules.filter((r) => r.alert === "TritonFtCanaryRolledBack").map((r) => ({ group: g.name, r })),
    );
    expect(canaryAlerts.map((a) => a.group)).toEqual(["triton-kogpt-6b.rules"]);
    const rule = canaryAlerts[0]?.r;
    expect(rule?.expr).toMatch(
      /^max by \(model, canary\) \(triton_ft_gateway_canary_rolled_back\{.*model="kogpt-6b".*\}\) == 1$/,
    );
    expect(rule?.for).toBe("0m");
    expect(rule?.labels.model).toBe("kogpt-6b");
    const dashboard = JSON.stringify(scaling.shared.dashboard ?? {});
    for (const title of [
      "Canary: share of requests by build",
      "Canary: time to first token p95 by build",
      "Canary: error ratio (5xx) by build",
      "Canary: rolled back",
    ])
      expect(dashboard.split(title).length - 1).toBe(1);
    expect(dashboard).toContain("sum by (le, build)");
  });
});

describe("models.<id>.canary: refused at preview, all at once, with key, value and fix", () => {
  const problems = (raw: Raw) => resolveStack(raw, {}, { today: "2026-11-25" }).problems;

  it("refuses a canary that differs in nothing, on a model that sleeps, and a model named like a canary", () => {
    const raw = config(SEED_CANARY_STACK);
    entryOf(raw, "kogpt-6b").canary = { maxBatchSize: 4 };
    entryOf(raw, "codegen-2b-mono").canary = { maxBatchSize: 4 };
    (raw.models as Record<string, Entry>)["h2ogpt-6-9b-canary"] = { ...entryOf(raw, "h2ogpt-6-9b") };
    entryOf(raw, "h2ogpt-6-9b").canary = { maxBatchSize: 4 };
    const p = problems(raw);
    const keys = p.map((x) => x.key);
    expect(keys).toContain("triton-ft:models.kogpt-6b.canary");
    expect(keys).toContain("triton-ft:models.codegen-2b-mono.canary");
    expect(keys).toContain("triton-ft:models.h2ogpt-6-9b-canary");
    for (const x of p) {
      expect(x.message.length).toBeGreaterThan(10);
      expect(x.fix.length).toBeGreaterThan(10);
    }
    expect(p.find((x) => x.key === "triton-ft:models.kogpt-6b.canary")?.message).toMatch(
      /differs from the stable build in nothing/,
    );
    expect(p.find((x) => x.key === "triton-ft:models.codegen-2b-mono.canary")?.message).toMatch(/sleeps/);
  });

  it("refuses a weight out of range, promote of nothing and another GPU", () => {
    const weight = problems(withCanary((c) => ({ ...c, weight: 100 })));
    expect(weight.map((x) => x.key)).toContain("triton-ft:models.kogpt-6b.canary.weight");
    const nothing = problems(withCanary(() => ({ promote: true })));
    expect(nothing.find((x) => x.key === "triton-ft:models.kogpt-6b.canary.promote")?.message).toMatch(
      /no canary build to promote/,
    );
    const gpu = problems(withCanary((c) => ({ ...c, instanceType: "g6.xlarge" })));
    expect(gpu.find((x) => x.key === "triton-ft:models.kogpt-6b.canary.instanceType")?.message).toMatch(/L4.*A10G/);
    const promoteMove = problems(withCanary((c) => ({ ...c, instanceType: "g5.4xlarge", promote: true })));
    expect(promoteMove.map((x) => x.key)).toContain("triton-ft:models.kogpt-6b.canary.promote");
  });

  it("takes serving.canary in the one-model form, with its rules under serving.canary; refuses it beside triton-ft:models", () => {
    expect(problems(oneModel("dev", { maxBatchSize: 16 }))).toEqual([]);
    const same = problems(oneModel("dev", { maxBatchSize: 8 }));
    expect(same.find((x) => x.key === "triton-ft:serving.canary")?.message).toMatch(/differs from the stable build/);
    const long = problems(oneModel("dev", { maxBatchSize: 16, maxInputLen: 4096 }));
    expect(long.map((x) => x.key)).toContain("triton-ft:serving.canary.maxInputLen");
    const raw = config(SEED_CANARY_STACK);
    raw.serving = { ...(raw.serving as Entry), canary: { maxBatchSize: 16 } };
    expect(problems(raw).map((x) => x.key)).toContain("triton-ft:serving.canary");
  });

  it("reports a rule of the canary's own view under the canary's key", () => {
    // KoGPT has 2,048 positions: a longer prompt is refused, for the canary, under its key.
    const p = problems(withCanary((c) => ({ ...c, maxInputLen: 4096 })));
    expect(p.map((x) => x.key)).toContain("triton-ft:models.kogpt-6b.canary.maxInputLen");
    expect(p.map((x) => x.key)).not.toContain("triton-ft:models.kogpt-6b.maxInputLen");
  });
});
