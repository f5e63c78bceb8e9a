/**
 * Several models in one stack (`triton-ft:models`): validation per model,
 * the two forms, builders per GPU model, scoped build steps and their hashes.
 */
import { describe, expect, it } from "vitest";
import { resolveStack } from "../../infra/resolve";
import type { ResolvedStack } from "../../infra/config";
import { buildStackPlan, type StackPlan } from "../../infra/plan/stack";
import { buildPlan } from "../../infra/plan";
import { stepCommand, stepConfigPath, type StepId } from "../../infra/plan/stepGraph";
import { REPO_ROOT, repoPathHasher } from "../../infra/repoFiles";
import { gpt2Config } from "../lib/fixtures";
import { SEED_MODELS_STACK, stackFileConfig, toModelsForm } from "../lib/modelsForm";
import { runProgram } from "../lib/pulumi";

const hasher = repoPathHasher(REPO_ROOT);

function resolved(raw: Record<string, unknown>): ResolvedStack[] {
  const r = resolveStack(raw, {}, { today: "2026-11-25" });
  expect(r.problems).toEqual([]);
  if (!r.models) throw new Error("no models");
  return r.models;
}

function keys(raw: Record<string, unknown>): string[] {
  return resolveStack(raw, {}, { today: "2026-11-25" }).problems.map((p) => p.key);
}

const seed = () => stackFileConfig(SEED_MODELS_STACK) as Record<string, Record<string, unknown>>;
const modelOf = (raw: Record<string, Record<string, unknown>>, id: string) =>
  (raw.models as Record<string, Record<string, unknown>>)[id] as Record<string, unknown>;

function stepHashes(sp: StackPlan): Record<string, Partial<Record<StepId, string>>> {
  return Object.fromEntries(
    sp.models.map((m) => [m.id, Object.fromEntries(m.plan.buildSteps.map((s) => [s.id, s.inputHash]))]),
  );
}

describe("triton-ft:models: the two forms", () => {
  it("a one-entry map is the one-model stack: the same plan, step for step", () => {
    const one = resolved(gpt2Config());
    const map = resolved(toModelsForm(gpt2Config(), "gpt2"));
    expect(map).toHaveLength(1);
    expect(buildPlan(map[0] as ResolvedStack, "dev", hasher)).toEqual(
      buildPlan(one[0] as ResolvedStack, "dev", hasher),
    );
    // And the stack plan of one model is that plan, unscoped.
    const sp = buildStackPlan(map, "dev", hasher);
    expect(sp.models[0]?.plan).toEqual(buildPlan(one[0] as ResolvedStack, "dev", hasher));
  });

  it("refuses both forms together, and neither", () => {
    const both = { ...toModelsForm(gpt2Config(), "gpt2"), model: gpt2Config().model };
    expect(keys(both)).toContain("triton-ft:models");
    const neither: Record<string, unknown> = { ...gpt2Config() };
    delete neither.model;
    expect(keys(neither)).toEqual(["triton-ft:model"]);
  });

  it("refuses per-model serving keys and gemm at the stack level of the models form", () => {
    const raw = toModelsForm(gpt2Config(), "gpt2");
    const k = keys({ ...raw, serving: { maxBatchSize: 4, namespace: "llm" }, gemm: { beamWidth: 1 } });
    expect(k).toEqual(expect.arrayContaining(["triton-ft:serving.maxBatchSize", "triton-ft:gemm"]));
    expect(k).not.toContain("triton-ft:serving.namespace");
  });
});

