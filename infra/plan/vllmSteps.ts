/**
 * The build steps of a vLLM model (issue 37): the builder's host check, fetch,
 * bake and (first model only) the gateway image. No triton_with_ft, conversion
 * or gemm: vLLM loads the Hugging Face checkpoint as it is. The bake builds
 * FROM the catalog's Triton-with-vLLM image by digest (catalog/images.ts
 * TRITON_VLLM_IMAGE); a CodeGen checkpoint is re-laid out as GPT-J in the
 * bake's first phase, inside that image (fetch.sh stays FT's, byte for byte,
 * so no FT step hash moves). Same step protocol: hashed config, markers,
 * resumable phases.
 *
 * Pure: no Pulumi.
 */
import { TRITON_VLLM_IMAGE, pinnedRef } from "../catalog/images";
import { bakeFreeDiskGiB, vllmBuilderFreeDiskGiB } from "../model/sizing";
import { cpuHostReadyStep } from "./cpuBuilder";
import type { ResolvedStack } from "../config/stack";
import { budgetMinutes, vllmBakeEstimate } from "./budgets";
import type { FetchPlan } from "./fetch";
import type { LaunchPlan } from "./launch";
import { REMOTE } from "./paths";
import type { ConfigValue, GeneratedFile, StepDefinition } from "./stepGraph";
import { budgetInputs, fetchStep, gatewayImageStep, hostReadyStep, stepMinutes, timeouts } from "./steps";
import type { ShippedTree } from "./vllmRepository";
import type { RepositoryFile } from "./modelRepository";
import { isFtFamily } from "../model/types";

/** What a vLLM model's steps are made from. */
export interface VllmStepSources {
  stack: ResolvedStack;
  fetch: FetchPlan;
  launch: LaunchPlan;
  modelRepository: { root: string; checkpointPath: string; files: RepositoryFile[]; shipped: ShippedTree[] };
  smList: number[];
  /**
   * The stack builds on a CPU builder (plan/cpuBuilder.ts): its own host check, and fetch's free disk from the CPU builder's sizing.
   * @default none: the model builds on its GPU model's builder, with the GPU builder's host check
   */
  cpuBuilder?: boolean;
}

const MODEL_REPOSITORY_DIR = `${REMOTE.plan}/model-repository`;

/** The base of every vLLM server image, by digest. */
export function vllmBaseImage(): string {
  return pinnedRef(TRITON_VLLM_IMAGE);
}

/** The CodeGen re-layout, run in the bake's first phase ({{SCRIPTS}}, {{INPUT}}, {{OUTPUT}}: bake-vllm.sh fills them). */
export function vllmRelayoutArgv(stack: ResolvedStack): string[] {
  if (stack.model.family !== "codegen") return [];
  return [
    "python3",
    `{{SCRIPTS}}/convert/codegen_to_gptj.py`,
    "--input",
    "{{INPUT}}",
    "--output",
    "{{OUTPUT}}",
    "--dtype",
    "keep",
  ];
}

function vllmBakeStep(src: VllmStepSources, minutes: number): StepDefinition {
  const m = src.stack.model;
  const repo = src.modelRepository;
  const files: GeneratedFile[] = [...repo.files]
    .sort((a, c) => a.path.localeCompare(c.path))
    .map((f) => ({ remotePath: `${MODEL_REPOSITORY_DIR}/${f.path}`, content: f.content }));
  const relayout = vllmRelayoutArgv(src.stack);
  // A llama checkpoint's config.json is checked here (fetch's check_model_config.py is FT's).
  const archFile: GeneratedFile | undefined = isFtFamily(m.family)
    ? undefined
    : { remotePath: `${REMOTE.plan}/llama-arch.json`, content: JSON.stringify(src.fetch.expectedArch, null, 2) + "\n" };
  const check = archFile
    ? [
        "python3",
        "{{SCRIPTS}}/convert/check_llama_config.py",
        "--config",
        src.fetch.modelDir,
        "--expected",
        archFile.remotePath,
      ]
    : [];
  return {
    id: "bake",
    title:
      "build the vLLM server image FROM the pinned Triton-with-vLLM image with the checkpoint and model repository; push",
    script: "scripts/remote/bake-vllm.sh",
    dependsOn: ["host-ready", "fetch"],
    config: [
      ["WORK_ROOT", REMOTE.root],
      ["AWS_REGION", { deploy: "awsRegion" }],
      ["BASE_IMAGE", vllmBaseImage()],
      ["ECR_REPOSITORY_URL", { deploy: "serverRepositoryUrl" }],
      ["DOCKERFILE_DIR", `${REMOTE.images}/vllm`],
      ["MODEL_DIR", src.fetch.modelDir],
      ["MODEL_FILES", src.fetch.tokenizerFiles.required],
      ...(check.length > 0 ? ([["CHECK_ARGV", check]] as Array<[string, ConfigValue]>) : []),
      ...(relayout.length > 0 ? ([["RELAYOUT_ARGV", relayout]] as Array<[string, ConfigValue]>) : []),
      ["MODEL_PATH", repo.checkpointPath],
      ["MODEL_REPOSITORY_DIR", MODEL_REPOSITORY_DIR],
      ["MODEL_REPOSITORY_PATH", repo.root],
      ["SHIPPED", repo.shipped.map((t) => `${REMOTE.root}/${t.from}=${t.to}`)],
      ["LAUNCH_ARGV", src.launch.argv],
      ["LAUNCH_CUDA_VISIBLE_DEVICES", src.launch.env.CUDA_VISIBLE_DEVICES ?? "0"],
      ["REQUIRED_FREE_GIB", bakeFreeDiskGiB(m.family, m.arch)],
    ],
    // The model and packages the image carries, and the re-layout's helpers for CodeGen.
    inputs: [
      "images/vllm",
      "images/server/python/tritonft",
      ...(relayout.length > 0 ? ["scripts/convert/codegen_to_gptj.py", "scripts/convert/hf_checkpoint.py"] : []),
      ...(check.length > 0 ? ["scripts/convert/check_llama_config.py", "scripts/convert/check_model_config.py"] : []),
    ],
    files: archFile ? [archFile, ...files] : files,
    secretEnv: [],
    producesImage: true,
    timeouts: timeouts(minutes),
  };
}

/** The steps of a vLLM model's build graph. */
export function vllmStepDefinitions(src: VllmStepSources): StepDefinition[] {
  const minutes = stepMinutes(src.stack, src.smList);
  const inputs = budgetInputs(src.stack, src.smList);
  const m = src.stack.model;
  return [
    src.cpuBuilder ? cpuHostReadyStep(minutes["host-ready"]) : hostReadyStep(src, minutes["host-ready"]),
    fetchStep(src, minutes.fetch, src.cpuBuilder ? vllmBuilderFreeDiskGiB([m]) : undefined),
    vllmBakeStep(src, budgetMinutes(vllmBakeEstimate(inputs))),
    gatewayImageStep(minutes["gateway-image"]),
  ];
}
