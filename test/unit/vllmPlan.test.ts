/**
 * A vLLM model's plan (issue 37): its steps (host-ready, fetch, bake FROM the
 * pinned Triton-with-vLLM image, the gateway image), never triton-with-ft,
 * convert or gemm; its model repository carries the resolved numbers; a stack
 * of vLLM models only builds no triton_with_ft; an FT model's plan is untouched.
 */
import { describe, expect, it } from "vitest";
import { TRITON_VLLM_IMAGE, pinnedRef } from "../../infra/catalog/images";
import { resolveStack } from "../../infra/resolve";
import type { ResolvedStack } from "../../infra/config";
import { planOf, stackPlanOf } from "../lib/plan";
import { gpt2Config, onVllm, tinyllamaModel, withOverrides, type RawConfig } from "../lib/fixtures";
import { buildStackPlan } from "../../infra/plan/stack";
import { REPO_ROOT, repoPathHasher } from "../../infra/repoFiles";

const TINYLLAMA = tinyllamaModel("vllm");

function resolved(cfg: RawConfig): ResolvedStack[] {
  const { models, problems } = resolveStack(cfg, {}, { today: "2026-11-29" });
  if (!models) throw new Error(JSON.stringify(problems));
  return models;
}
const one = (cfg: RawConfig) => resolved(cfg)[0] as ResolvedStack;
const conf = (steps: ReturnType<typeof planOf>["buildSteps"], id: string) =>
  new Map(steps.find((s) => s.id === id)?.config ?? []);

