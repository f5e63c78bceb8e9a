/**
 * What `synth` writes into its output folder: plan.json (the plan) and what
 * each artifact writer renders from it. Each writer owns top-level paths of
 * the folder and may add a section to plan.json; new
 * artifacts (Kubernetes manifests, Dockerfiles, step scripts) are new writers
 * appended to the list, with no change to the CLI. Pure: file reads go through
 * the context so writers run the same in tests.
 */
import { PLAN_DOCUMENT_OMITS, type Plan } from "../plan";
import { stepPlanEntries } from "../plan/stepGraph";
import type { ResolvedStack } from "../config";
import { buildStepsWriter } from "./buildArtifacts";
import { costWriter } from "./costArtifacts";
import { k8sManifestsWriter } from "./k8sArtifacts";

export interface SynthContext {
  stackName: string;
  stack: ResolvedStack;
  plan: Plan;
  /** Read a file of this repository (relative path), or undefined when it does not exist. */
  readRepoFile(path: string): string | undefined;
  /** The stack file's aws:region, which the cost estimate prices in (cost.json warns without it). */
  region?: string;
  /** ISO date the estimate reads support phases at; today when unset. */
  today?: string;
}

export interface SynthFile {
  /** Relative to the output folder. */
  path: string;
  content: string;
}

export interface WriterOutput {
  files: SynthFile[];
  directories?: string[];
  /** Sections merged into plan.json under their own keys. */
  plan?: Record<string, unknown>;
  /** Lines for the human summary. */
  summary?: string[];
}

export interface ArtifactWriter {
  name: string;
  /** Top-level entries of the output folder this writer owns; synth clears them before writing. */
  owns: string[];
  write(ctx: SynthContext): WriterOutput;
}

export const MODEL_REPOSITORY_OUT = "model-repository";
/** Where the Python models' code lives in this repository (images/server, baked into the server image). */
export const PYTHON_MODEL_SOURCES = "images/server/model_repository";

export const modelRepositoryWriter: ArtifactWriter = {
  name: "model-repository",
  owns: [MODEL_REPOSITORY_OUT],
  write(ctx) {
    const repo = ctx.plan.modelRepository;
    const files: SynthFile[] = repo.files.map((f) => ({
      path: `${MODEL_REPOSITORY_OUT}/${f.path}`,
      content: f.content,
    }));
    const copied: string[] = [];
    // Copying the Python models' code makes the folder a complete repository for a local tritonserver.
    for (const model of ["preprocessing", "postprocessing"]) {
      const rel = `${model}/1/model.py`;
      const content = ctx.readRepoFile(`${PYTHON_MODEL_SOURCES}/${rel}`);
      if (content !== undefined) {
        files.push({ path: `${MODEL_REPOSITORY_OUT}/${rel}`, content });
        copied.push(rel);
      }
    }
    return {
      files,
      directories: repo.directories.map((d) => `${MODEL_REPOSITORY_OUT}/${d}`),
      summary: [
        `model repository: ${repo.files.length} config.pbtxt${copied.length ? ` + ${copied.length} Python model(s)` : ""} -> ${MODEL_REPOSITORY_OUT}/ (image path ${repo.root})`,
      ],
    };
  },
};

/** The default writers, in the order synth runs them (and prints their summaries). */
export const ARTIFACT_WRITERS: readonly ArtifactWriter[] = [
  modelRepositoryWriter,
  k8sManifestsWriter,
  buildStepsWriter,
  costWriter,
];

export const PLAN_FILE = "plan.json";

/**
 * plan.json: the plan itself, under the stack's name. Build steps are shown as
 * synth renders them (config text with `@{name}` deploy-time values, shipped
 * files by path: their contents are the plan's other sections).
 */
export function planDocument(stackName: string, plan: Plan): Record<string, unknown> {
  const doc: Record<string, unknown> = { stack: stackName, ...plan, buildSteps: stepPlanEntries(plan.buildSteps) };
  for (const key of PLAN_DOCUMENT_OMITS) delete doc[key];
  return doc;
}

export interface SynthResult {
  files: SynthFile[];
  directories: string[];
  /** Top-level output entries to clear before writing. */
  owned: string[];
  plan: Record<string, unknown>;
  summary: string[];
}

/** Run every writer, merge their plan sections, and add plan.json. Throws on a path or key clash. */
export function synthesize(ctx: SynthContext, writers: readonly ArtifactWriter[] = ARTIFACT_WRITERS): SynthResult {
  const plan = planDocument(ctx.stackName, ctx.plan);
  const files: SynthFile[] = [];
  const directories: string[] = [];
  const owned: string[] = [PLAN_FILE];
  const summary: string[] = [];
  const seen = new Set<string>([PLAN_FILE]);
  for (const w of writers) {
    for (const o of w.owns) {
      if (owned.includes(o)) throw new Error(`synth: ${w.name} claims ${o}, which another writer owns`);
      owned.push(o);
    }
    const out = w.write(ctx);
    for (const f of out.files) {
      const top = f.path.split("/")[0];
      if (!w.owns.includes(top))
        throw new Error(`synth: ${w.name} wrote ${f.path} outside the paths it owns (${w.owns.join(", ")})`);
      if (f.path.split("/").some((part) => part === ".." || part === "") || f.path.startsWith("/"))
        throw new Error(`synth: ${w.name} wrote an unsafe path ${f.path}`);
      if (seen.has(f.path)) throw new Error(`synth: ${f.path} written twice`);
      seen.add(f.path);
      files.push(f);
    }
    directories.push(...(out.directories ?? []));
    for (const [key, value] of Object.entries(out.plan ?? {})) {
      if (key in plan) throw new Error(`synth: ${w.name} adds plan.json key ${key}, which already exists`);
      plan[key] = value;
    }
    summary.push(...(out.summary ?? []));
  }
  files.push({ path: PLAN_FILE, content: JSON.stringify(plan, null, 2) + "\n" });
  return { files, directories, owned, plan, summary };
}
