import { describe, expect, it } from "vitest";
import { runProgram } from "../lib/pulumi";
import { gpt2Config } from "../lib/fixtures";

describe("mock harness", () => {
  it("runs the program and resolves outputs", async () => {
    const run = await runProgram(gpt2Config());
    expect(run.outputs.modelFamily).toBe("gpt");
    expect(run.outputs.tensorParallel).toBe(1);
  });

  it("aggregates configuration problems before registering anything", async () => {
    const cfg = gpt2Config();
    cfg.serving = { instanceType: "g5.bogus", tensorParallel: 5 };
    await expect(runProgram(cfg)).rejects.toThrow(/2 configuration problems/);
  });
});
