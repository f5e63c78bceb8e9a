/**
 * triton_with_ft's recipe layers moved off the critical path (plan/steps.ts
 * twf-layers, twf-layers-pull): the two steps and where they sit in the graph,
 * the seven existing steps' hashes untouched by them, the budgets keeping the
 * whole image, and the first-deploy estimate counting only the compile's
 * layers in triton_with_ft's push and gemm's pull.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { ASSUMED } from "../../infra/catalog/timings";
import { estimateCost } from "../../infra/cost";
import { costInput } from "../../infra/cost/fromStack";
import { servingInputs } from "../../infra/cost/time";
import { TRITON_WITH_FT_IMAGE_BYTES, TRITON_WITH_FT_RECIPE_LAYERS_BYTES } from "../../infra/model/sizing";
import { RECIPE_LAYERS, stepEstimates } from "../../infra/plan/budgets";
import { budgetInputs, stackSmList } from "../../infra/plan/steps";
import { STEP_IDS, runOrder, stepInputHashes, type StepId } from "../../infra/plan/stepGraph";
import { REPO_ROOT, repoPathHasher } from "../../infra/repoFiles";
import { resolveStack } from "../../infra/resolve";
import type { ResolvedStack } from "../../infra/config";
import { parseStackFile } from "../../infra/synth/stackFile";
import { gpt2Config } from "../lib/fixtures";
import { planOf, stackPlanOf } from "../lib/plan";
import { buildStackPlan } from "../../infra/plan/stack";

const ROOT = path.join(__dirname, "..", "..");
const NEW: readonly StepId[] = ["twf-layers", "twf-layers-pull"];
const EXISTING = STEP_IDS.filter((id) => !NEW.includes(id));

function committed(name: string): ResolvedStack {
  const file = parseStackFile(fs.readFileSync(path.join(ROOT, `Pulumi.${name}.yaml`), "utf8"), name);
  const { stack, problems } = resolveStack(file.raw, file.secrets, { stackName: name, today: "2026-11-29" });
  if (!stack) throw new Error(JSON.stringify(problems));
  return stack;
}

describe("the recipe-layers steps", () => {
  for (const name of ["dev", "prod"]) {
    it(`${name}: twf-layers on the compile host beside the compile, its pull on the builder before gemm, outside gemm's hash`, () => {
      const steps = planOf(committed(name)).buildSteps;
      const byId = (id: StepId) => {
        const s = steps.find((x) => x.id === id);
        if (!s) throw new Error(`no step ${id}`);
        return s;
      };
      expect(byId("twf-layers")).toMatchObject({ host: "compiler", dependsOn: [], producesImage: false });
      expect(runOrder(byId("twf-layers"))).toEqual([]);
      expect(byId("twf-layers-pull").host).toBeUndefined();
      expect(byId("twf-layers-pull").dependsOn).toEqual(["twf-layers"]);
      expect(runOrder(byId("twf-layers-pull"))).toEqual(["host-ready", "twf-layers"]);
      expect(byId("gemm").dependsOn).toEqual(["triton-with-ft"]);
      expect(runOrder(byId("gemm"))).toEqual(["host-ready", "triton-with-ft", "twf-layers-pull"]);
      expect(byId("convert").dependsOn).toEqual(["triton-with-ft", "fetch"]);
      expect(runOrder(byId("convert"))).toEqual(["triton-with-ft", "fetch", "twf-layers-pull"]);
      // Both read the inputs of triton_with_ft's content tag, as its step renders them.
      const keys = [
        "TRITON_VERSION",
        "FT_BACKEND_COMMIT",
        "FT_COMMIT",
        "SM_LIST",
        "DOCKERFILE_DIR",
        "ECR_REPOSITORY_URL",
      ];
      const of = (id: StepId) => Object.fromEntries(byId(id).config.filter(([k]) => keys.includes(k)));
      expect(of("twf-layers")).toEqual(of("triton-with-ft"));
      expect(of("twf-layers-pull")).toEqual(of("triton-with-ft"));
    });

    it(`${name}: the seven existing steps hash exactly as without the new steps`, () => {
      const stack = committed(name);
      const hasher = repoPathHasher(REPO_ROOT);
      const plan = planOf(stack, hasher);
      const withNew = Object.fromEntries(plan.buildSteps.map((s) => [s.id, s.inputHash]));
      // The graph as it was: the new steps gone, gemm waiting as it did.
      const before = plan.buildSteps
        .filter((s) => !NEW.includes(s.id))
        .map((s) => (s.id === "gemm" ? { ...s, runsAfter: ["host-ready", "triton-with-ft"] as StepId[] } : s))
        .map((s) => (s.id === "convert" ? { ...s, runsAfter: undefined } : s));
      const old = stepInputHashes(before, hasher);
      for (const id of EXISTING) expect(withNew[id], id).toBe(old[id]);
      expect(Object.keys(withNew).sort()).toEqual([...STEP_IDS].sort());
    });
  }

  it("a stack taking triton_with_ft from another (build.tritonWithFtFrom) has neither step, and gemm waits as before", () => {
    const raw = gpt2Config();
    raw.build = { ...raw.build, tritonWithFtFrom: { stackReference: "acme/triton-ft/dev" } };
    const { stack } = resolveStack(raw, {});
    if (!stack) throw new Error("fixture must resolve");
    const steps = planOf(stack).buildSteps;
    expect(steps.map((s) => s.id).filter((id) => NEW.includes(id))).toEqual([]);
    expect(runOrder(steps.find((s) => s.id === "gemm") ?? { dependsOn: [] })).toEqual(["host-ready", "triton-with-ft"]);
    expect(runOrder(steps.find((s) => s.id === "convert") ?? { dependsOn: [] })).toEqual(["triton-with-ft", "fetch"]);
  });
});

describe("the estimate with the recipe layers ahead", () => {
  const dev = committed("dev");
  const e = stepEstimates(budgetInputs(dev, stackSmList(dev)));
  const recipePush = TRITON_WITH_FT_RECIPE_LAYERS_BYTES / ASSUMED.ecrPushBytesPerSecond;
  const recipePull = TRITON_WITH_FT_RECIPE_LAYERS_BYTES / ASSUMED.ecrPullBytesPerSecond;

  it("the budgets keep the whole image: triton_with_ft's push and gemm's pull move all 30 GiB", () => {
    const push = e["triton-with-ft"];
    expect((push.parts["push compile layers"] ?? 0) + (push.parts[RECIPE_LAYERS.push] ?? 0)).toBeCloseTo(
      TRITON_WITH_FT_IMAGE_BYTES / ASSUMED.ecrPushBytesPerSecond,
      6,
    );
    for (const pull of [e.gemm, e.convert]) {
      expect((pull.parts["pull compile layers"] ?? 0) + (pull.parts[RECIPE_LAYERS.pull] ?? 0)).toBeCloseTo(
        TRITON_WITH_FT_IMAGE_BYTES / ASSUMED.ecrPullBytesPerSecond,
        6,
      );
    }
    // The recipe layers: the NGC base (16 GB × 0.51) and the pip layer (3.00 GiB × 0.999), about 10.6 GiB.
    expect(TRITON_WITH_FT_RECIPE_LAYERS_BYTES / 1024 ** 3).toBeCloseTo(10.6, 1);
    expect(e["twf-layers"].parts[RECIPE_LAYERS.push]).toBeCloseTo(recipePush, 6);
    expect(e["twf-layers-pull"].seconds).toBeCloseTo(recipePull, 6);
  });

  it("convert's pull shrinks by the recipe layers too (seed-models' GPT-J model, whose convert was on its path)", () => {
    const file = parseStackFile(
      fs.readFileSync(path.join(ROOT, "test/stacks/models/Pulumi.seed-models.yaml"), "utf8"),
      "seed-models",
    );
    const { stack, models, problems } = resolveStack(file.raw, file.secrets, {
      stackName: "seed-models",
      today: "2026-11-29",
    });
    if (!stack || !models) throw new Error(JSON.stringify(problems));
    const sp = buildStackPlan(models, "seed-models", (p) => `h:${p}`);
    const input = costInput(stack, models, sp, { stackName: "seed-models", region: "us-east-1", today: "2026-11-29" });
    // input.models follows the resolved models' order (cost/fromStack.ts modelEntries).
    const i = models.findIndex((m) => m.model.family === "gptj");
    const kogpt = models[i];
    const steps = input.models[i]?.build.steps;
    if (!kogpt || !steps) throw new Error("no GPT-J model in seed-models");
    const full = stepEstimates(budgetInputs(kogpt, stackSmList(kogpt))).convert.seconds;
    expect(steps.find((s) => s.id === "convert")?.seconds).toBeCloseTo(full - recipePull, 6);
    // Convert starts after the layers' pull, not before: the graph the path is taken over says so.
    expect(steps.find((s) => s.id === "convert")?.dependsOn).toContain("twf-layers-pull");
  });

  it("dev's first deploy is at most 60 minutes; the push and gemm's pull on its critical path shrink by the recipe layers", () => {
    const sp = stackPlanOf(dev, (p) => `h:${p}`, "dev");
    const input = costInput(dev, [dev], sp, { stackName: "dev", region: "us-east-1", today: "2026-11-29" });
    const r = estimateCost(input);
    const m = r.models[0];
    if (!m) throw new Error("no model");
    expect(m.firstDeploySeconds).toBeLessThanOrEqual(60 * 60);
    const seg = (id: string) => m.criticalPath.find((s) => s.step === id)?.seconds ?? NaN;
    expect(seg("triton-with-ft")).toBeCloseTo(e["triton-with-ft"].seconds - recipePush, 6);
    expect(seg("gemm")).toBeCloseTo(e.gemm.seconds - recipePull, 6);
    // The new steps finish before the compile: neither is on the path, and neither is a leaf the serving side waits for.
    expect(m.criticalPath.map((s) => s.step)).not.toContain("twf-layers");
    expect(m.criticalPath.map((s) => s.step)).not.toContain("twf-layers-pull");
    const steps = input.models[0]?.build.steps ?? [];
    expect(servingInputs(steps).sort()).toEqual(["bake", "gateway-image"]);
  });
});
