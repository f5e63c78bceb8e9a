/**
 * Promotion (build.promoteFrom) under Pulumi's mock runtime: the building
 * stack's outputs come from the real program run in build mode, and the
 * promoted stack reads them through its StackReference.
 */
import { afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { resolveStack } from "../../infra/resolve";
import { modelPlanDifferences, type ModelPlan } from "../../infra/promotion/modelPlan";
import { gpt2Config, withOverrides, type RawConfig } from "../lib/fixtures";
import { REFERENCED_STACKS } from "../lib/mocks";
import { SEED_MODELS_STACK, stackFileConfig } from "../lib/modelsForm";
import { runProgram } from "../lib/pulumi";

const STAGING = "acme/triton-ft/staging";
const KUBECONFIG = JSON.stringify({
  apiVersion: "v1",
  clusters: [{ name: "team", cluster: { server: "https://team.example" } }],
  contexts: [{ name: "team", context: { cluster: "team-gpu" } }],
  "current-context": "team",
});

/** The building stack's config in its promoted form: the build section names the stack instead. */
function promoted(base: RawConfig = gpt2Config(), overrides: Record<string, Record<string, unknown>> = {}): RawConfig {
  // No shared store: the in-cluster one generates its TLS certificate and password (tls, random providers),
  // which the real-engine suite cannot run; this is the promoted form that suite deploys.
  const cfg = withOverrides(base, {
    cluster: { mode: "kubeconfig" },
    serving: { store: { mode: "none" } },
    ...overrides,
  });
  // The pins the images carry are part of the model plan: a promoted stack states them (PROMOTED_BUILD_KEYS).
  const { tritonVersion, backendCommit, ftCommit } = base.build as Record<string, unknown>;
  cfg.build = {
    promoteFrom: { stackReference: STAGING },
    tritonVersion,
    backendCommit,
    ftCommit,
    ...(overrides.build ?? {}),
  };
  return cfg;
}

let built: Record<string, unknown>;

/** Registers the building stack's outputs, with some replaced. */
function publish(replace: Record<string, unknown> = {}): void {
  const outputs = { ...built, ...replace };
  for (const [k, v] of Object.entries(replace)) if (v === undefined) delete outputs[k];
  REFERENCED_STACKS.set(STAGING, { name: STAGING, outputs, secretOutputNames: ["kubeconfig", "apiKeys"] });
}

beforeAll(async () => {
  // The real program in build mode: what staging exports after its pulumi up.
  built = (await runProgram(gpt2Config(), { stack: "staging" })).outputs;
}, 120_000);
afterEach(() => REFERENCED_STACKS.clear());

describe("promotion: build.promoteFrom", () => {
  it("serves the building stack's images by digest and creates nothing of the build side, nor any AWS resource (kubeconfig mode)", async () => {
    publish();
    const run = await runProgram(promoted(), { stack: "prod", secrets: { kubeconfig: KUBECONFIG } });
    expect(run.one("pulumi:pulumi:StackReference", "promotion-ref").inputs.name).toBe(STAGING);
    const types = new Set(run.resources.map((r) => r.type));
    for (const t of types) expect(t).not.toMatch(/^(aws|eks|awsx|command|tls|random|docker):/);
    for (const t of [
      "triton-ft:network:Network",
      "triton-ft:registry:Registry",
      "triton-ft:builder:Builder",
      "triton-ft:buildPipeline:BuildPipeline",
    ])
      expect(types.has(t), t).toBe(false);
    expect(run.outputs.serverImage).toBe(built.serverImage);
    expect(run.outputs.models).toEqual(built.models);
    expect(run.outputs.gatewayImage).toBe(built.gatewayImage);
    expect(run.outputs.tritonWithFtImage).toBe(built.tritonWithFtImage);
    expect(run.outputs.modelPlanFingerprint).toBe(built.modelPlanFingerprint);
    expect(run.outputs.promotedFrom).toBe(STAGING);
    const images = run
      .byType("kubernetes:apps/v1:Deployment")
      .map((d) => (d.inputs.spec as { template: { spec: { containers: { image: string }[] } } }).template.spec);
    expect(images.flatMap((s) => s.containers.map((c) => c.image))).toEqual(
      expect.arrayContaining([built.serverImage, built.gatewayImage]),
    );
  });

  it("with cluster.mode create it creates the network the cluster needs, and still no registry, builder or remote step", async () => {
    publish();
    const cfg = promoted(gpt2Config(), { cluster: { mode: "create", endpointAccess: "private" } });
    const run = await runProgram(cfg, { stack: "prod" });
    const types = new Set(run.resources.map((r) => r.type));
    expect(types.has("triton-ft:network:Network")).toBe(true);
    expect(types.has("eks:index:Cluster")).toBe(true);
    for (const t of types) expect(t).not.toMatch(/^(command|tls):|^aws:ecr|^aws:ec2\/instance/);
  });

  it("refuses an image that is not pinned by digest, naming the output, its value and the fix", async () => {
    const models = built.models as Record<string, Record<string, unknown>>;
    publish({
      models: {
        gpt2: {
          ...models.gpt2,
          serverImage: "123456789012.dkr.ecr.us-east-1.amazonaws.com/staging-gpt2-server:latest",
        },
      },
    });
    await expect(runProgram(promoted(), { stack: "prod", secrets: { kubeconfig: KUBECONFIG } })).rejects.toThrow(
      /triton-ft:build\.promoteFrom: cannot promote from acme\/triton-ft\/staging:\n {2}1\. output models\.gpt2\.serverImage of stack acme\/triton-ft\/staging = "123456789012\.dkr\.ecr\.us-east-1\.amazonaws\.com\/staging-gpt2-server:latest": is not an image pinned by digest .*; fix: promote from a stack that built its images/,
    );
  });

  it("refuses a build for another model plan, naming each entry that differs and the key that sets it", async () => {
    publish();
    const cfg = promoted(gpt2Config(), { serving: { maxOutputLen: 512 } });
    await expect(runProgram(cfg, { stack: "prod", secrets: { kubeconfig: KUBECONFIG } })).rejects.toThrow(
      /output models\.gpt2\.modelPlanFingerprint of stack acme\/triton-ft\/staging = "sha256:[0-9a-f]{64}": gpt2's image was built for another model plan than this stack's: bake\.files\.\/opt\/triton-ft\/plan\/model-repository\/[a-z]+\/config\.pbtxt built "[0-9a-f]{64}", planned here "[0-9a-f]{64}" \(serving\.maxBatchSize \/ maxInputLen \/ maxOutputLen .*\); fix: set serving\.maxBatchSize .* as acme\/triton-ft\/staging has them, or build the change in acme\/triton-ft\/staging first/,
    );
  });

  it("refuses a different TP size and GPU with every difference listed", async () => {
    publish();
    const cfg = promoted(gpt2Config(), { serving: { instanceType: "g6.12xlarge", tensorParallel: 2 } });
    const err = await runProgram(cfg, { stack: "prod", secrets: { kubeconfig: KUBECONFIG } }).then(
      () => undefined,
      (e: unknown) => String(e),
    );
    expect(err).toMatch(/convert\.TP built 1, planned here 2 \(serving\.tensorParallel\)/);
    expect(err).toMatch(
      /triton-with-ft\.SM_LIST built "86", planned here "89" \(serving\.instanceType \(its GPU's SM\)\)/,
    );
  });

  it("refuses a building stack that exports no model plan (deployed before promotion existed)", async () => {
    const models = built.models as Record<string, Record<string, unknown>>;
    publish({ models: { gpt2: { serverImage: models.gpt2?.serverImage } } });
    await expect(runProgram(promoted(), { stack: "prod", secrets: { kubeconfig: KUBECONFIG } })).rejects.toThrow(
      /output models\.gpt2\.modelPlanFingerprint of stack acme\/triton-ft\/staging = \(not exported\): the stack exports no model plan for gpt2.*fix: pulumi up acme\/triton-ft\/staging with this version/,
    );
  });

  it("the model plan diff compares whole values, names the entry and its key, and a plan of another version differs as a whole", () => {
    const plan = JSON.parse(String(built.modelPlan)) as ModelPlan;
    expect(modelPlanDifferences(plan as unknown as Record<string, unknown>, plan)).toEqual([]);
    expect(modelPlanDifferences({ ...plan, version: 1 }, plan).map((d) => d.field)).toEqual(["version"]);
    const fetch = plan.steps.fetch;
    if (!fetch) throw new Error("no fetch step in the model plan");
    const moved = {
      ...plan,
      steps: { ...plan.steps, fetch: { ...fetch, config: { ...fetch.config, HF_REVISION: "1".repeat(40) } } },
    };
    expect(modelPlanDifferences(moved, plan).map((d) => [d.field, d.key])).toEqual([
      ["fetch.HF_REVISION", "model.source.huggingface.revision"],
    ]);
  });
});

describe("promotion: config checks at preview", () => {
  const check = (cfg: RawConfig, secrets = { kubeconfig: true }) =>
    resolveStack(cfg, secrets, { stackName: "prod", today: "2026-12-01" }).problems;

  it("a promoted stack needs none of the builder's settings", () => {
    expect(check(promoted())).toEqual([]);
  });

  it("a promoted stack states the pins its images carry: the backend and FT commits are required", () => {
    const cfg = promoted();
    cfg.build = { promoteFrom: { stackReference: STAGING } };
    expect(check(cfg).map((p) => p.key)).toEqual(["triton-ft:build.backendCommit", "triton-ft:build.ftCommit"]);
  });

  it("refuses a build setting beside promoteFrom, naming the key, the value and the fix", () => {
    const cfg = promoted();
    cfg.build = { ...cfg.build, builderInstanceType: "g5.4xlarge", sshAllowedCidrs: [] };
    const problems = check(cfg);
    expect(problems.map((p) => p.key)).toEqual([
      "triton-ft:build.builderInstanceType",
      "triton-ft:build.sshAllowedCidrs",
    ]);
    expect(problems[0]).toMatchObject({
      value: "g5.4xlarge",
      message: expect.stringMatching(/with build\.promoteFrom this stack builds nothing .* so it would be ignored/),
      fix: expect.stringMatching(/^remove it \(acme\/triton-ft\/staging keeps its build settings\)/),
    });
  });

  it("refuses a stack reference that is not <org>/<project>/<stack>, and an unknown key inside promoteFrom", () => {
    const cfg = promoted();
    cfg.build = { ...cfg.build, promoteFrom: { stackReference: "staging" } };
    expect(check(cfg)).toEqual([
      expect.objectContaining({ key: "triton-ft:build.promoteFrom.stackReference", value: "staging" }),
    ]);
    cfg.build = { ...cfg.build, promoteFrom: { stackReference: STAGING, stack: "x" } };
    expect(check(cfg)).toEqual([
      expect.objectContaining({
        key: "triton-ft:build.promoteFrom.stack",
        message: expect.stringMatching(/is not a key of triton-ft:build\.promoteFrom/),
      }),
    ]);
  });

  it("a created cluster must say who reaches its endpoint (there are no builder CIDRs to default from)", () => {
    const cfg = promoted(gpt2Config(), { cluster: { mode: "create" } });
    expect(check(cfg)).toEqual([expect.objectContaining({ key: "triton-ft:cluster.endpointAccess" })]);
  });
});

describe("promotion of a stack of several models (test/stacks/models)", () => {
  const SEED_STAGING = "acme/triton-ft/seed-staging";
  let seedBuilt: Record<string, unknown>;
  const seed = () => stackFileConfig(SEED_MODELS_STACK) as Record<string, Record<string, unknown>>;

  /** The example stack in its promoted form: its own cluster (CodeGen autoscales), no store, the build section names the stack. */
  function promotedSeed(models?: Record<string, unknown>): Record<string, unknown> {
    const raw = seed();
    const { tritonVersion, backendCommit, ftCommit } = raw.build as Record<string, unknown>;
    return {
      ...raw,
      ...(models ? { models } : {}),
      build: { promoteFrom: { stackReference: SEED_STAGING }, tritonVersion, backendCommit, ftCommit },
      cluster: { mode: "create", endpointAccess: "private" },
      serving: { ...raw.serving, store: { mode: "none" } },
    };
  }

  beforeAll(async () => {
    seedBuilt = (await runProgram(seed(), { stack: "seed-staging" })).outputs;
  }, 120_000);
  beforeEach(() =>
    REFERENCED_STACKS.set(SEED_STAGING, { name: SEED_STAGING, outputs: seedBuilt, secretOutputNames: ["kubeconfig"] }),
  );

  it("serves every model's image by digest from the building stack, each in its own Deployment", async () => {
    const cfg = promotedSeed();
    const run = await runProgram(cfg, { stack: "seed-prod", secrets: { kubeconfig: KUBECONFIG } });
    const built = seedBuilt.models as Record<string, { serverImage: string; modelPlanFingerprint: string }>;
    const served = run.outputs.models as Record<string, { serverImage: string; modelPlanFingerprint: string }>;
    expect(Object.keys(served)).toEqual(["h2ogpt-6-9b", "kogpt-6b", "codegen-2b-mono"]);
    for (const [id, m] of Object.entries(served)) {
      expect(m.serverImage, id).toBe(built[id]?.serverImage);
      expect(m.modelPlanFingerprint, id).toBe(built[id]?.modelPlanFingerprint);
    }
    // Three different images, one per model's Triton Deployment.
    expect(new Set(Object.values(served).map((m) => m.serverImage)).size).toBe(3);
    const images = run
      .byType("kubernetes:apps/v1:Deployment")
      .flatMap((d) =>
        (d.inputs.spec as { template: { spec: { containers: { image: string }[] } } }).template.spec.containers.map(
          (c) => c.image,
        ),
      );
    for (const m of Object.values(served)) expect(images).toContain(m.serverImage);
    for (const t of new Set(run.resources.map((r) => r.type)))
      expect(t).not.toMatch(
        /^(command|tls):|^aws:ecr|^aws:ec2\/instance:|^triton-ft:(builder|buildPipeline|registry):/,
      );
  });

  it("refuses a model the building stack does not serve, and one it serves that this stack does not, naming each", async () => {
    const models = seed().models as Record<string, unknown>;
    const cfg = promotedSeed({
      "h2ogpt-6-9b": models["h2ogpt-6-9b"],
      "kogpt-6b": models["kogpt-6b"],
      "codegen-2b": models["codegen-2b-mono"],
    });
    const err = await runProgram(cfg, { stack: "seed-prod", secrets: { kubeconfig: KUBECONFIG } }).then(
      () => "",
      (e: unknown) => String(e),
    );
    expect(err).toMatch(
      /model codegen-2b: stack acme\/triton-ft\/seed-staging serves no such model \(its models: codegen-2b-mono, h2ogpt-6-9b, kogpt-6b\); fix: add codegen-2b to acme\/triton-ft\/seed-staging/,
    );
    expect(err).toMatch(
      /model codegen-2b-mono: stack acme\/triton-ft\/seed-staging serves it and this stack does not.*fix: add codegen-2b-mono to this stack's triton-ft:models/,
    );
  });

  it("refuses one model's changed limits, naming that model only", async () => {
    const models = seed().models as Record<string, Record<string, unknown>>;
    const cfg = promotedSeed({ ...models, "kogpt-6b": { ...models["kogpt-6b"], maxOutputLen: 128 } });
    const err = await runProgram(cfg, { stack: "seed-prod", secrets: { kubeconfig: KUBECONFIG } }).then(
      () => "",
      (e: unknown) => String(e),
    );
    expect(err).toMatch(
      /output models\.kogpt-6b\.modelPlanFingerprint .* kogpt-6b's image was built for another model plan/,
    );
    expect(err).not.toMatch(/models\.(h2ogpt-6-9b|codegen-2b-mono)\./);
  });
});
