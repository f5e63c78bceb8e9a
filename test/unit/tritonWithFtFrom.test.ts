/**
 * build.tritonWithFtFrom under Pulumi's mock runtime: the building stack's
 * outputs come from the real program (it compiles on its compile host and
 * exports tritonWithFtBuilds); the taking stack reads them through its
 * StackReference, compiles nothing, and is refused at preview when the pins or
 * the SMs differ, each field named with both values and the key that sets it.
 */
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { resolveStack } from "../../infra/resolve";
import { buildStackPlan } from "../../infra/plan/stack";
import { estimateCost } from "../../infra/cost";
import { costInput } from "../../infra/cost/fromStack";
import { ecrRepositoryArn } from "../../infra/promotion/tritonWithFt";
import { gpt2Config, withOverrides, type RawConfig } from "../lib/fixtures";
import { REFERENCED_STACKS } from "../lib/mocks";
import { runProgram } from "../lib/pulumi";

const DEV = "acme/triton-ft/dev";

/** A config taking triton_with_ft from dev, with some keys changed. */
function taking(overrides: Record<string, Record<string, unknown>> = {}): RawConfig {
  const cfg = withOverrides(gpt2Config(), overrides);
  cfg.build = { ...cfg.build, tritonWithFtFrom: { stackReference: DEV } };
  return cfg;
}

let built: Record<string, unknown>;

function publish(replace: Record<string, unknown> = {}): void {
  const outputs = { ...built, ...replace };
  for (const [k, v] of Object.entries(replace)) if (v === undefined) delete outputs[k];
  REFERENCED_STACKS.set(DEV, { name: DEV, outputs, secretOutputNames: ["kubeconfig", "apiKeys"] });
}

beforeAll(async () => {
  built = (await runProgram(gpt2Config(), { stack: "dev" })).outputs;
}, 120_000);
afterEach(() => REFERENCED_STACKS.clear());

const commandNames = (run: Awaited<ReturnType<typeof runProgram>>) =>
  run.byType("command:remote:Command").map((c) => c.name);

describe("build.tritonWithFtFrom", () => {
  it("a building stack compiles on its compile host and exports what it built", () => {
    const builds = built.tritonWithFtBuilds as Array<Record<string, unknown>>;
    expect(builds).toHaveLength(1);
    expect(builds[0]).toMatchObject({
      builder: "builder",
      tritonVersion: "23.05",
      smList: [86],
      image: built.tritonWithFtImage,
    });
    expect(String(builds[0]?.recipe)).toMatch(/^sha256:[0-9a-f]{64}$/);
  });

  it("takes the image by digest: no compile host, no triton-with-ft step, the builder may pull it", async () => {
    publish();
    const run = await runProgram(taking(), { stack: "staging" });
    expect(run.one("pulumi:pulumi:StackReference", "triton-with-ft-from-ref").inputs.name).toBe(DEV);
    const builders = run.byType("triton-ft:builder:Builder").map((b) => b.name);
    expect(builders).toEqual(["builder"]);
    const names = commandNames(run);
    expect(names).not.toContain("build-triton-with-ft");
    expect(names.filter((n) => n.startsWith("build-compiler"))).toEqual([]);
    for (const step of ["convert", "gemm", "bake"]) expect(names).toContain(`build-${step}`);
    const image = String(built.tritonWithFtImage);
    // The steps that use triton_with_ft read the taken digest from their configs.
    for (const step of ["convert", "gemm", "bake"])
      expect(String(run.one("command:remote:Command", `build-config-${step}`).inputs.stdin)).toContain(image);
    const policy = String(run.one("aws:iam/rolePolicy:RolePolicy", "builder-ecr").inputs.policy);
    expect(policy).toContain(ecrRepositoryArn(image));
    expect(run.outputs.tritonWithFtImage).toBe(image);
    expect((run.outputs.tritonWithFtBuilds as Array<Record<string, unknown>>)[0]?.image).toBe(image);
  });

  it("refuses other pins and other SMs, naming each field, both values and the key", async () => {
    publish();
    const cfg = taking({
      build: { ftCommit: "0".repeat(40) },
      serving: { instanceType: "g6.xlarge" },
    });
    cfg.build = { ...cfg.build, builderInstanceType: "g6.xlarge" };
    const err = await runProgram(cfg, { stack: "staging" }).then(
      () => "no error",
      (e: unknown) => String(e),
    );
    expect(err).toMatch(/triton-ft:build\.tritonWithFtFrom: cannot take triton_with_ft from acme\/triton-ft\/dev:/);
    expect(err).toMatch(
      /ftCommit: acme\/triton-ft\/dev built "df4a7534860137e060e18d2ebf019906120ea204", this stack plans "0{40}" \(build\.ftCommit\)/,
    );
    expect(err).toMatch(/smList: acme\/triton-ft\/dev built \[86\], this stack plans \[89\] \(serving\.instanceType/);
    expect(err).not.toMatch(/tritonVersion:|backendCommit:|recipe:/);
    expect(err).toMatch(/fix: set build\.ftCommit, serving\.instanceType and build\.builderInstanceType/);
  });

  it("refuses a stack that exports no build", async () => {
    publish({ tritonWithFtBuilds: undefined });
    await expect(runProgram(taking(), { stack: "staging" })).rejects.toThrow(
      /output tritonWithFtBuilds of stack acme\/triton-ft\/dev = \(not exported\): .*fix: pulumi up acme\/triton-ft\/dev with this version/,
    );
  });

  it("the estimate of a stack that takes it skips the compile", () => {
    const estimate = (raw: RawConfig) => {
      const { stack } = resolveStack(raw, {});
      if (!stack) throw new Error("fixture must resolve");
      const sp = buildStackPlan([stack], "s", (p) => `h:${p}`);
      const plan = sp.models[0]?.plan;
      if (!plan) throw new Error("no plan");
      return estimateCost(costInput(stack, [stack], sp, { stackName: "s", region: "us-east-1", today: "2026-11-27" }));
    };
    const own = estimate(gpt2Config());
    const take = estimate(taking());
    const path = (r: typeof own) => r.models[0]?.criticalPath.map((s) => s.step) ?? [];
    expect(path(own)).toContain("triton-with-ft");
    expect(path(take)).not.toContain("triton-with-ft");
    expect(take.buildRuns.map((b) => b.builder)).toEqual(["builder"]);
    expect(own.buildRuns.map((b) => b.builder)).toEqual(["builder", "compiler"]);
    const first = (r: typeof own) => r.models[0]?.firstDeploySeconds ?? 0;
    expect(first(take)).toBeLessThan(first(own));
  });
});
