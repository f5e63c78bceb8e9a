import { describe, expect, it } from "vitest";
import { runProgram, type ProgramRun } from "../lib/pulumi";
import { GPT2_REVISION, gpt2Config, withOverrides, type RawConfig } from "../lib/fixtures";
import { resolveStack } from "../../infra/resolve";
import type { ResolvedStack } from "../../infra/config";
import { buildSteps } from "../lib/plan";
import {
  STEP_IDS,
  bashQuote,
  downstreamOf,
  parseImageResult,
  renderStepConfig,
  requireImageResult,
  stepInputHashes,
  topologicalOrder,
  type StepDefinition,
  type StepId,
} from "../../infra/plan/stepGraph";
import { execFileSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

function resolved(cfg: RawConfig): ResolvedStack {
  const { stack, problems } = resolveStack(cfg, { hfToken: false, kubeconfig: false });
  if (!stack) throw new Error(JSON.stringify(problems));
  return stack;
}

const byId = (steps: StepDefinition[], id: StepId) => steps.find((s) => s.id === id) as StepDefinition;

describe("step graph", () => {
  const { steps } = buildSteps(resolved(gpt2Config()));

  it("host-ready → (triton-with-ft ∥ fetch) → convert, gemm → bake", () => {
    expect(topologicalOrder(steps).map((s) => s.id)).toEqual([...STEP_IDS]);
    expect(byId(steps, "fetch").dependsOn).toEqual(["host-ready"]);
    expect(downstreamOf(steps, "triton-with-ft")).not.toContain("fetch");
    expect(downstreamOf(steps, "fetch")).not.toContain("triton-with-ft");
    expect(byId(steps, "bake").dependsOn).toEqual(expect.arrayContaining(["convert", "gemm"]));
    expect(byId(steps, "gemm").dependsOn).toEqual(["triton-with-ft"]);
    // The verifier runs inside convert; bake needs its weights JSON too.
    expect(byId(steps, "convert").files.map((f) => f.remotePath)).toContain(
      "/opt/triton-ft/plan/expected-weights.json",
    );
  });

  it("the image build runs on the compile host; every step has its own budget", () => {
    const minutes = (id: StepId) => parseInt(byId(steps, id).timeouts.create, 10);
    expect(byId(steps, "triton-with-ft").host).toBe("compiler");
    expect(STEP_IDS.filter((id) => byId(steps, id).host === "compiler")).toEqual(["twf-layers", "triton-with-ft"]);
    // One SM (86): 16 core-hours on a c7i.48xlarge's 192 vCPUs at 0.7 efficiency = 7.1 min, plus the
    // base image and pip (15 min) and pushing 30 GiB at 50 MiB/s (10.24 min), × 2.5 (infra/plan/budgets.ts).
    expect(minutes("triton-with-ft")).toBe(Math.ceil(2.5 * (15 + (16 * 60) / (192 * 0.7) + (30 * 1024) / 50 / 60)));
    expect(new Set(STEP_IDS.map(minutes)).size).toBeGreaterThan(3);
  });

  it("rejects cycles and unknown dependencies", () => {
    const a = { ...byId(steps, "gemm"), dependsOn: ["bake"] as StepId[] };
    expect(() => topologicalOrder([a, byId(steps, "bake")])).toThrow(/unknown step|cycle/);
  });

  it("renders a config file bash reads back value for value", () => {
    const step: StepDefinition = {
      ...byId(steps, "gemm"),
      config: [
        ["PLAIN", 'it\'s a "quoted" $HOME `x`'],
        ["ARR", ["a b", "c'd", ""]],
        ["DEPLOYED", { deploy: "awsRegion" }],
      ],
    };
    const dir = mkdtempSync(join(tmpdir(), "stepcfg-"));
    const file = join(dir, "c.conf");
    writeFileSync(
      file,
      renderStepConfig(step, () => "eu-west-1"),
    );
    const out = execFileSync("bash", [
      "-c",
      `set -euo pipefail; source "$1"; printf '%s\\n' "$PLAIN" "\${#ARR[@]}" "\${ARR[@]}" "$DEPLOYED"`,
      "_",
      file,
    ]).toString();
    expect(out).toBe(`it's a "quoted" $HOME \`x\`\n3\na b\nc'd\n\neu-west-1\n`);
    expect(bashQuote("'")).toBe(`''\\'''`);
  });

  it("parses RESULT image lines and insists on a digest", () => {
    const ref = `1.dkr.ecr.us-east-1.amazonaws.com/p/server@sha256:${"a".repeat(64)}`;
    expect(parseImageResult(`log\nRESULT tag=x\nRESULT image=${ref}\n`)).toBe(ref);
    expect(() => requireImageResult("bake", "RESULT tag=x\n")).toThrow(/without printing "RESULT image=<ref>"/);
    expect(() => requireImageResult("bake", "RESULT image=repo/server:latest\n")).toThrow(
      /build step bake printed image repo\/server:latest: must be pinned by digest/,
    );
  });

  it("a change to a step's script re-hashes that step and everything downstream only", () => {
    const fake = (bump: string) => (p: string) => (p === bump ? "changed" : `h:${p}`);
    const base = stepInputHashes(steps, fake("none"));
    const after = stepInputHashes(steps, fake("scripts/remote/gemm.sh"));
    const changed = STEP_IDS.filter((id) => base[id] !== after[id]);
    expect(changed).toEqual(["gemm", "bake"]);
  });
});

/** Triggers of each step command, from one mock run. */
function triggers(run: ProgramRun): Record<StepId, string> {
  return Object.fromEntries(
    STEP_IDS.map((id) => [id, JSON.stringify(run.one("command:remote:Command", `build-${id}`).inputs.triggers)]),
  ) as Record<StepId, string>;
}

describe("invalidation matrix (two mock runs per change)", () => {
  const cases: Array<[string, Record<string, Record<string, unknown>>, StepId[]]> = [
    ["serving replicas", { serving: { replicas: 3 } }, []],
    [
      "load balancer scheme",
      {
        serving: {
          loadBalancerScheme: "internet-facing",
          allowedCidrs: ["203.0.113.0/24"],
          tlsCertificateArn: "arn:aws:acm:us-east-1:123456789012:certificate/abc",
          consumers: ["search"],
        },
      },
      [],
    ],
    ["stopBuilderWhenDone", { build: { stopBuilderWhenDone: true } }, []],
    [
      "model revision",
      {
        model: { preset: "gpt2", source: { huggingface: { repo: "openai-community/gpt2", revision: "1".repeat(40) } } },
      },
      ["fetch", "convert", "bake"],
    ],
    [
      "model preset",
      {
        model: {
          preset: "gpt2-medium",
          source: { huggingface: { repo: "openai-community/gpt2-medium", revision: GPT2_REVISION } },
        },
      },
      ["fetch", "convert", "gemm", "bake"],
    ],
    ["max batch size (gemm tuning and model configs)", { serving: { maxBatchSize: 4 } }, ["gemm", "bake"]],
    [
      "Triton version",
      { build: { tritonVersion: "23.04" } },
      ["twf-layers", "twf-layers-pull", "triton-with-ft", "convert", "gemm", "bake"],
    ],
  ];

  // Each program run registers the whole stack (cluster included): allow for it.
  const RUN_BUDGET = 180_000;
  let baseline: Promise<Record<StepId, string>> | undefined;
  const base = () => (baseline ??= runProgram(gpt2Config()).then(triggers));

  it.each(cases)(
    "%s",
    async (_label, overrides, expected) => {
      const before = await base();
      const after = triggers(await runProgram(withOverrides(gpt2Config(), overrides)));
      const changed = STEP_IDS.filter((id) => before[id] !== after[id]);
      expect(changed).toEqual(expected);
    },
    RUN_BUDGET,
  );

  it(
    "a model change leaves the triton_with_ft build alone, a Triton change reaches every step after host-ready",
    async () => {
      // Stated separately from the table: the two rules that matter most (model vs. Triton changes).
      const before = await base();
      const model = triggers(
        await runProgram(
          withOverrides(gpt2Config(), {
            model: {
              preset: "gpt2-large",
              source: { huggingface: { repo: "openai-community/gpt2-large", revision: GPT2_REVISION } },
            },
          }),
        ),
      );
      expect(model["triton-with-ft"]).toBe(before["triton-with-ft"]);
      expect(model.fetch).not.toBe(before.fetch);
      const triton = triggers(await runProgram(withOverrides(gpt2Config(), { build: { tritonVersion: "23.04" } })));
      // The gateway image does not depend on Triton or the model: neither rebuilds it.
      for (const id of STEP_IDS.filter((s) => s !== "host-ready" && s !== "fetch" && s !== "gateway-image"))
        expect(triton[id]).not.toBe(before[id]);
      expect(triton["gateway-image"]).toBe(before["gateway-image"]);
      expect(model["gateway-image"]).toBe(before["gateway-image"]);
    },
    RUN_BUDGET,
  );
});

describe("every catalog preset maps onto the remote steps", () => {
  it("renders every step for each preset, shipping every file its argv reads", async () => {
    const { MODEL_PRESETS } = await import("../../infra/model/catalog");
    const { FT_FAMILIES } = await import("../../infra/model/types");
    const { BACKEND_COMMIT, FT_COMMIT } = await import("../lib/fixtures");
    for (const preset of MODEL_PRESETS) {
      const source = preset.archive
        ? { archive: { sha256: "a".repeat(64), tokenizerRevision: "b".repeat(40) } }
        : { huggingface: { repo: preset.repo, revision: "c".repeat(40) } };
      // A family FT does not serve (llama) is a vLLM model: its bake is the step that reads plan files.
      const ft = (FT_FAMILIES as readonly string[]).includes(preset.family);
      const cfg: RawConfig = {
        model: { preset: preset.name, source, ...(ft ? {} : { engine: "vllm" }) },
        build: {
          backendCommit: BACKEND_COMMIT,
          ftCommit: FT_COMMIT,
          // A vLLM-only stack's builder is the plan's CPU builder (the key is refused there).
          ...(ft ? { builderInstanceType: "g5.48xlarge" } : {}),
          sshAllowedCidrs: ["198.51.100.7/32"],
        },
        serving: {
          instanceType: "g5.48xlarge",
          tensorParallel: preset.arch.heads % 8 === 0 ? 8 : 1,
          maxBatchSize: 1,
          maxInputLen: 128,
          maxOutputLen: 128,
        },
      };
      const { steps } = buildSteps(resolved(cfg));
      const convert = byId(steps, ft ? "convert" : "bake");
      const shipped = new Set(convert.files.map((f) => f.remotePath));
      const config = renderStepConfig(convert, (v) => `<${v}>`);
      // Any absolute path under the shipped plan folder that the convert argv names must be a shipped file.
      for (const path of config.match(/\/opt\/triton-ft\/plan\/[\w.-]+/g) ?? []) {
        // A folder (the bake's model repository) is shipped when its files are.
        const inShipped = shipped.has(path) || [...shipped].some((f) => f.startsWith(`${path}/`));
        expect(inShipped, `${preset.name}: ${path} is read but not shipped`).toBe(true);
      }
    }
  });
});

describe("tokenizer files", () => {
  const configOf = (steps: StepDefinition[], id: StepId) => new Map(byId(steps, id).config.map(([k, v]) => [k, v]));

  it("fetch insists only on the files a preset's tokenizer needs; bake takes the others when present", () => {
    const { steps } = buildSteps(resolved(gpt2Config()));
    expect(configOf(steps, "fetch").get("EXPECTED_FILES")).toEqual(["config.json", "vocab.json", "merges.txt"]);
    const bake = configOf(steps, "bake");
    expect(bake.get("TOKENIZER_FILES")).toEqual(["config.json", "vocab.json", "merges.txt"]);
    expect(bake.get("TOKENIZER_OPTIONAL_FILES")).toEqual([
      "tokenizer.json",
      "tokenizer_config.json",
      "special_tokens_map.json",
      "added_tokens.json",
    ]);
  });

  it("a model without a preset requires only config.json and lets the bake look for a vocabulary", () => {
    const cfg = gpt2Config();
    cfg.model = {
      family: "gptneox",
      source: { huggingface: { repo: "EleutherAI/pythia-160m", revision: "50f5173d932e8e61f858120bcb800b97af589f46" } },
      arch: {
        layers: 12,
        hidden: 768,
        heads: 12,
        ffn: 3072,
        vocab: 50304,
        rotaryDims: 16,
        maxPositions: 2048,
        startId: 0,
        endId: 0,
      },
    };
    const bake = configOf(buildSteps(resolved(cfg)).steps, "bake");
    expect(bake.get("TOKENIZER_FILES")).toEqual(["config.json"]);
    expect(bake.get("TOKENIZER_OPTIONAL_FILES")).toContain("tokenizer.json");
  });
});

describe("the JAX slim checkpoint's planned config.ini", () => {
  it("is shipped and named in CONFIG_INI, not spliced into another phase's argv", async () => {
    const { BACKEND_COMMIT, FT_COMMIT } = await import("../lib/fixtures");
    const cfg: RawConfig = {
      model: {
        preset: "gpt-j-6b-jax",
        source: { archive: { sha256: "a".repeat(64), tokenizerRevision: "b".repeat(40) } },
      },
      build: {
        backendCommit: BACKEND_COMMIT,
        ftCommit: FT_COMMIT,
        builderInstanceType: "g5.4xlarge",
        sshAllowedCidrs: ["198.51.100.7/32"],
      },
      serving: { instanceType: "g5.12xlarge", tensorParallel: 4 },
    };
    const convert = byId(buildSteps(resolved(cfg)).steps, "convert");
    const config = new Map(convert.config.map(([k, v]) => [k, v]));
    const ini = config.get("CONFIG_INI");
    expect(ini).toBe("/opt/triton-ft/plan/config.ini");
    expect(convert.files.find((f) => f.remotePath === ini)?.content).toMatch(/^\[gptj\]/m);
    expect((config.get("FP16_ARGV") as string[])[0]).toBe("python3");
  });
});
