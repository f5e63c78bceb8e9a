/**
 * The cost and time estimate (infra/cost): golden figures for the committed
 * dev and prod stacks with every line of the sum (test/unit/golden/cost/,
 * UPDATE_GOLDEN=1 rewrites them for review), the change g5.12xlarge ->
 * p4d.24xlarge on prod, the token formula on hand numbers, the critical path
 * and a change's re-run steps on a small graph, an unknown region, and the
 * one-source rule: the budgets and the autoscaler use the estimate's figures.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { ASSUMED, NODE_BOOT_SECONDS } from "../../infra/catalog/timings";
import { estimateCost, type CostReport } from "../../infra/cost";
import { diffLines, diffMarkdown, summaryLines } from "../../infra/cost/format";
import { costInput } from "../../infra/cost/fromStack";
import type { ModelCostInput, StackCostInput, StepTiming } from "../../infra/cost/input";
import { PRICE_TABLE } from "../../infra/catalog/prices";
import { estimateChange, estimateTime, longestPath, changeInputs } from "../../infra/cost/time";
import { estimateTokens, meanContextShare } from "../../infra/cost/tokens";
import { resolveStack } from "../../infra/resolve";
import type { ResolvedStack } from "../../infra/config";
import { BAKE_BASE_PUSH, BUDGET_FACTOR, RECIPE_LAYERS, stepEstimates } from "../../infra/plan/budgets";
import { budgetInputs } from "../../infra/plan/steps";
import { parseStackFile } from "../../infra/synth/stackFile";
import { planOf, stackPlanOf } from "../lib/plan";
import { gpt2Config, type RawConfig } from "../lib/fixtures";
import { buildStackPlan } from "../../infra/plan/stack";
import { SEED_CANARY_STACK } from "../lib/modelsForm";

const ROOT = path.join(__dirname, "..", "..");
const GOLDEN = path.join(__dirname, "golden", "cost");
const UPDATE = process.env.UPDATE_GOLDEN === "1";
const TODAY = "2026-11-25";
const H = 730;
const usd = (type: string) => PRICE_TABLE.regions["us-east-1"]?.ec2OnDemandHourly.usd[type] ?? NaN;

function stackFile(name: string, edit: (text: string) => string = (t) => t): { stack: ResolvedStack; region?: string } {
  const file = parseStackFile(edit(fs.readFileSync(path.join(ROOT, `Pulumi.${name}.yaml`), "utf8")), name);
  const { stack, problems } = resolveStack(file.raw, file.secrets, { stackName: name, today: TODAY });
  if (!stack) throw new Error(JSON.stringify(problems));
  return { stack, region: file.awsRegion };
}

function report(name: string, edit?: (text: string) => string, region?: string): CostReport {
  const s = stackFile(name, edit);
  const sp = stackPlanOf(s.stack, (p) => `h:${p}`, name);
  return estimateCost(costInput(s.stack, [s.stack], sp, { stackName: name, region: region ?? s.region, today: TODAY }));
}

/** Every line of the sum with its arithmetic, then the three figures per model. */
function render(r: CostReport): string {
  const out = [
    `stack ${r.stack} (${r.region}): $${r.monthlyUsd.min.toFixed(2)} .. $${r.monthlyUsd.max.toFixed(2)} per month`,
  ];
  for (const i of r.items)
    out.push(
      `${i.scope} | ${i.label} | ${i.basis} | ${i.monthlyUsd.min.toFixed(2)} | ${i.monthlyUsd.max.toFixed(2)} | ${i.price?.source ?? "unpriced"}`,
    );
  out.push(...summaryLines(r));
  return out.join("\n") + "\n";
}

function golden(rel: string, actual: string): void {
  const file = path.join(GOLDEN, rel);
  if (UPDATE) {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, actual);
  }
  if (!fs.existsSync(file)) throw new Error(`missing golden file ${file}; run with UPDATE_GOLDEN=1 and review it`);
  expect(actual, `golden ${rel}`).toBe(fs.readFileSync(file, "utf8"));
}