describe("a vLLM model's plan", () => {
  const stack = one(onVllm(withOverrides(gpt2Config(), { model: TINYLLAMA, serving: { vllm: { maxLogprobs: 7 } } })));
  const plan = planOf(stack);

  it("builds with host-ready, fetch and bake (and the stack's gateway image): no triton-with-ft, convert or gemm", () => {
    expect(plan.buildSteps.map((s) => s.id)).toEqual(["host-ready", "fetch", "bake", "gateway-image"]);
    expect(plan.conversion).toBeUndefined();
    expect(plan.gemm).toBeUndefined();
    expect(plan.expectedWeights).toBeUndefined();
    expect(plan.buildSteps.some((s) => s.host === "compiler")).toBe(false);
  });

  it("bakes FROM the catalog's Triton-with-vLLM image by digest, with vLLM's own script and Dockerfile", () => {
    const bake = conf(plan.buildSteps, "bake");
    expect(bake.get("BASE_IMAGE")).toBe(pinnedRef(TRITON_VLLM_IMAGE));
    expect(pinnedRef(TRITON_VLLM_IMAGE)).toMatch(/^nvcr\.io\/nvidia\/tritonserver@sha256:[0-9a-f]{64}$/);
    expect(plan.buildSteps.find((s) => s.id === "bake")?.script).toBe("scripts/remote/bake-vllm.sh");
    expect(bake.get("DOCKERFILE_DIR")).toBe("/opt/triton-ft/images/vllm");
    // A llama checkpoint's config is checked by the bake (fetch's check is FT's and stays byte-identical).
    expect(conf(plan.buildSteps, "fetch").has("CHECK_FAMILY")).toBe(false);
    expect(bake.get("CHECK_ARGV")).toContain("{{SCRIPTS}}/convert/check_llama_config.py");
    expect(bake.has("RELAYOUT_ARGV")).toBe(false);
  });

  it("launches tritonserver itself (no MPI) on the same repository path", () => {
    expect(plan.launch.argv).toEqual([
      "/opt/tritonserver/bin/tritonserver",
      "--model-repository=/opt/triton-ft/model-repository",
    ]);
  });

  it("renders the vLLM repository with the resolved numbers", () => {
    const [config] = plan.modelRepository.files;
    expect(config?.path).toBe("ensemble/config.pbtxt");
    const v = stack.vllm;
    if (!v) throw new Error("no vLLM settings");
    const text = config?.content ?? "";
    expect(text).toMatch(/^# Rendered by infra\/plan\/vllmRepository\.ts/);
    expect(text).toContain('backend: "python"');
    expect(text).toContain(`max_batch_size: ${v.maxNumSeqs}`);
    for (const [k, value] of [
      ["model_path", "/opt/triton-ft/model"],
      ["kv_cache_gib", String(v.kvCacheGiB)],
      ["max_model_len", String(v.maxModelLen)],
      ["max_logprobs", "7"],
      ["max_num_seqs", "8"],
      ["gpu_memory_utilization", "0.9"],
    ])
      expect(text).toContain(`parameters { key: "${k}" value { string_value: "${value}" } }`);
    expect(text).not.toContain("enforce_eager");
    expect(plan.modelRepository.shipped?.map((t) => t.to)).toEqual([
      "ensemble/1/model.py",
      "ensemble/1/tritonft",
      "ensemble/1/tritonvllm",
    ]);
  });

  it("re-lays a CodeGen checkpoint out as GPT-J in the bake", () => {
    const codegen = one(
      onVllm(
        withOverrides(gpt2Config(), {
          model: {
            preset: "codegen-350m-mono",
            engine: "vllm",
            source: { huggingface: { repo: "Salesforce/codegen-350M-mono", revision: "a".repeat(40) } },
          },
        }),
      ),
    );
    const bake = conf(planOf(codegen).buildSteps, "bake");
    expect(bake.get("RELAYOUT_ARGV")).toContain("{{SCRIPTS}}/convert/codegen_to_gptj.py");
    expect(planOf(codegen).buildSteps.find((s) => s.id === "bake")?.inputs).toContain(
      "scripts/convert/codegen_to_gptj.py",
    );
  });
});

describe("stacks of both engines", () => {
  const hasher = repoPathHasher(REPO_ROOT);
  const { model, ...rest } = gpt2Config();
  delete (rest as { serving?: unknown }).serving;
  const gpt2 = { ...(model as object), instanceType: "g5.xlarge" };
  const tiny = { ...TINYLLAMA, instanceType: "g5.xlarge" };

  it("a mixed stack: the FT model builds triton_with_ft, the vLLM model only fetches and bakes", () => {
    const sp = buildStackPlan(resolved({ ...rest, models: { gpt2, tiny } }), "test", hasher);
    expect(sp.models.map((m) => m.plan.buildSteps.map((s) => s.id))).toEqual([
      [
        "host-ready",
        "twf-layers",
        "twf-layers-pull",
        "triton-with-ft",
        "fetch",
        "convert",
        "gemm",
        "bake",
        "gateway-image",
      ],
      ["fetch", "bake"],
    ]);
  });

  it("a stack of vLLM models only builds no triton_with_ft and needs no compile host", () => {
    const sp = stackPlanOf(one(onVllm({ ...rest, model: TINYLLAMA, serving: { instanceType: "g5.xlarge" } })));
    const steps = sp.models.flatMap((m) => m.plan.buildSteps);
    expect(steps.map((s) => s.id)).not.toContain("triton-with-ft");
    expect(steps.some((s) => s.host === "compiler")).toBe(false);
  });

  it("an FT model's plan has no vLLM section (its plan.json is as before)", () => {
    expect(planOf(one(gpt2Config())).vllm).toBeUndefined();
  });
});

describe("a vLLM model's canary", () => {
  it("plans as a second vLLM build sharing the fetch (its own bake only)", () => {
    const hasher = repoPathHasher(REPO_ROOT);
    const { model, ...rest } = gpt2Config();
    delete (rest as { serving?: unknown }).serving;
    const gpt2 = { ...(model as object), instanceType: "g5.xlarge" };
    const tiny = { ...TINYLLAMA, instanceType: "g5.xlarge", canary: { maxOutputLen: 128 } };
    const sp = buildStackPlan(resolved({ ...rest, models: { gpt2, tiny } }), "test", hasher);
    const [canary] = sp.canaries;
    expect(canary?.plan.vllm?.settings.maxModelLen).toBe(512 + 128);
    expect(canary?.plan.buildSteps.map((s) => s.id)).toEqual(["bake"]);
  });
});
