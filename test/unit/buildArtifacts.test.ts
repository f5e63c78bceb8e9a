import { describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { resolveStack } from "../../infra/resolve";
import { synthesize } from "../../infra/synth/artifacts";
import { buildStepsWriter } from "../../infra/synth/buildArtifacts";
import { gpt2Config } from "../lib/fixtures";
import { planOf, stackPlanOf } from "../lib/plan";

describe("synth build-steps artifacts", () => {
  it("writes each step's script, args and input hash to plan.json, configs to steps/, the server Dockerfile to images/", () => {
    const { stack } = resolveStack(gpt2Config(), { hfToken: false, kubeconfig: false });
    if (!stack) throw new Error("fixture must resolve");
    const ctx = {
      stackName: "test",
      stack,
      plan: planOf(stack, (p) => `h:${p}`),
      stackPlan: stackPlanOf(stack, (p) => `h:${p}`),
      models: [stack],
      readRepoFile: (p: string) => (p.endsWith("Dockerfile") ? readFileSync(p, "utf8") : undefined),
    };
    const out = buildStepsWriter.write(ctx);
    const entries = (synthesize(ctx, [buildStepsWriter]).plan.buildSteps ?? []) as Array<{
      id: string;
      script: string;
      args: string[];
      inputHash: string;
      config: string;
    }>;
    expect(entries.map((e) => e.id)).toEqual([
      "host-ready",
      "twf-layers",
      "twf-layers-pull",
      "triton-with-ft",
      "fetch",
      "convert",
      "gemm",
      "bake",
      "gateway-image",
    ]);
    const bake = entries.find((e) => e.id === "bake");
    expect(bake).toMatchObject({ script: "scripts/remote/bake.sh", args: ["/opt/triton-ft/steps/bake.conf"] });
    expect(bake?.inputHash).toMatch(/^[0-9a-f]{64}$/);
    expect(bake?.config).toContain("BASE_IMAGE='@{tritonWithFtImage}'");
    expect(out.files.map((f) => f.path)).toEqual(
      expect.arrayContaining(["steps/bake.conf", "images/server/Dockerfile"]),
    );
    expect(out.files.find((f) => f.path === "images/server/Dockerfile")?.content).toMatch(/^FROM \$\{BASE_IMAGE\}/m);
  });
});