/** The several-model example stack (test/stacks/models): every model's lines, both builders. */
function seedModelsReport(rel = "test/stacks/models/Pulumi.seed-models.yaml"): CostReport {
  const file = parseStackFile(fs.readFileSync(path.join(ROOT, rel), "utf8"), rel);
  const { stack, models, problems } = resolveStack(file.raw, file.secrets, { stackName: "seed-models", today: TODAY });
  if (!stack || !models) throw new Error(JSON.stringify(problems));
  const sp = buildStackPlan(models, "seed-models", (p) => `h:${p}`);
  return estimateCost(costInput(stack, models, sp, { stackName: "seed-models", region: file.awsRegion, today: TODAY }));
}

describe("golden estimate of the several-model example", () => {
  it("seed-models: each model's lines and each builder, summed", () => {
    const r = seedModelsReport();
    expect(r.warnings).toEqual([]);
    expect(r.monthlyUsd.max).toBeCloseTo(
      r.items.reduce((a, i) => a + i.monthlyUsd.max, 0),
      6,
    );
    // Every model is priced on its own instance type, and both builders appear.
    const scopes = new Set(r.items.map((i) => i.scope));
    for (const id of ["h2ogpt-6-9b", "kogpt-6b", "codegen-2b-mono"]) expect([...scopes].join(" ")).toContain(id);
    expect(r.items.map((i) => i.label).join(" ")).toContain("builder (g6.4xlarge)");
    golden("seed-models.txt", render(r));
  });
});

describe("a canary (issue 36): its extra $/month and its minutes to serve", () => {
  const CANARY = SEED_CANARY_STACK;

  it("seed-canary: the canary's lines are its own, and the summary says what it adds and when it serves", () => {
    const before = seedModelsReport();
    const r = seedModelsReport(CANARY);
    const canary = r.models.find((m) => m.id === "kogpt-6b-canary");
    expect(canary?.canary).toEqual({ of: "kogpt-6b", weight: 10 });
    const own = r.items.filter((i) => i.scope === "kogpt-6b-canary" || i.label.includes("kogpt-6b-canary"));
    expect(own.length).toBeGreaterThan(0);
    // The stack grows by the canary's lines (its nodes, volumes, repository, its image pulls through NAT) and,
    // of the others, only the lines priced at the assumed traffic, which is the stack's capacity (the canary's pods add to it).
    const key = (i: { scope: string; label: string }) => `${i.scope} | ${i.label}`;
    const was = new Map(before.items.map((i) => [key(i), i.monthlyUsd.max]));
    const moved = r.items.filter((i) => !own.includes(i) && was.get(key(i)) !== i.monthlyUsd.max).map(key);
    expect(moved).toEqual([
      "stack | NLB capacity units at the assumed traffic",
      "stack | gateway store ECPUs at the assumed traffic",
    ]);
    expect(r.items.length).toBe(before.items.length + own.length);
    const line = summaryLines(r).find((l) => l.includes("is a canary of"));
    // Added to the live stack it runs only its own steps (gemm, bake), then its nodes and pods.
    expect(line).toMatch(
      /kogpt-6b-canary is a canary of kogpt-6b \(10 % of its new requests\): \$[\d,]+\/month more; serving [\d.]+ min after it is added \(runs gemm, bake\)/,
    );
    expect(line).not.toMatch(/fetch|convert/);
    golden("seed-canary.txt", render(r));
  });

  it("--diff and the PR comment: adding it runs its own steps only, and says what it costs", () => {
    const lines = diffLines(seedModelsReport(), seedModelsReport(CANARY));
    const line = lines.find((l) => l.includes("kogpt-6b-canary:"));
    expect(line).toMatch(/canary of kogpt-6b \(10 % of its new requests\), \$[\d,]+\/month/);
    expect(line).toMatch(/re-runs gemm, bake/);
    expect(line).not.toMatch(/re-runs[^;]*fetch/);
    // The stable build of the model: nothing re-runs, nothing rolls.
    expect(lines.find((l) => l.startsWith("  kogpt-6b:"))).toMatch(/this change: no build or rollout/);
    expect(diffMarkdown("seed-models", seedModelsReport(), seedModelsReport(CANARY))).toContain("canary of kogpt-6b");
  });
});