describe("triton-ft:models: validation runs per model and names models.<id>.<key>", () => {
  it("reports every model's problems at once", () => {
    const raw = seed();
    // KoGPT has 16 heads: TP 3 does not divide them; CodeGen's 2048 positions cannot hold 4000 + 512.
    modelOf(raw, "kogpt-6b").tensorParallel = 3;
    modelOf(raw, "codegen-2b-mono").maxInputLen = 4000;
    modelOf(raw, "h2ogpt-6-9b").instancetype = "g5.2xlarge";
    const k = keys(raw);
    expect(k).toEqual(
      expect.arrayContaining([
        "triton-ft:models.kogpt-6b.tensorParallel",
        "triton-ft:models.codegen-2b-mono.maxInputLen",
        "triton-ft:models.h2ogpt-6-9b.instancetype",
      ]),
    );
    // Nothing is reported under the one-model names.
    expect(k.filter((x) => /^triton-ft:(serving|model)\./.test(x))).toEqual([]);
  });

  it("says a stack-wide problem once, not once per model", () => {
    const raw = seed();
    // A rule (not the schema) refuses an internet-facing load balancer open to every address.
    raw.serving = { ...raw.serving, loadBalancerScheme: "internet-facing" };
    const lb = keys(raw).filter((x) => x.startsWith("triton-ft:serving."));
    expect(lb.length).toBeGreaterThan(0);
    expect(new Set(lb).size).toBe(lb.length);
  });

  it("needs a builder for every serving GPU model, and refuses one no model uses", () => {
    const raw = seed();
    raw.build = { ...raw.build, builderInstanceType: ["g5.4xlarge"] };
    const missing = resolveStack(raw, {}, { today: "2026-11-25" }).problems.find(
      (p) => p.key === "triton-ft:build.builderInstanceType",
    );
    expect(missing?.message).toContain("L4");
    expect(missing?.message).toContain("models.codegen-2b-mono");
    raw.build = { ...raw.build, builderInstanceType: ["g5.4xlarge", "g6.4xlarge", "g6e.4xlarge"] };
    expect(resolveStack(raw, {}, { today: "2026-11-25" }).problems.map((p) => `${p.key}: ${p.message}`)).toEqual([
      expect.stringContaining("no model serves on L40S"),
    ]);
  });
});

