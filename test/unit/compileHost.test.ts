/**
 * The triton_with_ft compile on a CPU compile host: the plan picks the host
 * from the SM list (catalog/compileHosts.ts), the estimate derives the compile
 * from core-hours over the host's vCPUs (catalog/timings.ts COMPILE), it grows
 * with the SM count, the host is priced per build, and the program runs the
 * step over the compile host's connection and stops the host after it.
 */
import { describe, expect, it } from "vitest";
import { COMPILE_HOSTS, compileHostFor, compileSeconds } from "../../infra/catalog/compileHosts";
import { COMPILE } from "../../infra/catalog/timings";
import { PRICE_TABLE } from "../../infra/catalog/prices";
import { estimateCost } from "../../infra/cost";
import { costInput } from "../../infra/cost/fromStack";
import { stepEstimates } from "../../infra/plan/budgets";
import { budgetInputs } from "../../infra/plan/steps";
import { buildStackPlan } from "../../infra/plan/stack";
import { resolveStack } from "../../infra/resolve";
import type { ResolvedStack } from "../../infra/config";
import { gpt2Config, withOverrides } from "../lib/fixtures";
import { runProgram } from "../lib/pulumi";

function resolved(raw = gpt2Config()): ResolvedStack {
  const { stack } = resolveStack(raw, {});
  if (!stack) throw new Error("fixture must resolve");
  return stack;
}

/** SM lists of one to four archs, from FT's SM sets (upstream facts). */
const SM_LISTS = [[86], [80, 86], [80, 86, 89], [80, 86, 89, 90]];

describe("compile host", () => {
  it("the compile is core-hours (fixed + per SM) over the picked host's vCPUs at the stated efficiency", () => {
    const stack = resolved();
    for (const sms of SM_LISTS) {
      const host = compileHostFor(sms);
      const compile = stepEstimates(budgetInputs(stack, sms))["triton-with-ft"].parts.compile;
      const coreSeconds = COMPILE.fixedCoreSeconds + COMPILE.perSmCoreSeconds * sms.length;
      expect(compile, sms.join(",")).toBeCloseTo(coreSeconds / (host.vcpus * COMPILE.parallelEfficiency), 6);
    }
  });

  it("the compile and its share of the first deploy grow with the SM count", () => {
    const stack = resolved();
    const compile = SM_LISTS.map((sms) => stepEstimates(budgetInputs(stack, sms))["triton-with-ft"].parts.compile ?? 0);
    for (let i = 1; i < compile.length; i++) expect(compile[i], `${i + 1} SMs`).toBeGreaterThan(compile[i - 1] ?? 0);
    const share = SM_LISTS.map((sms) => {
      const step = stepEstimates(budgetInputs(stack, sms))["triton-with-ft"];
      return (step.parts.compile ?? 0) / step.seconds;
    });
    for (let i = 1; i < share.length; i++) expect(share[i], `${i + 1} SMs`).toBeGreaterThan(share[i - 1] ?? 0);
  });

  it("the host grows with the SM count, never past the catalog, and fits the target where a host can", () => {
    const vcpus = SM_LISTS.map((sms) => compileHostFor(sms).vcpus);
    for (let i = 1; i < vcpus.length; i++) expect(vcpus[i]).toBeGreaterThanOrEqual(vcpus[i - 1] ?? 0);
    const largest = COMPILE_HOSTS[COMPILE_HOSTS.length - 1];
    for (const sms of SM_LISTS) {
      const host = compileHostFor(sms);
      const fits = compileSeconds(sms.length, host.vcpus) <= COMPILE.targetSeconds;
      // Either it fits the target and no smaller host does, or it is the largest there is.
      if (fits) {
        const smaller = COMPILE_HOSTS.filter((h) => h.vcpus < host.vcpus);
        for (const h of smaller) expect(compileSeconds(sms.length, h.vcpus)).toBeGreaterThan(COMPILE.targetSeconds);
      } else expect(host).toBe(largest);
    }
  });

  it("the committed dev stack's first deploy: the compile moved off the 4-vCPU GPU builder", () => {
    const stack = resolved();
    const sp = buildStackPlan([stack], "dev", (p) => `h:${p}`);
    const plan = sp.models[0]?.plan;
    if (!plan) throw new Error("no plan");
    const r = estimateCost(
      costInput(stack, [stack], sp, { stackName: "dev", region: "us-east-1", today: "2026-11-27" }),
    );
    const twf = r.models[0]?.criticalPath.find((s) => s.step === "triton-with-ft");
    // On the builder's 4 vCPUs the 16 core-hours alone took 240 minutes; on the compile host, under 30.
    expect(plan.build.smList).toEqual([86]);
    expect(sp.builders[0]?.compileHost.instanceType).toBe(compileHostFor([86]).type);
    expect(twf?.seconds).toBeLessThan(60 * 60);
    expect(compileSeconds(1, stack.builderInstance.vcpus)).toBeGreaterThan(
      4 * compileSeconds(1, compileHostFor([86]).vcpus),
    );
    // The compile host is priced per build: its hours from launch to the pushed image, at the table's price.
    const run = r.buildRuns.find((b) => b.builder === "compiler");
    const hourly = PRICE_TABLE.regions["us-east-1"]?.ec2OnDemandHourly.usd[compileHostFor([86]).type];
    expect(run?.compiles).toBe(true);
    expect(hourly).toBeGreaterThan(0);
    expect(run?.usd).toBeCloseTo((run?.hours ?? 0) * (hourly ?? 0), 6);
    expect(run?.hours).toBeGreaterThan((twf?.seconds ?? 0) / 3600);
  });

  it("runs the step over the compile host's connection, after its readiness check, and stops the host after it", async () => {
    const run = await runProgram(withOverrides(gpt2Config(), { build: { stopBuilderWhenDone: true } }), {
      stack: "dev",
    });
    const compilerIp = run.one("aws:ec2/eip:Eip", "compiler").state.publicIp;
    const builderIp = run.one("aws:ec2/eip:Eip", "builder").state.publicIp;
    expect(compilerIp).toBeDefined();
    expect(compilerIp).not.toBe(builderIp);
    const host = (name: string) =>
      (run.one("command:remote:Command", name).inputs.connection as { host?: unknown } | undefined)?.host;
    expect(host("build-triton-with-ft")).toBe(compilerIp);
    expect(host("build-config-triton-with-ft")).toBe(compilerIp);
    for (const step of ["host-ready", "fetch", "convert", "gemm", "bake"])
      expect(host(`build-${step}`)).toBe(builderIp);
    const twf = run.one("command:remote:Command", "build-triton-with-ft");
    expect(twf.options.dependsOn).toEqual(expect.arrayContaining([expect.stringMatching(/::build-compiler-ready$/)]));
    const stopped = run.one("aws:ec2transitgateway/instanceState:InstanceState", "build-compiler-stopped");
    expect(stopped.inputs.state).toBe("stopped");
    expect(stopped.inputs.instanceId).toBe(run.one("aws:ec2/instance:Instance", "compiler").id);
    expect(stopped.options.dependsOn).toEqual(
      expect.arrayContaining([expect.stringMatching(/::build-triton-with-ft$/)]),
    );
  });
});