describe("a model on a builder that another further model opened", () => {
  it("waits for that model's triton_with_ft and host check, not the first model's", () => {
    // CodeGen (L4) first: the A10G builder is opened by h2oGPT, which KoGPT then shares.
    const rel = "test/stacks/models/Pulumi.seed-models.yaml";
    const text = fs.readFileSync(path.join(ROOT, rel), "utf8");
    const codegen = text.slice(text.indexOf("    codegen-2b-mono:"), text.indexOf("  triton-ft:build:"));
    const reordered = text
      .replace(codegen, "")
      .replace("  triton-ft:models:\n", `  triton-ft:models:\n${codegen}`)
      .replace("      - g5.4xlarge\n      - g6.4xlarge", "      - g6.4xlarge\n      - g5.4xlarge");
    const file = parseStackFile(reordered, rel);
    const { stack, models, problems } = resolveStack(file.raw, file.secrets, {
      stackName: "seed-models",
      today: TODAY,
    });
    if (!stack || !models) throw new Error(JSON.stringify(problems));
    const sp = buildStackPlan(models, "seed-models", (p) => `h:${p}`);
    expect(sp.models.map((m) => [m.id, m.builder])).toEqual([
      ["codegen-2b-mono", 0],
      ["h2ogpt-6-9b", 1],
      ["kogpt-6b", 1],
    ]);
    const entries = costInput(stack, models, sp, {
      stackName: "seed-models",
      region: "us-east-1",
      today: TODAY,
    }).models;
    const stepsOf = (id: string) =>
      new Map((entries.find((m) => m.id === id)?.build.steps ?? []).map((x) => [x.id, x]));
    const opener = stepsOf("h2ogpt-6-9b");
    const sharer = stepsOf("kogpt-6b");
    const first = stepsOf("codegen-2b-mono");
    // The opener's builder steps (those no model step of the sharer re-runs) lead the sharer's path ...
    // The opener's builder steps lead the sharer's path (the same steps, by hash) ...
    for (const id of ["host-ready", "triton-with-ft"]) {
      expect(sharer.get(id)?.inputHash, id).toBeDefined();
      expect(sharer.get(id)?.inputHash, id).toBe(opener.get(id)?.inputHash);
      // ... not the first model's: another GPU family's triton_with_ft on another builder.
      expect(sharer.get(id)?.inputHash, id).not.toBe(first.get(id)?.inputHash);
    }
  });
});

describe("golden estimates of the committed stacks", () => {
  for (const name of ["dev", "prod"])
    it(`${name}: every component of the sum, minutes to serve, $/1k tokens`, () => {
      const r = report(name);
      expect(r.warnings).toEqual([]);
      // The sum is the sum of its lines.
      expect(r.monthlyUsd.max).toBeCloseTo(
        r.items.reduce((a, i) => a + i.monthlyUsd.max, 0),
        6,
      );
      golden(`${name}.txt`, render(r));
    });

  it("dev's GPU line is its fixed node group (one replica plus the rollout's surge slot) at g5.xlarge's price", () => {
    const gpu = report("dev").items.find((i) => i.id === "gpu-nodes");
    expect(gpu?.monthlyUsd.min).toBeCloseTo(2 * H * usd("g5.xlarge"), 6);
  });
});

