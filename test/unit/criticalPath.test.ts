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
