/**
 * synth's build-pipeline artifacts: every remote step (script, arguments,
 * input hash, config with deploy-time values as `@{name}`) in plan.json under
 * `buildSteps`, the step config files under `<out>/steps/`, and the server
 * image's Dockerfile under `<out>/images/server/`.
 */
import { buildSteps } from "../plan/buildSteps";
import { REPO_ROOT, repoPathHasher } from "../plan/contentHash";
import { stepPlanEntries, type PathHasher } from "../plan/steps";
import type { ArtifactWriter, SynthFile } from "./artifacts";

export const STEPS_OUT = "steps";
export const IMAGES_OUT = "images";
/** The server image's build recipe, copied as-is (the bake step builds it from this folder). */
export const SERVER_IMAGE_FILES = ["images/server/Dockerfile", "images/server/.dockerignore"];

export function buildStepsWriter(hashPath: PathHasher = repoPathHasher(REPO_ROOT)): ArtifactWriter {
  return {
    name: "build-steps",
    owns: [STEPS_OUT, IMAGES_OUT],
    write(ctx) {
      const { steps } = buildSteps(ctx.stack, hashPath);
      const entries = stepPlanEntries(steps, hashPath);
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
        plan: { buildSteps: entries },
        summary: [
          `build steps: ${entries.map((e) => `${e.id} (${e.inputHash.slice(0, 12)})`).join(" -> ")}; configs -> ${STEPS_OUT}/, server Dockerfile -> ${IMAGES_OUT}/server/`,
        ],
      };
    },
  };
}