describe("a change: prod from g5.12xlarge to p4d.24xlarge", () => {
  const before = report("prod");
  const after = report("prod", (t) =>
    t
      .replace("instanceType: g5.12xlarge", "instanceType: p4d.24xlarge")
      .replace("builderInstanceType: g5.4xlarge", "builderInstanceType: p4d.24xlarge"),
  );

  it("moves the GPU line by the node counts times the price difference", () => {
    const gpu = (r: CostReport) => r.items.find((i) => i.id === "gpu-nodes" && i.scope === "gpt-j-6b");
    // TP 2: two pods per g5.12xlarge (4 GPUs), four per p4d.24xlarge (8); autoscaling 2..6 pods.
    expect(before.models[0]?.nodes).toEqual({ min: 1, max: 3 });
    expect(after.models[0]?.nodes).toEqual({ min: 1, max: 2 });
    const dMin = (gpu(after)?.monthlyUsd.min ?? 0) - (gpu(before)?.monthlyUsd.min ?? 0);
    const dMax = (gpu(after)?.monthlyUsd.max ?? 0) - (gpu(before)?.monthlyUsd.max ?? 0);
    expect(dMin).toBeCloseTo(H * (usd("p4d.24xlarge") - usd("g5.12xlarge")), 6);
    expect(dMax).toBeCloseTo(H * (2 * usd("p4d.24xlarge") - 3 * usd("g5.12xlarge")), 6);
  });

  it("prints the change: money, first deploy, new replica, $/1k tokens, and what it re-runs", () => {
    const lines = diffLines(before, after);
    const dMin = after.monthlyUsd.min - before.monthlyUsd.min;
    expect(lines[0]).toBe(
      `cost: +$${Math.round(dMin).toLocaleString("en-US")}/month at min, +$${Math.round(after.monthlyUsd.max - before.monthlyUsd.max).toLocaleString("en-US")} at max ($4,572–$12,886 → $${Math.round(after.monthlyUsd.min).toLocaleString("en-US")}–$${Math.round(after.monthlyUsd.max).toLocaleString("en-US")})`,
    );
    // A100 hosts boot slower (NVSwitch); the compile host, not the builder, compiles triton_with_ft (one SM either way).
    expect(lines[1]).toMatch(
      /gpt-j-6b: first deploy 84 min → 88 min, new replica 10 min → 14 min, \$\/1k tokens \$0\.0028 → \$0\.0021, this change: \d+ min \(re-runs host-ready, twf-layers, twf-layers-pull, triton-with-ft, .*; rolls 2 pod\(s\)\)/,
    );
    // What moved the first-deploy total: only the node boot.
    expect(lines[2]).toBe("    gpt-j-6b first deploy 84 min → 88 min: GPU node boot 3.0 min → 7.0 min");
    expect(lines[3]).toMatch(/^ {2}\+\$19,636\/month {2}GPU nodes: 1\.\.2 × p4d\.24xlarge/);
    const md = diffMarkdown("prod", before, after);
    expect(md).toContain("before ████░░░░░░░");
    expect(md).toContain("after  ██████████████░░░░░░░░░░░░░░ $16,462–$32,511/month");
  });

  it("a change that touches nothing the build or the pods read takes no time", () => {
    const same = report("prod", (t) => t.replace("198.51.100.0/28", "198.51.100.16/28"));
    expect(diffLines(before, same)[1]).toMatch(/this change: no build or rollout/);
  });
});