describe("the stack plan of several models", () => {
  const models = resolved(seed());
  const sp = buildStackPlan(models, "seed-models", hasher);

  it("has one builder per GPU model, sized for the models it converts", () => {
    expect(sp.builders.map((b) => [b.name, b.instanceType, b.models])).toEqual([
      ["builder", "g5.4xlarge", ["h2ogpt-6-9b", "kogpt-6b"]],
      ["builder-l4", "g6.4xlarge", ["codegen-2b-mono"]],
    ]);
    const [a10g, l4] = sp.builders;
    // Two models kept side by side need more than either alone, less than two builders.
    const alone = models.map((m) => m.builderDiskGiB);
    expect(a10g?.diskGiB).toBeGreaterThan(Math.max(alone[0] ?? 0, alone[1] ?? 0));
    expect(a10g?.diskGiB).toBeLessThan((alone[0] ?? 0) + (alone[1] ?? 0));
    expect(l4?.diskGiB).toBe(alone[2]);
  });

  it("builds triton_with_ft on each builder, for its GPU family's SMs only", () => {
    expect(sp.builders.map((b) => [b.name, b.smList])).toEqual([
      ["builder", [86]],
      ["builder-l4", [89]],
    ]);
    const ids = sp.models.map((m) => m.plan.buildSteps.map((s) => s.id));
    expect(ids).toEqual([
      [
        "host-ready",
        "twf-layers",
        "twf-layers-pull",
        "triton-with-ft",
        "fetch",
        "convert",
        "gemm",
        "bake",
        "gateway-image",
      ],
      ["fetch", "convert", "gemm", "bake"],
      ["host-ready", "twf-layers", "twf-layers-pull", "triton-with-ft", "fetch", "convert", "gemm", "bake"],
    ]);
    expect(sp.models.map((m) => m.plan.build.smList)).toEqual([[86], [86], [89]]);
  });

  it("a model on a new GPU family builds its own triton_with_ft and changes no other model's step hashes", () => {
    // The example stack without CodeGen (L4): the two A10G models alone.
    const raw = seed();
    const a10gOnly = Object.fromEntries(
      Object.entries(raw.models as Record<string, unknown>).filter(([id]) => id !== "codegen-2b-mono"),
    );
    const before = stepHashes(
      buildStackPlan(
        resolved({ ...raw, models: a10gOnly, build: { ...raw.build, builderInstanceType: ["g5.4xlarge"] } }),
        "seed-models",
        hasher,
      ),
    );
    // Adding CodeGen on L4 (SM 89) is the example stack: the A10G models' every step keeps its hash.
    const after = stepHashes(sp);
    expect(after["h2ogpt-6-9b"]).toEqual(before["h2ogpt-6-9b"]);
    expect(after["kogpt-6b"]).toEqual(before["kogpt-6b"]);
    expect(Object.keys(after["codegen-2b-mono"] ?? {})).toContain("triton-with-ft");
  });

  it("keeps two models' steps on one builder apart: configs, plan files, markers", () => {
    const [h2o, kogpt] = sp.models;
    const paths = (i: typeof h2o) =>
      (i?.plan.buildSteps ?? []).flatMap((s) => [stepConfigPath(s.id, s.scope), ...s.files.map((f) => f.remotePath)]);
    const shared = paths(h2o).filter((p) => paths(kogpt).includes(p));
    expect(shared).toEqual([]);
    for (const s of kogpt?.plan.buildSteps ?? []) {
      expect(s.config).toContainEqual(["STEP_SCOPE", "kogpt-6b"]);
      // The step timer watches the marker under the model's state folder (lib/state.sh STATE_DIR).
      expect(stepCommand(s)).toMatch(new RegExp(`measure-step\\.sh /opt/triton-ft/state/kogpt-6b/${s.id}\\.done `));
    }
    // The first model's steps stay the one-model ones: no scope.
    for (const s of h2o?.plan.buildSteps ?? []) expect(s.config.map(([k]) => k)).not.toContain("STEP_SCOPE");
  });

  it("a change to one model's maxOutputLen re-runs only that model's bake", () => {
    const raw = seed();
    modelOf(raw, "kogpt-6b").maxOutputLen = 128;
    const after = stepHashes(buildStackPlan(resolved(raw), "seed-models", hasher));
    const before = stepHashes(sp);
    expect(after["h2ogpt-6-9b"]).toEqual(before["h2ogpt-6-9b"]);
    expect(after["codegen-2b-mono"]).toEqual(before["codegen-2b-mono"]);
    const changed = (Object.keys(before["kogpt-6b"] ?? {}) as StepId[]).filter(
      (id) => after["kogpt-6b"]?.[id] !== before["kogpt-6b"]?.[id],
    );
    expect(changed).toEqual(["bake"]);
  });

  it("a change to one model's revision re-runs only that model's fetch, convert and bake", () => {
    const raw = seed();
    (modelOf(raw, "codegen-2b-mono").source as { huggingface: { revision: string } }).huggingface.revision = "1".repeat(
      40,
    );
    const after = stepHashes(buildStackPlan(resolved(raw), "seed-models", hasher));
    const before = stepHashes(sp);
    expect(after["h2ogpt-6-9b"]).toEqual(before["h2ogpt-6-9b"]);
    expect(after["kogpt-6b"]).toEqual(before["kogpt-6b"]);
    const changed = (Object.keys(before["codegen-2b-mono"] ?? {}) as StepId[]).filter(
      (id) => after["codegen-2b-mono"]?.[id] !== before["codegen-2b-mono"]?.[id],
    );
    // gpt_gemm's shape does not depend on the weights: its tuning is kept.
    expect(changed).toEqual(["fetch", "convert", "bake"]);
  });

  it("gives each model GPU nodes of its own", () => {
    expect(sp.models.map((m) => m.plan.renderInputs.triton.modelNodeLabel?.value)).toEqual([
      "h2ogpt-6-9b",
      "kogpt-6b",
      "codegen-2b-mono",
    ]);
    expect(sp.gateway.workload.gpuInstanceTypes).toEqual(["g5.2xlarge", "g6.xlarge"]);
  });
});

