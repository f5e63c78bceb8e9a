/**
 * synth's build-pipeline artifacts: the step config files under `<out>/steps/`
 * (deploy-time values as `@{name}`), and the server image's Dockerfile under
 * `<out>/images/server/`. The steps themselves, with their input hashes, are
 * the plan's `buildSteps` (plan.json). In a stack of several models each
 * model's pipeline has its own `models/<id>/steps/` (the first model's also
 * runs the shared steps: host check, triton_with_ft, gateway image), and the
 * one Dockerfile every bake builds from is the stack's.
 */
import { stepPlanEntries } from "../plan/stepGraph";

import type { ArtifactWriter, SynthContext, SynthFile, WriterOutput } from "./types";
export const STEPS_OUT = "steps";
export const IMAGES_OUT = "images";
/** The server image's build recipe, copied as-is (the bake step builds it from this folder). */
export const SERVER_IMAGE_FILES = ["images/server/Dockerfile", "images/server/.dockerignore"];
/** A vLLM model's server image recipe (scripts/remote/bake-vllm.sh), written when the stack has one. */
export const VLLM_IMAGE_FILES = ["images/vllm/Dockerfile"];

/** The step configs of one model's pipeline. */
function stepFiles(ctx: SynthContext): { files: SynthFile[]; line: string } {
  const entries = stepPlanEntries(ctx.plan.buildSteps);
  return {
    files: entries.map((e) => ({ path: `${STEPS_OUT}/${e.id}.conf`, content: e.config })),
    line: `build steps: ${entries.map((e) => `${e.id} (${e.inputHash.slice(0, 12)})`).join(" -> ")}; configs -> ${STEPS_OUT}/`,
  };
}

/** The server image's recipe, from the repository. */
function serverImageFiles(readRepoFile: SynthContext["readRepoFile"], list = SERVER_IMAGE_FILES): SynthFile[] {
  const files: SynthFile[] = [];
  for (const rel of list) {
    const content = readRepoFile(rel);
    if (content === undefined) {
      if (rel.endsWith("Dockerfile"))
        throw new Error(`synth: ${rel} is missing; the bake step builds the server image from it`);
      continue;
    }
    files.push({ path: rel, content });
  }
  return files;
}

export const buildStepsWriter: ArtifactWriter = {
  name: "build-steps",
  owns: [STEPS_OUT, IMAGES_OUT],
  write(ctx) {
    const steps = stepFiles(ctx);
    if (ctx.plan.vllm)
      return {
        files: [...steps.files, ...serverImageFiles(ctx.readRepoFile, VLLM_IMAGE_FILES)],
        summary: [`${steps.line}, vLLM server Dockerfile -> ${IMAGES_OUT}/vllm/`],
      };
    return {
      files: [...steps.files, ...serverImageFiles(ctx.readRepoFile)],
      summary: [`${steps.line}, server Dockerfile -> ${IMAGES_OUT}/server/`],
    };
  },
  writeModel(ctx): WriterOutput {
    const steps = stepFiles(ctx);
    return { files: steps.files, summary: [steps.line] };
  },
  writeShared(stack) {
    const vllm = stack.stackPlan.models.some((m) => m.plan.vllm);
    return {
      files: [
        ...serverImageFiles(stack.readRepoFile),
        ...(vllm ? serverImageFiles(stack.readRepoFile, VLLM_IMAGE_FILES) : []),
      ],
      summary: [
        vllm
          ? `server Dockerfiles (FT models' bake, vLLM models' bake) -> ${IMAGES_OUT}/server/, ${IMAGES_OUT}/vllm/`
          : `server Dockerfile (every model's bake) -> ${IMAGES_OUT}/server/`,
      ],
    };
  },
};
