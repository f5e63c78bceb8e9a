/**
 * The critical path as synth prints it: every segment says whether its
 * minutes come from measured or assumed rates (catalog/timings.ts), and a
 * change of the first-deploy total names the segments that moved it.
 */
import { describe, expect, it } from "vitest";
import { estimateCost, type CostReport } from "../../infra/cost";
import { pathChange, summaryLines } from "../../infra/cost/format";
import { costInput } from "../../infra/cost/fromStack";
import { buildStackPlan } from "../../infra/plan/stack";
import { resolveStack } from "../../infra/resolve";
import { PROMETHEUS_URL } from "../lib/scalingFixtures";
import { gpt2Config, withOverrides, type RawConfig } from "../lib/fixtures";

function report(raw: RawConfig): CostReport {
  const { stack } = resolveStack(raw, {});
  if (!stack) throw new Error("fixture must resolve");
  const sp = buildStackPlan([stack], "dev", (p) => `h:${p}`);
  return estimateCost(costInput(stack, [stack], sp, { stackName: "dev", region: "us-east-1", today: "2026-11-27" }));
}

describe("critical path", () => {
  it("marks each segment measured, partly measured or assumed, and prints it", () => {
    // A 6B model's conversion (measured converter rates plus an assumed pull) outlasts its gpt_gemm sweep at batch 4.
    const r = report(
      withOverrides(gpt2Config(), {
        model: {
          preset: "kogpt-6b",
          source: { huggingface: { repo: "kakaobrain/kogpt", revision: "7c1e4b2a9d8f6e5c4b3a29180f7e6d5c4b3a2918" } },
        },
        serving: { instanceType: "g5.2xlarge", maxBatchSize: 4 },
        build: { builderInstanceType: "g5.4xlarge" },
      }),
    );
    const path = r.models[0]?.criticalPath ?? [];
    expect(path.length).toBeGreaterThan(3);
    for (const s of path) expect(s.basis, s.step).toBeDefined();
    expect(path.find((s) => s.step === "convert")?.basis).toBe("partly measured");
    for (const s of path.filter((x) => x.step !== "convert")) expect(s.basis, s.step).toBe("assumed");
    const line = summaryLines(r).find((l) => l.includes("critical path")) ?? "";
    expect(line).toMatch(/convert \d+(\.\d)? min \(partly measured\)/);
    expect(line).toMatch(/compile-host ready 5\.0 min \(assumed\)/);
  });

  it("names what moved the first-deploy total", () => {
    const before = report(gpt2Config()).models[0];
    const after = report(withOverrides(gpt2Config(), { serving: { maxBatchSize: 64 } })).models[0];
    if (!before || !after) throw new Error("no model");
    const line = pathChange(before, after) ?? "";
    // A bigger batch makes the gpt_gemm sweep longer: that segment, and only the ones that moved, are named.
    expect(line).toMatch(/^gpt2 first deploy \d+ min → \d+ min: /);
    expect(line).toMatch(/gemm \d+ min → \d+ min/);
    expect(line).not.toMatch(/host-ready/);
    expect(pathChange(before, before)).toBeUndefined();
  });
});

describe("the triton_with_ft pre-pull (render/prePull.ts)", () => {
  const withNodes = gpt2Config();
  const autoscaled = withOverrides(gpt2Config(), {
    serving: { autoscaling: { min: 1, max: 2, prometheusUrl: PROMETHEUS_URL } },
  });

  it("takes triton_with_ft's pull off the path: the pods pull only the bake's layers, while gemm and bake run", () => {
    const m = report(withNodes).models[0];
    const path = m?.criticalPath ?? [];
    const pull = path.find((s) => s.step.startsWith("image pull"));
    expect(pull?.step).toBe("image pull, the bake's layers (triton_with_ft pre-pulled)");
    // gpt2's fp16 weights (124 M parameters, 2 bytes each) at the assumed 50 MiB/s: seconds, not minutes.
    expect(pull?.seconds).toBeLessThan(10);
    // gemm and bake outlast the node's pull of triton_with_ft (30 GiB at 50 MiB/s), so the pre-pull is off the path.
    expect(path.map((s) => s.step)).not.toContain("triton_with_ft pre-pull on the nodes");
    expect(path.map((s) => s.step)).toEqual(expect.arrayContaining(["triton-with-ft", "gemm", "bake"]));
  });

  it("is absent where no DaemonSet would pull before the pods (Karpenter nodes): the whole image is pulled", () => {
    const path = report(autoscaled).models[0]?.criticalPath ?? [];
    const pull = path.find((s) => s.step.startsWith("image pull"));
    expect(pull?.step).toBe("image pull");
    expect(pull?.seconds).toBeGreaterThan(10 * 60);
  });

  it("saves dev's model the pull of triton_with_ft, and nothing more (the same input without it)", () => {
    const { stack } = resolveStack(withNodes, {});
    if (!stack) throw new Error("fixture must resolve");
    const sp = buildStackPlan([stack], "dev", (p) => `h:${p}`);
    const input = costInput(stack, [stack], sp, { stackName: "dev", region: "us-east-1", today: "2026-11-27" });
    const sv = input.models[0]?.serving;
    if (!sv?.prePull) throw new Error("dev's model has a pre-pull");
    const withIt = estimateCost(input).models[0]?.firstDeploySeconds ?? 0;
    const { prePull, ...rest } = sv;
    const without = estimateCost({ ...input, models: input.models.map((m) => ({ ...m, serving: rest })) }).models[0]
      ?.firstDeploySeconds;
    expect(without).toBe(withIt + sv.pullSeconds - prePull.ownLayersPullSeconds);
    expect(Math.abs(sv.pullSeconds - prePull.ownLayersPullSeconds - prePull.seconds)).toBeLessThanOrEqual(1);
  });
});