describe("one source for the rates", () => {
  it("the step budgets are BUDGET_FACTOR × the estimate's step seconds", () => {
    const s = stackFile("prod").stack;
    const plan = planOf(s, (p) => `h:${p}`);
    const sp = stackPlanOf(s, (p) => `h:${p}`);
    const steps = costInput(s, [s], sp, { stackName: "prod", region: "us-east-1", today: TODAY }).models[0]?.build
      .steps;
    const e = stepEstimates(budgetInputs(s, plan.build.smList));
    for (const step of plan.buildSteps) {
      const seconds = steps?.find((x) => x.id === step.id)?.seconds ?? NaN;
      // The budget keeps the bake's push of the base layers (a registry that refuses the mount uploads them);
      // the estimate leaves out exactly that part, since this stack's own triton_with_ft repository is mounted from.
      // Likewise triton_with_ft's push and the pulls of convert and gemm keep the recipe layers the twf-layers
      // steps moved ahead (a cache miss moves the whole image); the estimate leaves them out.
      const leftOut: Partial<Record<string, number>> = {
        bake: e.bake.parts[BAKE_BASE_PUSH],
        "triton-with-ft": e["triton-with-ft"].parts[RECIPE_LAYERS.push],
        convert: e.convert.parts[RECIPE_LAYERS.pull],
        gemm: e.gemm.parts[RECIPE_LAYERS.pull],
      };
      const mounted = step.id in leftOut ? (leftOut[step.id] ?? NaN) : 0;
      expect(mounted, step.id).toBeGreaterThanOrEqual(0);
      expect(step.timeouts.create, step.id).toBe(`${Math.ceil((BUDGET_FACTOR * (seconds + mounted)) / 60)}m`);
    }
    // 30 GiB at 50 MiB/s.
    expect(e.bake.parts[BAKE_BASE_PUSH]).toBeCloseTo((30 * 1024) / 50, 6);
  });

  it("the bake's base layers are mounted from this stack's own triton_with_ft, pushed in full when it is taken from another stack", () => {
    const bakeSeconds = (raw: RawConfig) => {
      const { stack: st } = resolveStack(raw, {});
      if (!st) throw new Error("fixture must resolve");
      const input = costInput(
        st,
        [st],
        stackPlanOf(st, (p) => `h:${p}`),
        {
          stackName: "dev",
          region: "us-east-1",
          today: TODAY,
        },
      );
      return input.models[0]?.build.steps.find((x) => x.id === "bake")?.seconds ?? NaN;
    };
    const own = bakeSeconds(gpt2Config());
    const cfg = gpt2Config();
    cfg.build = { ...cfg.build, tritonWithFtFrom: { stackReference: "acme/triton-ft/dev" } };
    const taken = bakeSeconds(cfg);
    // The mount saves exactly the base's 30 GiB at the push rate; the rest (the weights, the build context) stays.
    expect(taken - own).toBeCloseTo((30 * 1024 ** 3) / ASSUMED.ecrPushBytesPerSecond, 6);
    expect(own).toBeGreaterThan(60);
  });

  it("a new replica takes the autoscaler's expected cold start", () => {
    const s = stackFile("prod").stack;
    const plan = planOf(s, (p) => `h:${p}`);
    const r = estimateCost(
      costInput(
        s,
        [s],
        stackPlanOf(s, (p) => `h:${p}`),
        { stackName: "prod", region: "us-east-1", today: TODAY },
      ),
    );
    expect(r.models[0]?.newReplicaSeconds).toBe(plan.autoscaling?.expectedColdStartSeconds);
  });
});

describe("an unknown region", () => {
  it("warns and prices nothing, but still times the stack and counts its tokens", () => {
    const r = report("dev", undefined, "ap-south-2");
    expect(r.priced).toBe(false);
    expect(r.items).toEqual([]);
    expect(r.monthlyUsd).toEqual({ min: 0, max: 0 });
    expect(r.warnings[0]).toMatch(/no prices for ap-south-2/);
    expect(r.models[0]?.usdPer1kTokens).toBeUndefined();
    expect(r.models[0]?.firstDeploySeconds).toBeGreaterThan(0);
    expect(summaryLines(r)).toContain(`  warning: ${r.warnings[0]}`);
  });
});

// --- Hand-built inputs ---

const step = (id: string, seconds: number, dependsOn: string[] = [], inputHash = id): StepTiming => ({
  id,
  seconds,
  dependsOn,
  inputHash,
});
const STEPS = [
  step("host-ready", 600),
  step("triton-with-ft", 3000, ["host-ready"]),
  step("fetch", 900, ["host-ready"]),
  step("convert", 500, ["triton-with-ft", "fetch"]),
  step("gemm", 1200, ["triton-with-ft"]),
  step("bake", 700, ["triton-with-ft", "fetch", "convert", "gemm"]),
  step("gateway-image", 480, ["host-ready"]),
];

