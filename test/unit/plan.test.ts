/**
 * Golden tests of the seed deployments: exact converter commands and gpt_gemm
 * arguments inline, rendered configs against reviewed files under golden/.
 * Regenerate the files with UPDATE_GOLDEN=1 npx vitest run test/unit/plan.test.ts,
 * then review the diff by eye.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { ftPlan, type FtPlan } from "../../infra/plan";
import { anyTypeExpectedWeights, type ConversionPhases } from "../../infra/plan/conversion";
import {
  ENSEMBLE_INPUTS,
  ENSEMBLE_OUTPUTS,
  ENSEMBLE_STEPS,
  FASTERTRANSFORMER_INPUTS,
  FASTERTRANSFORMER_OUTPUTS,
  POSTPROCESSING_INPUTS,
  POSTPROCESSING_OUTPUTS,
  PREPROCESSING_INPUTS,
  PREPROCESSING_OUTPUTS,
  renderFastertransformer,
  type TensorSpec,
} from "../../infra/plan/modelRepository";
import { formatProblems, resolveStack } from "../../infra/resolve";
import type { ResolvedStack } from "../../infra/config";
import { withOverrides, type RawConfig } from "../lib/fixtures";
import { planOf } from "../lib/plan";
import { SEED_CASES } from "./seedCases";

const UPDATE = process.env.UPDATE_GOLDEN === "1";
const GOLDEN = path.join(__dirname, "golden");

function golden(rel: string, actual: string): void {
  const file = path.join(GOLDEN, rel);
  if (UPDATE) {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, actual);
  }
  if (!fs.existsSync(file)) throw new Error(`missing golden file ${file}; run with UPDATE_GOLDEN=1 and review it`);
  expect(actual, `golden ${rel}`).toBe(fs.readFileSync(file, "utf8"));
}

function resolve(config: RawConfig): ResolvedStack {
  const { stack, problems } = resolveStack(config, { hfToken: false, kubeconfig: false });
  if (!stack) throw new Error(formatProblems("test", problems));
  return stack;
}

function planFor(id: string): FtPlan {
  const c = SEED_CASES.find((s) => s.id === id);
  if (!c) throw new Error(`no seed case ${id}`);
  return ftPlan(planOf(resolve(c.config)));
}

const execArgv = (
  phases: ConversionPhases,
  id: "consolidate" | "relayout" | "convert" | "fp16" | "verify",
): string[] => {
  const s = phases[id];
  if (!s) throw new Error(`no ${id} phase`);
  return s.argv;
};

const FT = "/workspace/FasterTransformer/examples/pytorch";
const SCRIPTS = "/opt/triton-ft/scripts/convert";
const GEMM = "/workspace/build/fastertransformer_backend/build/bin/gpt_gemm";
const W = "/opt/triton-ft/work";
const PLAN = "/opt/triton-ft/plan";

describe("seed cases: converter command and gpt_gemm arguments", () => {
  it("h2oGPT 6.9B, TP1 on g5.2xlarge: GPT-NeoX converter in fp16 after sharding the checkpoint", () => {
    const p = planFor("h2ogpt-tp1-g5.2xlarge");
    const w = `${W}/h2ogpt-oig-oasst1-512-6-9b`;
    expect([p.conversion.sourceDir, p.conversion.outputDir]).toEqual([`${w}/source`, `${w}/ft`]);
    expect(execArgv(p.conversion.phases, "consolidate")).toEqual([
      "python3",
      `${SCRIPTS}/consolidate_checkpoint.py`,
      "--input",
      "{{SRC}}",
      "--output",
      "{{CONSOLIDATE_OUT}}",
      "--layout",
      "shards",
      "--min-shards",
      "2",
    ]);
    expect(execArgv(p.conversion.phases, "convert")).toEqual([
      "python3",
      `${FT}/gptneox/utils/huggingface_gptneox_convert.py`,
      "-i",
      "{{CONSOLIDATE_OUT}}",
      "-o",
      "{{OUT}}",
      "-i_g",
      "1",
      "-m_n",
      "h2ogpt-oig-oasst1-512-6-9b",
      "-p",
      "4",
      "-weight_data_type",
      "fp16",
    ]);
    expect(p.conversion.phases.fp16).toBeUndefined();
    // batch beam max_input head_num size_per_head inter vocab dtype tp
    expect(p.gemm.argv).toEqual([GEMM, "8", "1", "512", "32", "128", "16384", "50432", "1", "1"]);
    expect(p.modelRepository.checkpointPath).toBe("/opt/triton-ft/weights/1-gpu");
  });

  it("KoGPT, TP1 on g5.4xlarge: GPT-J converter with --n-layers, fp16 rewrite, gemm with KoGPT's 64512 vocab", () => {
    const p = planFor("kogpt-tp1-g5.4xlarge");
    const w = `${W}/kogpt-6b`;
    expect([p.conversion.sourceDir, p.conversion.outputDir]).toEqual([`${w}/source`, `${w}/ft`]);
    expect(execArgv(p.conversion.phases, "consolidate")).toEqual([
      "python3",
      `${SCRIPTS}/consolidate_checkpoint.py`,
      "--input",
      "{{SRC}}",
      "--output",
      "{{CONSOLIDATE_OUT}}",
      "--layout",
      "single",
    ]);
    expect(execArgv(p.conversion.phases, "convert")).toEqual([
      "python3",
      `${FT}/gptj/utils/huggingface_gptj_ckpt_convert.py`,
      "--ckpt-dir",
      "{{CONSOLIDATE_OUT}}",
      "--output-dir",
      "{{OUT}}",
      "--n-inference-gpus",
      "1",
      "--n-layers",
      "28",
    ]);
    expect(execArgv(p.conversion.phases, "fp16")).toEqual([
      "python3",
      `${SCRIPTS}/to_fp16.py`,
      "{{OUT}}/1-gpu",
      "--expected",
      `${PLAN}/expected-weights.any-type.json`,
    ]);
    expect(p.conversion.phases.fp16?.anyTypeExpected).toBe(`${PLAN}/expected-weights.any-type.json`);
    const anyTypeJson = anyTypeExpectedWeights(p.expectedWeights);
    expect(anyTypeJson.config).not.toHaveProperty("weight_data_type");
    expect({ ...anyTypeJson, config: { ...anyTypeJson.config, weight_data_type: "fp16" } }).toEqual(p.expectedWeights);
    expect(p.gemm.argv).toEqual([GEMM, "8", "1", "512", "16", "256", "16384", "64512", "1", "1"]);
    expect(p.gemm.args.vocabSize).not.toBe(50400);
  });

  it("GPT-J 6B JAX slim, TP4 on g5.12xlarge: slim converter, written config.ini, fp16 rewrite", () => {
    const p = planFor("gptj-jax-tp4-g5.12xlarge");
    const w = `${W}/gpt-j-6b-jax`;
    expect(execArgv(p.conversion.phases, "convert")).toEqual([
      "python3",
      `${FT}/gptj/utils/gptj_ckpt_convert.py`,
      "--ckpt-dir",
      "{{SRC}}/",
      "--output-dir",
      "{{OUT}}",
      "--n-inference-gpus",
      "4",
    ]);
    const ini = p.conversion.phases.configIni;
    // convert.sh installs it into {{OUT}}/4-gpu/config.ini right after the converter.
    expect(ini?.remotePath).toBe(`${PLAN}/config.ini`);
    expect(ini?.content).toBe(
      "[gptj]\nmodel_name = gpt-j-6b-jax\nhead_num = 16\nsize_per_head = 256\ninter_size = 16384\nnum_layer = 28\nrotary_embedding = 64\nvocab_size = 50400\nstart_id = 50256\nend_id = 50256\nweight_data_type = fp32\n\n",
    );
    // The phases convert.sh runs, in its order; staging, resume and the swap are the script's own.
    expect(Object.keys(p.conversion.phases)).toEqual(["convert", "configIni", "fp16", "verify"]);
    expect(p.conversion.sourceDir).toBe(`${w}/source`);
    expect(p.gemm.argv).toEqual([GEMM, "8", "1", "512", "16", "256", "16384", "50400", "1", "4"]);
    expect(p.launch.env).toEqual({ CUDA_VISIBLE_DEVICES: "0,1,2,3" });
    expect(p.model.tokenizerSource).toEqual({
      repo: "EleutherAI/gpt-j-6b",
      revision: "47e169305d2e8376be1d31e765533382721b2cc1",
    });
  });

  it("GPT-2, TP1: GPT converter in fp16 straight from the snapshot", () => {
    const p = planFor("gpt2-tp1-g5.xlarge");
    expect(execArgv(p.conversion.phases, "convert")).toEqual([
      "python3",
      `${FT}/gpt/utils/huggingface_gpt_convert.py`,
      "-i",
      "{{SRC}}",
      "-o",
      "{{OUT}}",
      "-i_g",
      "1",
      "-t_g",
      "1",
      "-p",
      "1",
      "-weight_data_type",
      "fp16",
    ]);
    expect(p.gemm.argv).toEqual([GEMM, "8", "1", "512", "12", "64", "3072", "50257", "1", "1"]);
  });

  it("CodeGen-2B-mono, TP2 on g5.12xlarge: re-laid out as GPT-J, then the GPT-J converter with 32 layers", () => {
    const p = planFor("codegen-2b-mono-tp2-g5.12xlarge");
    const w = `${W}/codegen-2b-mono`;
    expect([p.conversion.sourceDir, p.conversion.outputDir]).toEqual([`${w}/source`, `${w}/ft`]);
    expect(execArgv(p.conversion.phases, "relayout")).toEqual([
      "python3",
      `${SCRIPTS}/codegen_to_gptj.py`,
      "--input",
      "{{SRC}}",
      "--output",
      "{{RELAYOUT_OUT}}",
    ]);
    expect(execArgv(p.conversion.phases, "convert")).toEqual([
      "python3",
      `${FT}/gptj/utils/huggingface_gptj_ckpt_convert.py`,
      "--ckpt-dir",
      "{{RELAYOUT_OUT}}",
      "--output-dir",
      "{{OUT}}",
      "--n-inference-gpus",
      "2",
      "--n-layers",
      "32",
    ]);
    expect(p.gemm.argv).toEqual([GEMM, "8", "1", "512", "32", "80", "10240", "51200", "1", "2"]);
    expect(p.model.ftModelType).toBe("GPT-J");
    expect(p.expectedWeights.section).toBe("gptj");
  });

  it("GPT-J 6B, TP8 on p4d.24xlarge: custom all-reduce on, all 8 GPUs visible", () => {
    const p = planFor("gptj-tp8-p4d.24xlarge");
    expect(execArgv(p.conversion.phases, "convert")).toContain("8");
    expect(p.gemm.argv).toEqual([GEMM, "8", "1", "512", "16", "256", "16384", "50400", "1", "8"]);
    expect(p.serving.customAllReduce).toBe(true);
    expect(p.launch).toEqual({
      argv: [
        "mpirun",
        "-n",
        "1",
        "/opt/tritonserver/bin/tritonserver",
        "--model-repository=/opt/triton-ft/model-repository",
      ],
      env: { CUDA_VISIBLE_DEVICES: "0,1,2,3,4,5,6,7" },
      workingDir: "/workspace",
    });
  });
});

describe("seed cases: rendered configs and plan (golden files)", () => {
  for (const c of SEED_CASES) {
    it(c.title, () => {
      const plan = ftPlan(planOf(resolve(c.config)));
      for (const f of plan.modelRepository.files)
        golden(`${c.id}/${f.path.replace("/config.pbtxt", ".pbtxt")}`, f.content);
      const core = {
        conversion: Object.entries(plan.conversion.phases).map(([id, phase]) =>
          "argv" in phase ? { id, argv: phase.argv } : { id, write: phase.remotePath },
        ),
        gemm: plan.gemm.argv,
        launch: plan.launch,
        expectedWeights: {
          section: plan.expectedWeights.section,
          config: plan.expectedWeights.config,
          fileCount: plan.expectedWeights.files.length,
        },
      };
      golden(`${c.id}/plan-core.json`, JSON.stringify(core, null, 2) + "\n");
    });
  }
});

describe("conversion traps", () => {
  const gpt2 = SEED_CASES.find((s) => s.id === "gpt2-tp1-g5.xlarge")?.config as RawConfig;

  it("runs the verifier last, on the converter's (fp16-rewritten) output, against the shipped expected list", () => {
    // Converting into a fresh attempt folder and swapping it in only after the verifier passed is
    // convert.sh's own job (test/scripts/convert.bats); the plan states the phases it runs, in order.
    const p = planFor("kogpt-tp1-g5.4xlarge");
    const ids = Object.keys(p.conversion.phases);
    expect(ids).toEqual(["consolidate", "convert", "fp16", "verify"]);
    expect(ids.indexOf("verify")).toBeGreaterThan(ids.indexOf("fp16"));
    expect(execArgv(p.conversion.phases, "verify")).toEqual([
      "python3",
      "{{SCRIPTS}}/convert/verify_weights.py",
      "--expected",
      `${PLAN}/expected-weights.json`,
      "{{OUT}}/1-gpu",
    ]);
    expect(p.conversion.checkpointDir).toBe(`${W}/kogpt-6b/ft/1-gpu`);
    const convert = p.buildSteps.find((s) => s.id === "convert");
    const written = convert?.files.find((f) => f.remotePath === `${PLAN}/expected-weights.json`);
    expect(written ? JSON.parse(written.content) : undefined).toEqual(p.expectedWeights);
    // Both steps run this one verifier command from their configs: convert on the attempt, bake on the installed weights.
    const config = (id: string) => new Map(p.buildSteps.find((s) => s.id === id)?.config);
    expect(config("convert").get("VERIFY_ARGV")).toEqual(execArgv(p.conversion.phases, "verify"));
    expect(config("bake").get("VERIFY_ARGV")).toEqual([
      ...execArgv(p.conversion.phases, "verify").slice(0, -1),
      p.conversion.checkpointDir,
    ]);
  });

  it("passes the real layer count to the GPT-J converter of a non-28-layer model", () => {
    const cfg = withOverrides(gpt2, {
      model: {
        preset: undefined,
        family: "gptj",
        name: "tiny-gptj",
        source: { huggingface: { repo: "example/tiny-gptj", revision: "1234567890abcdef1234567890abcdef12345678" } },
        arch: {
          layers: 12,
          hidden: 1024,
          heads: 16,
          ffn: 4096,
          vocab: 50400,
          rotaryDims: 32,
          maxPositions: 2048,
          startId: 50256,
          endId: 50256,
        },
      },
    });
    const argv = execArgv(ftPlan(planOf(resolve(cfg))).conversion.phases, "convert");
    expect(argv.slice(-2)).toEqual(["--n-layers", "12"]);
  });

  it("turns custom all-reduce on only at TP8 over NVSwitch", () => {
    const j = SEED_CASES.find((s) => s.id === "gptj-tp8-p4d.24xlarge")?.config as RawConfig;
    const g5tp8 = withOverrides(j, {
      build: { builderInstanceType: "g5.4xlarge" },
      serving: { instanceType: "g5.48xlarge", tensorParallel: 8 },
    });
    const p4dtp4 = withOverrides(j, { serving: { tensorParallel: 4 } });
    expect(planOf(resolve(g5tp8)).serving.customAllReduce).toBe(false);
    expect(planOf(resolve(p4dtp4)).serving.customAllReduce).toBe(false);
    expect(
      planFor("gptj-tp8-p4d.24xlarge").modelRepository.files.find((f) => f.path === "fastertransformer/config.pbtxt")
        ?.content,
    ).toMatch(/key: "enable_custom_all_reduce"\n\s+value \{\n\s+string_value: "1"/);
  });

  it("derives gemm batch and input length from the gemm config, defaulting to serving", () => {
    const p = ftPlan(
      planOf(resolve(withOverrides(gpt2, { serving: { maxBatchSize: 16, maxInputLen: 256 }, gemm: { beamWidth: 2 } }))),
    );
    expect(p.gemm.argv.slice(1, 4)).toEqual(["16", "2", "256"]);
    const q = ftPlan(planOf(resolve(withOverrides(gpt2, { gemm: { batchSize: 4, maxInputLen: 64 } }))));
    expect(q.gemm.argv.slice(1, 4)).toEqual(["4", "1", "64"]);
  });

  it("keeps the plan JSON-serialisable (plain data only)", () => {
    const bad: string[] = [];
    const walk = (v: unknown, at: string): void => {
      if (v === null || typeof v === "string" || typeof v === "boolean" || v === undefined) return;
      if (typeof v === "number") {
        if (!Number.isFinite(v)) bad.push(at);
        return;
      }
      if (Array.isArray(v)) return v.forEach((x, i) => walk(x, `${at}[${i}]`));
      if (typeof v === "object" && Object.getPrototypeOf(v) === Object.prototype) {
        for (const [k, x] of Object.entries(v as Record<string, unknown>)) walk(x, `${at}.${k}`);
        return;
      }
      bad.push(at);
    };
    for (const c of SEED_CASES) walk(planOf(resolve(c.config)), c.id);
    expect(bad).toEqual([]);
  });
});

describe("fastertransformer stand-in", () => {
  it("differs from the real config only in the backend", () => {
    const stack = resolve(SEED_CASES[0].config);
    const real =
      planOf(stack).modelRepository.files.find((f) => f.path === "fastertransformer/config.pbtxt")?.content ?? "";
    const opts = {
      family: stack.model.family,
      tensorParallel: 1,
      maxBatchSize: 8,
      maxInputLen: 512,
      maxOutputLen: 256,
      checkpointPath: "/opt/triton-ft/weights/1-gpu",
      tokenizerPath: "/opt/triton-ft/tokenizer",
      startId: 0,
      endId: 0,
      padId: 0,
      customAllReduce: false,
      vocab: stack.model.arch.vocab,
      decoupled: true,
    };
    const standIn = renderFastertransformer(opts, { backend: "python" });
    expect(renderFastertransformer(opts)).toBe(real);
    expect(standIn).toBe(real.replace('backend: "fastertransformer"', 'backend: "python"'));
  });
});

describe("ensemble wiring", () => {
  const models: Record<string, { inputs: readonly TensorSpec[]; outputs: readonly TensorSpec[] }> = {
    preprocessing: { inputs: PREPROCESSING_INPUTS, outputs: PREPROCESSING_OUTPUTS },
    fastertransformer: { inputs: FASTERTRANSFORMER_INPUTS, outputs: FASTERTRANSFORMER_OUTPUTS },
    postprocessing: { inputs: POSTPROCESSING_INPUTS, outputs: POSTPROCESSING_OUTPUTS },
  };

  it("connects every step input to an ensemble input or an earlier output, with matching types", () => {
    const available = new Map<string, { spec: TensorSpec; optional: boolean }>(
      ENSEMBLE_INPUTS.map((s) => [s.name, { spec: s, optional: !!s.optional }]),
    );
    for (const step of ENSEMBLE_STEPS) {
      const m = models[step.model];
      for (const input of m.inputs) {
        const source = step.inputMap[input.name];
        if (!input.optional) expect(source, `${step.model}.${input.name} is required`).toBeDefined();
        if (source === undefined) continue;
        const from = available.get(source);
        expect(from, `${step.model}.${input.name} <- ${source}`).toBeDefined();
        expect(from?.spec.dataType, `${step.model}.${input.name} type`).toBe(input.dataType);
        // An optional ensemble input may only feed an optional model input.
        if (from?.optional) expect(input.optional, `${step.model}.${input.name} must be optional`).toBe(true);
      }
      for (const key of Object.keys(step.inputMap)) expect(m.inputs.map((i) => i.name)).toContain(key);
      for (const [key, target] of Object.entries(step.outputMap)) {
        const spec = m.outputs.find((o) => o.name === key);
        expect(spec, `${step.model} has output ${key}`).toBeDefined();
        if (spec) available.set(target, { spec, optional: false });
      }
    }
    for (const out of ENSEMBLE_OUTPUTS)
      expect(available.get(out.name)?.spec.dataType, `ensemble output ${out.name}`).toBe(out.dataType);
  });
});
