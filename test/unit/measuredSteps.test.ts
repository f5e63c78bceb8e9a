/**
 * Estimates that learn: the measurement lines a step's timer prints
 * (scripts/remote/measure-step.sh), the `buildStepTimes` output read back
 * (synth --measured), and a measured step time in place of the catalog's
 * assumption exactly while the step's input hash is unchanged.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { estimateCost, type CostReport } from "../../infra/cost";
import { diffMarkdown, summaryLines } from "../../infra/cost/format";
import { costInput } from "../../infra/cost/fromStack";
import { withMeasuredSteps } from "../../infra/cost/measured";
import type { StepTiming } from "../../infra/cost/input";
import { parseStepMeasurement, readMeasuredSteps, type MeasuredStep } from "../../infra/plan/measurements";
import { buildStackPlan } from "../../infra/plan/stack";
import { resolveStack } from "../../infra/resolve";
import { main } from "../../scripts/synth";
import { gpt2Config } from "../lib/fixtures";
import { REFERENCED_STACKS } from "../lib/mocks";
import { runProgram } from "../lib/pulumi";

const ROOT = path.join(__dirname, "..", "..");

describe("a step's measurement lines", () => {
  it("reads seconds, network bytes and the UTC time; the last of each wins", () => {
    const out = [
      "RESULT image=r@sha256:00",
      "RESULT step_seconds=5",
      "RESULT step_seconds=1834",
      "RESULT step_net_bytes=3000000080",
      "RESULT step_measured_at=2026-11-20T10:00:00Z",
    ].join("\n");
    expect(parseStepMeasurement(out)).toEqual({
      seconds: 1834,
      netBytes: 3000000080,
      measuredAt: "2026-11-20T10:00:00Z",
    });
  });

  it("a step without them, or with a malformed one, has no measurement", () => {
    expect(parseStepMeasurement("RESULT image=r@sha256:00\n")).toBeUndefined();
    expect(parseStepMeasurement("RESULT step_seconds=12\n")).toBeUndefined();
    expect(
      parseStepMeasurement("RESULT step_seconds=1.5\nRESULT step_measured_at=2026-11-20T10:00:00Z\n"),
    ).toBeUndefined();
  });
});

describe("the buildStepTimes output read back", () => {
  const entry: MeasuredStep = {
    step: "fetch",
    inputHash: "abc",
    seconds: 200,
    netBytes: 10,
    measuredAt: "2026-11-20T10:00:00Z",
  };

  it("takes `pulumi stack output --json` or that one output", () => {
    expect(readMeasuredSteps({ modelIds: ["gpt2"], buildStepTimes: [entry] }, "f")).toEqual([entry]);
    expect(readMeasuredSteps([entry], "f")).toEqual([entry]);
  });

  it("refuses another file, naming the entry", () => {
    expect(() => readMeasuredSteps({ modelIds: ["gpt2"] }, "out.json")).toThrow(
      /out\.json: expected the stack's outputs/,
    );
    expect(() => readMeasuredSteps([entry, { ...entry, step: "compile" }], "out.json")).toThrow(
      /buildStepTimes\[1\] is not/,
    );
    expect(() => readMeasuredSteps([{ ...entry, seconds: -1 }], "f")).toThrow(/\[0\]/);
  });
});

describe("a measured step time in the estimate", () => {
  const steps: StepTiming[] = [
    { id: "fetch", dependsOn: [], seconds: 900, inputHash: "h-fetch", basis: "assumed" },
    { id: "gemm", dependsOn: ["fetch"], seconds: 1200, inputHash: "h-gemm", basis: "assumed" },
  ];
  const at = (measuredAt: string, seconds: number, inputHash = "h-fetch"): MeasuredStep => ({
    step: "fetch",
    inputHash,
    seconds,
    netBytes: 0,
    measuredAt,
  });

  it("overrides the assumption of the step with the same input hash, and only that", () => {
    const out = withMeasuredSteps(steps, [at("2026-11-20T10:00:00Z", 240)]);
    expect(out[0]).toMatchObject({ seconds: 240, basis: "measured", measuredAt: "2026-11-20T10:00:00Z" });
    expect(out[1]).toEqual(steps[1]);
  });

  it("keeps the assumption when the step's inputs changed since the measurement", () => {
    expect(withMeasuredSteps(steps, [at("2026-11-20T10:00:00Z", 240, "h-fetch-before")])).toEqual(steps);
  });

  it("takes the latest of several measurements of the same inputs", () => {
    const out = withMeasuredSteps(steps, [at("2026-11-21T10:00:00Z", 300), at("2026-11-20T10:00:00Z", 240)]);
    expect(out[0]?.seconds).toBe(300);
  });

  function report(measured?: MeasuredStep[]): CostReport {
    const { stack } = resolveStack(gpt2Config(), {});
    if (!stack) throw new Error("fixture must resolve");
    const sp = buildStackPlan([stack], "dev", (p) => `h:${p}`);
    const hash = sp.models[0]?.plan.buildSteps.find((s) => s.id === "triton-with-ft")?.inputHash ?? "";
    const ctx = { stackName: "dev", region: "us-east-1", today: "2026-11-27" };
    const withHash = measured?.map((m) => ({ ...m, inputHash: m.inputHash === "current" ? hash : m.inputHash }));
    return estimateCost(costInput(stack, [stack], sp, withHash ? { ...ctx, measured: withHash } : ctx));
  }
  const compile = (inputHash: string): MeasuredStep => ({
    step: "triton-with-ft",
    inputHash,
    seconds: 25 * 60,
    netBytes: 9e9,
    measuredAt: "2026-11-20T10:00:00Z",
  });

  it("moves the first-deploy total and says 'measured on <date>' in the critical path and the PR comment", () => {
    const assumed = report();
    const measured = report([compile("current")]);
    const path = (r: CostReport) => r.models[0]?.criticalPath ?? [];
    const twf = (r: CostReport) => path(r).find((s) => s.step === "triton-with-ft");
    expect(twf(assumed)?.basis).toBe("assumed");
    expect(twf(measured)).toMatchObject({ seconds: 1500, basis: "measured", measuredAt: "2026-11-20T10:00:00Z" });
    expect(measured.models[0]?.firstDeploySeconds).not.toBe(assumed.models[0]?.firstDeploySeconds);
    const line = summaryLines(measured).find((l) => l.includes("critical path")) ?? "";
    expect(line).toMatch(/triton-with-ft 25 min \(measured on 2026-11-20\)/);
    expect(line).toMatch(/compile-host ready 5.0 min \(assumed\)/);
    const md = diffMarkdown("dev", assumed, measured);
    expect(md).toMatch(/^- gpt2 critical path: .*triton-with-ft 25 min \(measured on 2026-11-20\)/m);
    expect(md).toMatch(/^- gpt2 critical path: .*gemm \d+ min \(assumed\)/m);
    // A measurement of other inputs changes nothing.
    expect(report([compile("other")])).toEqual(assumed);
  });
});

describe("synth --measured", () => {
  it("reads a stack's exported outputs and prints which steps are measured and which assumed", () => {
    const out = fs.mkdtempSync(path.join(os.tmpdir(), "triton-ft-measured-"));
    const lines: string[] = [];
    const io = {
      cwd: ROOT,
      repoRoot: ROOT,
      stdout: (l: string) => lines.push(l),
      stderr: (l: string) => lines.push(l),
    };
    expect(main(["--stack", "dev", "--out", path.join(out, "plain")], io)).toBe(0);
    const plan = JSON.parse(fs.readFileSync(path.join(out, "plain", "plan.json"), "utf8")) as {
      buildSteps: Array<{ id: string; inputHash: string }>;
    };
    const hash = plan.buildSteps.find((s) => s.id === "fetch")?.inputHash;
    const file = path.join(out, "outputs.json");
    fs.writeFileSync(
      file,
      JSON.stringify({
        buildStepTimes: [
          { step: "fetch", inputHash: hash, seconds: 95, netBytes: 1, measuredAt: "2026-11-20T10:00:00Z" },
        ],
      }),
    );
    lines.length = 0;
    expect(main(["--stack", "dev", "--out", path.join(out, "measured"), "--measured", file], io)).toBe(0);
    expect(lines).toContain(`measured step times: 1 in ${file}`);
    expect(lines.join("\n")).toMatch(
      /gpt2: fetch 1\.6 min \(measured on 2026-11-20\); the catalog's figures: .*host-ready/,
    );
    const cost = JSON.parse(fs.readFileSync(path.join(out, "measured", "cost.json"), "utf8")) as CostReport;
    expect(cost.models[0]?.change.steps.find((s) => s.id === "fetch")).toMatchObject({ seconds: 95 });
    // A file that is not a stack's outputs is refused, not read as "nothing measured".
    fs.writeFileSync(file, "{}");
    lines.length = 0;
    expect(main(["--stack", "dev", "--out", path.join(out, "bad"), "--measured", file], io)).toBe(1);
    expect(lines.join("\n")).toMatch(/--measured: .*expected the stack's outputs/);
    fs.rmSync(out, { recursive: true, force: true });
  });
});

describe("the preview", () => {
  const SELF = "organization/triton-ft/test";
  afterEach(() => {
    REFERENCED_STACKS.clear();
    vi.restoreAllMocks();
  });

  /** The preview's info lines, with `times` as the last update's buildStepTimes (none: a first update). */
  async function previewLines(times: MeasuredStep[] | undefined): Promise<string[]> {
    REFERENCED_STACKS.clear();
    if (times) REFERENCED_STACKS.set(SELF, { name: SELF, outputs: { buildStepTimes: times }, secretOutputNames: [] });
    const lines: string[] = [];
    vi.spyOn(console, "log").mockImplementation((m: unknown) => void lines.push(String(m)));
    await runProgram(gpt2Config(), { preview: true });
    vi.restoreAllMocks();
    return lines;
  }

  it("estimates again with the stack's own measured step times, saying which are measured", async () => {
    const update = await runProgram(gpt2Config());
    const hashes = update.outputs.buildStepHashes as Record<string, string>;
    const twf: MeasuredStep = {
      step: "triton-with-ft",
      inputHash: hashes["triton-with-ft"] ?? "",
      seconds: 25 * 60,
      netBytes: 0,
      measuredAt: "2026-11-20T10:00:00Z",
    };
    const said = (await previewLines([twf])).filter((l) =>
      /own step times|: first deploy \d+ min; critical path: /.test(l),
    );
    expect(said).toEqual([
      expect.stringContaining("with this stack's own step times (1 measured, buildStepTimes of its last update"),
      expect.stringMatching(
        /gpt2: first deploy \d+ min; critical path: .*triton-with-ft 25 min \(measured on 2026-11-20\)/,
      ),
    ]);
    // A first update, or measurements of other inputs only: nothing more than the catalog's estimate.
    expect((await previewLines(undefined)).filter((l) => l.includes("own step times"))).toEqual([]);
    const stale = (await previewLines([{ ...twf, inputHash: "other" }])).find((l) =>
      /: first deploy \d+ min; critical path: /.test(l),
    );
    expect(stale).not.toMatch(/measured on/);
  });
});