describe("one gateway in front of several models", () => {
  it("routes each model id to its own Triton Service, with its own limits and in-flight cap", () => {
    const sp = buildStackPlan(resolved(seed()), "seed-models", hasher);
    const routes = sp.gateway.workload.config.models.map((m) => [m.id, m.triton.grpc, m.maxOutputLen, m.maxInflight]);
    expect(routes).toEqual([
      ["h2ogpt-6-9b", "triton-h2ogpt-6-9b.triton.svc.cluster.local:8001", 512, 16],
      ["kogpt-6b", "triton-kogpt-6b.triton.svc.cluster.local:8001", 256, 8],
      // Autoscaled: two batches per Triton pod at its most (max 3), not at its floor.
      ["codegen-2b-mono", "triton-codegen-2b-mono.triton.svc.cluster.local:8001", 512, 48],
    ]);
    expect(sp.gateway.workload.config.limits.maxInflight).toBe(72);
  });

  it("accepts a team scoped to any of the stack's models, and refuses one it does not serve", () => {
    const raw = seed();
    raw.serving = {
      ...raw.serving,
      consumers: { novelists: { models: ["kogpt-6b"] }, coders: { models: ["codegen-2b-mono"] } },
    };
    expect(keys(raw)).toEqual([]);
    raw.serving = { ...raw.serving, consumers: { novelists: { models: ["gpt-j-6b"] } } };
    expect(keys(raw)).toEqual(["triton-ft:serving.consumers.novelists.models"]);
  });
});

describe("the program of several models (mock runtime)", () => {
  it("starts and stops each builder once, from the pipeline that owns it, after every bake on it", async () => {
    const run = await runProgram(seed(), { stack: "seed-models" });
    const states = run.byType("aws:ec2transitgateway/instanceState:InstanceState").map((r) => r.name);
    // Two builders (A10G, L4) and their compile hosts: each one start and one stop (a compile host also its
    // stop after a type change); kogpt-6b shares the
    // first builder and owns neither.
    expect(states.sort()).toEqual(
      [
        "build-codegen-2b-mono-running",
        "build-codegen-2b-mono-stopped",
        "build-codegen-2b-mono-compiler-running",
        "build-codegen-2b-mono-compiler-stopped",
        "build-codegen-2b-mono-compiler-stopped-at-type",
        "build-running",
        "build-stopped",
        "build-compiler-running",
        "build-compiler-stopped",
        "build-compiler-stopped-at-type",
      ].sort(),
    );
    expect(run.byType("triton-ft:builder:Builder").map((r) => r.name)).toEqual([
      "builder",
      "builder-l4",
      "compiler",
      "compiler-l4",
    ]);
    expect(run.byType("triton-ft:tritonService:TritonService").map((r) => r.name)).toEqual([
      "triton",
      "triton-kogpt-6b",
      "triton-codegen-2b-mono",
    ]);
  });
});

describe("a builder opened by a further model (mock runtime)", () => {
  it("stops only after the bake of every model on it, whichever model's pipeline owns it", async () => {
    // CodeGen (L4) first: h2oGPT's pipeline opens the A10G builder, which KoGPT shares.
    const raw = seed();
    const models = raw.models as Record<string, unknown>;
    const { "codegen-2b-mono": codegen, ...rest } = models;
    raw.models = { "codegen-2b-mono": codegen, ...rest };
    raw.build = { ...raw.build, builderInstanceType: ["g6.4xlarge", "g5.4xlarge"] };
    const run = await runProgram(raw, { stack: "seed-models" });
    const stopped = run.one("aws:ec2transitgateway/instanceState:InstanceState", "build-h2ogpt-6-9b-stopped");
    expect(stopped.options.dependsOn).toEqual(
      expect.arrayContaining([
        "command:remote:Command::build-h2ogpt-6-9b-bake",
        "command:remote:Command::build-kogpt-6b-bake",
      ]),
    );
    // KoGPT's pipeline neither starts nor stops the builder it shares.
    const states = run.byType("aws:ec2transitgateway/instanceState:InstanceState").map((r) => r.name);
    expect(states.filter((n) => n.includes("kogpt"))).toEqual([]);
  });
});

describe("promotion and several models", () => {
  it("accepts build.promoteFrom on a stack of several models: every model's image comes from the building stack", () => {
    const raw = seed();
    const { tritonVersion, backendCommit, ftCommit } = raw.build as Record<string, unknown>;
    raw.build = { tritonVersion, backendCommit, ftCommit, promoteFrom: { stackReference: "acme/triton-ft/staging" } };
    raw.cluster = { mode: "create", endpointAccess: "private" };
    expect(keys(raw)).toEqual([]);
  });
});
