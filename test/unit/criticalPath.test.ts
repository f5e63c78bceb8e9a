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
    // Taking triton_with_ft puts the conversion (measured converter rates plus an assumed pull) on the path.
    const cfg = gpt2Config();
    cfg.build = { ...cfg.build, tritonWithFtFrom: { stackReference: "acme/triton-ft/dev" } };
    const r = report(cfg);
    const path = r.models[0]?.criticalPath ?? [];
    expect(path.length).toBeGreaterThan(3);
    for (const s of path) expect(s.basis, s.step).toBeDefined();
    expect(path.find((s) => s.step === "convert")?.basis).toBe("partly measured");
    for (const s of path.filter((x) => x.step !== "convert")) expect(s.basis, s.step).toBe("assumed");
    const line = summaryLines(r).find((l) => l.includes("critical path")) ?? "";
    expect(line).toMatch(/convert \d+(\.\d)? min \(partly measured\)/);
    expect(line).toMatch(/host-ready 10 min \(assumed\)/);
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