function model(over: Partial<ModelCostInput> = {}): ModelCostInput {
  return {
    id: "m",
    instanceType: "g5.12xlarge",
    gpusPerNode: 4,
    podsPerNode: 2,
    tensorParallel: 2,
    nodes: { min: 1, max: 3 },
    replicas: { min: 2, max: 6 },
    autoscaled: true,
    capacityType: "on-demand",
    nodeDiskGiB: 100,
    decode: {
      maxBatchSize: 8,
      maxInputLen: 1000,
      maxOutputLen: 500,
      layers: 28,
      memoryBandwidthGBps: 600,
      weightsBytesPerGpu: 6e9,
      kvCacheBytesPerGpu: 1.5e9,
    },
    image: { baseBytes: 30 * 1024 ** 3, weightsBytes: 12e9 },
    build: { builder: "b", steps: STEPS },
    serving: {
      nodeBootSeconds: 180,
      pullSeconds: 800,
      expectedPullSeconds: 300,
      loadSeconds: 150,
      nlbRegistrationSeconds: 180,
      preStopSeconds: 60,
      nodesWithCluster: false,
      rolloutHash: "r1",
    },
    ...over,
  };
}

function stack(over: Partial<StackCostInput> = {}): StackCostInput {
  return {
    stack: "t",
    region: "us-east-1",
    cluster: {
      mode: "create",
      support: "standard",
      controlPlaneSeconds: 900,
      systemNodes: { instanceType: "t3.large", count: 2, diskGiB: 20 },
    },
    natGateways: 1,
    loadBalancer: { scheme: "internal", publicAddresses: 0, provisionSeconds: 600 },
    builders: [
      { id: "b", instanceType: "g5.4xlarge", diskGiB: 200, iops: 6000, throughputMiBps: 500, stopWhenDone: true },
    ],
    registries: [],
    kmsKeys: 0,
    traffic: { utilisation: 0.5, nlbBytesPerToken: 200, pullsPerNodePerMonth: 2 },
    models: [model()],
    ...over,
  };
}

describe("$ per 1k tokens", () => {
  it("is the bandwidth-bound formula on hand numbers", () => {
    const m = model();
    const share = meanContextShare(1000, 500);
    expect(share).toBeCloseTo(1250 / 1500, 12);
    const t = estimateTokens(m, 5.672);
    // 8 sequences × 0.5 × 600 GB/s ÷ (6 GB + 1.5 GB × 1250/1500) = 2400 / 7.25 tokens/s.
    expect(t.tokensPerSecondPerPod.central).toBeCloseTo(2400 / 7.25, 9);
    expect(t.tokensPerSecondPerPod.low).toBeCloseTo(2400 / 7.5, 9);
    expect(t.tokensPerSecondPerPod.high).toBeCloseTo(3840 / 7.25, 9);
    // Half a g5.12xlarge per pod: $2.836/h over 331 tokens/s.
    expect(t.usdPer1kTokens?.central).toBeCloseTo((2.836 / ((2400 / 7.25) * 3600)) * 1000, 12);
    expect(t.usdPer1kTokens?.high).toBeCloseTo((2.836 / ((2400 / 7.5) * 3600)) * 1000, 12);
  });

  it("a very small model is held at the per-layer step floor, not its bandwidth", () => {
    const tiny = model({ decode: { ...model().decode, layers: 2, weightsBytesPerGpu: 1e6, kvCacheBytesPerGpu: 1e5 } });
    // 2 layers × 50 µs: at most 8 ÷ 100 µs = 80,000 tokens/s, whatever the bytes.
    expect(estimateTokens(tiny, undefined).tokensPerSecondPerPod.high).toBeCloseTo(80_000, 6);
  });
});

