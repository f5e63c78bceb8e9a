/**
 * synth's build-pipeline artifacts: the step config files under `<out>/steps/`
 * (deploy-time values as `@{name}`), and the server image's Dockerfile under
 * `<out>/images/server/`. The steps themselves, with their input hashes, are
 * the plan's `buildSteps` (plan.json).
 */
import { stepPlanEntries } from "../plan/stepGraph";
import type { ArtifactWriter, SynthFile } from "./artifacts";

export const STEPS_OUT = "steps";
export const IMAGES_OUT = "images";
/** The server image's build recipe, copied as-is (the bake step builds it from this folder). */
export const SERVER_IMAGE_FILES = ["images/server/Dockerfile", "images/server/.dockerignore"];

export const buildStepsWriter: ArtifactWriter = {
  name: "build-steps",
  owns: [STEPS_OUT, IMAGES_OUT],
  write(ctx) {
    const entries = stepPlanEntries(ctx.plan.buildSteps);
    const files: SynthFile[] = entries.map((e) => ({ path: `${STEPS_OUT}/${e.id}.conf`, content: e.config }));
    for (const rel of SERVER_IMAGE_FILES) {
      const content = ctx.readRepoFile(rel);
      if (content === undefined) {
        if (rel.endsWith("Dockerfile"))
          throw new Error(`synth: ${rel} is missing; the bake step builds the server image from it`);
        continue;
      }
      files.push({ path: rel, content });
    }
    return {
      files,
      summary: [
        `build steps: ${entries.map((e) => `${e.id} (${e.inputHash.slice(0, 12)})`).join(" -> ")}; configs -> ${STEPS_OUT}/, server Dockerfile -> ${IMAGES_OUT}/server/`,
      ],
    };
  },
};
