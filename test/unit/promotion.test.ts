/**
 * Promotion (build.promoteFrom) under Pulumi's mock runtime: the building
 * stack's outputs come from the real program run in build mode, and the
 * promoted stack reads them through its StackReference.
 */
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { resolveStack } from "../../infra/resolve";
import { modelPlanDifferences, type ModelPlan } from "../../infra/promotion/modelPlan";
import { gpt2Config, withOverrides, type RawConfig } from "../lib/fixtures";
import { REFERENCED_STACKS } from "../lib/mocks";
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
  cfg.build = { promoteFrom: { stackReference: STAGING }, ...(overrides.build ?? {}) };
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
    expect(run.one("pulumi:pulumi:StackReference").inputs.name).toBe(STAGING);
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
    publish({ serverImage: "123456789012.dkr.ecr.us-east-1.amazonaws.com/staging-gpt2-server:latest" });
    await expect(runProgram(promoted(), { stack: "prod", secrets: { kubeconfig: KUBECONFIG } })).rejects.toThrow(
      /triton-ft:build\.promoteFrom: cannot promote from acme\/triton-ft\/staging:\n {2}1\. output serverImage of stack acme\/triton-ft\/staging = "123456789012\.dkr\.ecr\.us-east-1\.amazonaws\.com\/staging-gpt2-server:latest": is not an image pinned by digest .*; fix: promote from a stack that built its images/,
    );
  });

  it("refuses a build for another model plan, naming each field that differs and the key that sets it", async () => {
    publish();
    const cfg = promoted(gpt2Config(), { serving: { maxOutputLen: 512 } });
    await expect(runProgram(cfg, { stack: "prod", secrets: { kubeconfig: KUBECONFIG } })).rejects.toThrow(
      /output modelPlanFingerprint of stack acme\/triton-ft\/staging = "sha256:[0-9a-f]{64}": its images were built for another model plan than this stack's: maxOutputLen built 256, planned here 512 \(serving\.maxOutputLen\); fix: set serving\.maxOutputLen as acme\/triton-ft\/staging has them, or build the change in acme\/triton-ft\/staging first/,
    );
  });

  it("refuses a different TP size and GPU with every difference listed", async () => {
    publish();
    const cfg = promoted(gpt2Config(), { serving: { instanceType: "g6.12xlarge", tensorParallel: 2 } });
    const err = await runProgram(cfg, { stack: "prod", secrets: { kubeconfig: KUBECONFIG } }).then(
      () => undefined,
      (e: unknown) => String(e),
    );
    expect(err).toMatch(/tensorParallel built 1, planned here 2 \(serving\.tensorParallel\)/);
    expect(err).toMatch(/gpuModel built "A10G", planned here "L4" \(serving\.instanceType\)/);
    expect(err).toMatch(/smList built \[86\], planned here \[89\] \(serving\.instanceType\)/);
  });

  it("refuses a building stack that exports no model plan (deployed before promotion existed)", async () => {
    publish({ modelPlanFingerprint: undefined, modelPlan: undefined });
    await expect(runProgram(promoted(), { stack: "prod", secrets: { kubeconfig: KUBECONFIG } })).rejects.toThrow(
      /output modelPlanFingerprint of stack acme\/triton-ft\/staging = \(not exported\): the stack exports no model plan.*fix: pulumi up acme\/triton-ft\/staging with this version/,
    );
  });

  it("the model plan diff compares whole values, and a field an older plan lacks differs", () => {
    const plan = JSON.parse(String(built.modelPlan)) as ModelPlan;
    expect(modelPlanDifferences(plan as unknown as Record<string, unknown>, plan)).toEqual([]);
    const older: Record<string, unknown> = { ...plan };
    delete older.gemm;
    expect(modelPlanDifferences(older, plan).map((d) => d.field)).toEqual(["gemm"]);
    expect(
      modelPlanDifferences({ ...plan, arch: { ...plan.arch, layers: plan.arch.layers + 1 } }, plan).map((d) => d.key),
    ).toEqual(["model.preset / model.arch"]);
  });
});

describe("promotion: config checks at preview", () => {
  const check = (cfg: RawConfig, secrets = { kubeconfig: true }) =>
    resolveStack(cfg, secrets, { stackName: "prod", today: "2026-12-01" }).problems;

  it("a promoted stack needs none of the builder's settings", () => {
    expect(check(promoted())).toEqual([]);
  });

  it("refuses a build setting beside promoteFrom, naming the key, the value and the fix", () => {
    const cfg = promoted();
    cfg.build = { ...cfg.build, backendCommit: "c6936c39be6fc57c161db34cfe5c45d1bef81ee2", sshAllowedCidrs: [] };
    const problems = check(cfg);
    expect(problems.map((p) => p.key)).toEqual(["triton-ft:build.backendCommit", "triton-ft:build.sshAllowedCidrs"]);
    expect(problems[0]).toMatchObject({
      value: "c6936c39be6fc57c161db34cfe5c45d1bef81ee2",
      message: expect.stringMatching(/with build\.promoteFrom this stack builds nothing .* so it would be ignored/),
      fix: expect.stringMatching(/^remove it \(acme\/triton-ft\/staging keeps its build settings\)/),
    });
  });

  it("refuses a stack reference that is not <org>/<project>/<stack>, and an unknown key inside promoteFrom", () => {
    const cfg = promoted();
    cfg.build = { promoteFrom: { stackReference: "staging" } };
    expect(check(cfg)).toEqual([
      expect.objectContaining({ key: "triton-ft:build.promoteFrom.stackReference", value: "staging" }),
    ]);
    cfg.build = { promoteFrom: { stackReference: STAGING, stack: "x" } };
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