describe("minutes to serve", () => {
  it("the longest path through the step graph", () => {
    const { finish, pathTo } = longestPath(STEPS, (s) => s.seconds);
    expect(finish.get("bake")).toBe(600 + 3000 + 1200 + 700);
    expect(pathTo("bake").map((s) => s.step)).toEqual(["host-ready", "triton-with-ft", "gemm", "bake"]);
  });

  it("first deploy: builder launch, the build, then node boot (Karpenter), pull, load and the NLB's registration", () => {
    const t = estimateTime(stack(), model(), 120);
    // The NLB (control plane 900 s + 600 s) is ready long before the pods: only its target registration follows them.
    expect(t.firstDeploySeconds).toBe(120 + 5500 + 180 + 800 + 150 + 180);
    expect(t.criticalPath.map((s) => s.step)).toEqual([
      "builder launch",
      "host-ready",
      "triton-with-ft",
      "gemm",
      "bake",
      "GPU node boot",
      "image pull",
      "model load",
      "NLB registration",
    ]);
    expect(t.newReplicaSeconds).toBe(180 + 300 + 150);
  });

  it("first deploy waits for the cluster when the build is shorter, and a fixed node group boots with it", () => {
    const quick = model({
      build: { builder: "b", steps: [step("bake", 60)] },
      serving: { ...model().serving, nodesWithCluster: true },
    });
    const t = estimateTime(stack(), quick, 120);
    expect(t.firstDeploySeconds).toBe(900 + 180 + 800 + 150 + 180);
    expect(t.criticalPath[0]?.step).toBe("EKS control plane");
  });

  it("the NLB is provisioned beside the build: on the path only when it is ready after the pods", () => {
    // An NLB slower than the build and the pods: control plane, NLB provision, registration.
    const slowNlb = stack({ loadBalancer: { scheme: "internal", publicAddresses: 0, provisionSeconds: 9000 } });
    const t = estimateTime(slowNlb, model(), 120);
    expect(t.firstDeploySeconds).toBe(900 + 9000 + 180);
    expect(t.criticalPath.map((s) => s.step)).toEqual(["EKS control plane", "NLB provision", "NLB registration"]);
    // An existing cluster: the NLB starts at once.
    const existing = estimateTime({ ...slowNlb, cluster: { mode: "existing" } }, model(), 120);
    expect(existing.firstDeploySeconds).toBe(9000 + 180);
  });

  it("a change re-runs only the steps whose hashes differ, then rolls the pods", () => {
    const before = changeInputs(model(), true);
    const changedBake = changeInputs(
      model({ build: { builder: "b", steps: STEPS.map((s) => (s.id === "bake" ? { ...s, inputHash: "new" } : s)) } }),
      true,
    );
    const c = estimateChange(before, changedBake, 120);
    expect(c.changedSteps).toEqual(["bake"]);
    expect(c.seconds).toBe(120 + 700 + 2 * (800 + 150 + 180 + 60));
    const none = estimateChange(before, changeInputs(model(), true), 120);
    expect(none).toMatchObject({ seconds: 0, changedSteps: [], rollout: false });
    const resized = estimateChange(
      before,
      changeInputs(model({ instanceType: "p4d.24xlarge", serving: { ...model().serving, rolloutHash: "r2" } }), true),
      120,
    );
    expect(resized.path.map((s) => s.step)).toEqual(["GPU node boot", "roll 2 pod(s)"]);
  });
});

describe("lines that depend on the input", () => {
  it("spot and reservations say what the on-demand figure means for them", () => {
    const spot = estimateCost(stack({ models: [model({ capacityType: "spot" })] }));
    expect(spot.items.find((i) => i.id === "gpu-nodes")?.note).toMatch(/at most this.*spot discount is not priced/);
    const reserved = estimateCost(stack({ models: [model({ capacityType: "reserved" })] }));
    expect(reserved.items.find((i) => i.id === "gpu-nodes")?.note).toMatch(/reservations bill at the on-demand rate/);
  });

  it("the gateway's store is priced only when the stack has one: the managed cache's data and ECPUs, or the in-cluster volume", () => {
    expect(estimateCost(stack()).items.some((i) => i.id.startsWith("store-"))).toBe(false);
    const r = estimateCost(stack({ store: { mode: "managed", storedGiB: 0.1, ecpuPerRequest: 4 } }));
    const data = r.items.find((i) => i.id === "store-data");
    expect(data?.monthlyUsd.min).toBeCloseTo(0.1 * H * 0.084, 9);
    // Requests of maxOutputLen tokens from every pod at the assumed utilisation, at each end of the replica range.
    const m = model();
    const tps = estimateTokens(m, undefined).tokensPerSecondPerPod.central;
    const requests = (replicas: number) => (replicas * tps * 0.5 * 3600 * H) / m.decode.maxOutputLen;
    const ecpu = r.items.find((i) => i.id === "store-ecpu");
    expect(ecpu?.monthlyUsd.min).toBeCloseTo(((requests(2) * 4) / 1e6) * 0.0023, 9);
    expect(ecpu?.monthlyUsd.max).toBeCloseTo(((requests(6) * 4) / 1e6) * 0.0023, 9);
    const volume = estimateCost(stack({ store: { mode: "inCluster", volumeGiB: 3 } })).items.filter((i) =>
      i.id.startsWith("store-"),
    );
    expect(volume.map((i) => [i.id, i.monthlyUsd.min])).toEqual([["store-volume", 3 * 0.08]]);
  });

  it("a KMS key is a key-month each", () => {
    expect(estimateCost(stack()).items.some((i) => i.id === "kms-keys")).toBe(false);
    expect(estimateCost(stack({ kmsKeys: 1 })).items.find((i) => i.id === "kms-keys")?.monthlyUsd).toEqual({
      min: 1,
      max: 1,
    });
  });

  it("an instance type without an on-demand price is left out with a warning, not guessed", () => {
    const r = estimateCost(stack({ models: [model({ instanceType: "p5e.48xlarge" })] }));
    expect(r.warnings.join("\n")).toMatch(/no on-demand price for p5e\.48xlarge.*Capacity Blocks/);
    const gpu = r.items.find((i) => i.id === "gpu-nodes");
    expect(gpu?.price).toBeUndefined();
    expect(gpu?.monthlyUsd).toEqual({ min: 0, max: 0 });
    expect(r.models[0]?.usdPer1kTokens).toBeUndefined();
  });

  it("an existing cluster and network bring no control plane, system nodes or NAT", () => {
    const r = estimateCost(stack({ cluster: { mode: "existing" }, natGateways: 0 }));
    const ids = r.items.map((i) => i.id);
    for (const id of ["eks-control-plane", "system-nodes", "nat-gateways", "nat-image-pulls-m", "kms-keys"])
      expect(ids).not.toContain(id);
  });

  it("a builder that is never stopped pays its instance hours; a stopped one its volume and address", () => {
    const never = estimateCost(stack({ builders: [{ ...stack().builders[0]!, stopWhenDone: false }] }));
    expect(never.items.find((i) => i.id === "builder-b-instance")?.monthlyUsd.min).toBeCloseTo(
      H * usd("g5.4xlarge"),
      6,
    );
    const stopped = estimateCost(stack());
    expect(stopped.items.some((i) => i.id === "builder-b-instance")).toBe(false);
    expect(stopped.buildRuns[0]?.usd).toBeCloseTo(((120 + 5500) / 3600) * usd("g5.4xlarge"), 9);
  });

  it("extended support bills the extended-support rate for the control plane", () => {
    const r = estimateCost(
      stack({
        cluster: {
          mode: "create",
          support: "extended",
          controlPlaneSeconds: 900,
          systemNodes: { instanceType: "t3.large", count: 2, diskGiB: 20 },
        },
      }),
    );
    expect(r.items.find((i) => i.id === "eks-control-plane")?.monthlyUsd.min).toBeCloseTo(H * 0.6, 9);
  });
});

describe("assumptions the figures state", () => {
  it("cost.json carries the timing rates with their kind and the builder launch the time uses", () => {
    const r = estimateCost(stack());
    expect(r.rates.some((x) => x.kind === "measured")).toBe(true);
    expect(r.rates.every((x) => x.basis.length > 0)).toBe(true);
    expect(ASSUMED.builderLaunchSeconds).toBeGreaterThan(0);
    expect(NODE_BOOT_SECONDS.A10G).toBe(model().serving.nodeBootSeconds);
  });
});
