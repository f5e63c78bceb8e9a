/**
 * What `synth` writes into its output folder: plan.json (the plan) and what
 * each artifact writer renders from it. Each writer owns top-level paths of
 * the folder and may add a section to plan.json; new
 * artifacts (Kubernetes manifests, Dockerfiles, step scripts) are new writers
 * appended to the list, with no change to the CLI. Pure: file reads go through
 * the context so writers run the same in tests.
 *
 * A stack of several models (synthesizeStack) runs every writer once per model
 * into `models/<id>/` (its `writeModel`, else `write`) and once for what the
 * models share (`writeShared`) at the top; plan.json then holds each model's
 * plan under `models` and the stack's builders. A live canary (issue 36) gets
 * its folder `models/<id>-canary/` too, its plan under `canaries`.
 */
import { PLAN_DOCUMENT_OMITS, type Plan } from "../plan";
import { stepPlanEntries } from "../plan/stepGraph";
import { buildStepsWriter } from "./buildArtifacts";
import { costWriter } from "./costArtifacts";
import { k8sManifestsWriter } from "./k8sArtifacts";
import type { ArtifactWriter, StackSynthContext, SynthContext, SynthFile, WriterOutput } from "./types";

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
    if (repo.shipped) {
      // A vLLM model: its model.py (the packages beside it are whole folders, added by the bake).
      for (const t of repo.shipped.filter((x) => x.from.endsWith(".py"))) {
        const content = ctx.readRepoFile(t.from);
        if (content !== undefined) files.push({ path: `${MODEL_REPOSITORY_OUT}/${t.to}`, content });
      }
      return {
        files,
        directories: repo.directories.map((d) => `${MODEL_REPOSITORY_OUT}/${d}`),
        summary: [
          `model repository (vLLM): ${repo.files.length} config.pbtxt + ${repo.shipped.map((t) => t.to).join(", ")} (the packages added by the bake) -> ${MODEL_REPOSITORY_OUT}/ (image path ${repo.root})`,
        ],
      };
    }
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

/** Collects writers' outputs: checks each file is under what its writer owns, once, at a safe path. */
class Collector {
  readonly files: SynthFile[] = [];
  readonly directories: string[] = [];
  private readonly seen = new Set<string>([PLAN_FILE]);

  /** Adds `out` of writer `w`, its paths under `prefix` (`models/<id>/`, or the top), its plan sections into `plan`. */
  add(w: ArtifactWriter, out: WriterOutput, plan: Record<string, unknown>, prefix = ""): void {
    for (const f of out.files) {
      const top = f.path.split("/")[0];
      if (!w.owns.includes(top))
        throw new Error(`synth: ${w.name} wrote ${f.path} outside the paths it owns (${w.owns.join(", ")})`);
      if (f.path.split("/").some((part) => part === ".." || part === "") || f.path.startsWith("/"))
        throw new Error(`synth: ${w.name} wrote an unsafe path ${f.path}`);
      const path = prefix + f.path;
      if (this.seen.has(path)) throw new Error(`synth: ${path} written twice`);
      this.seen.add(path);
      this.files.push({ path, content: f.content });
    }
    this.directories.push(...(out.directories ?? []).map((d) => prefix + d));
    for (const [key, value] of Object.entries(out.plan ?? {})) {
      if (key in plan) throw new Error(`synth: ${w.name} adds plan.json key ${key}, which already exists`);
      plan[key] = value;
    }
  }
}

/** Top-level entries every writer owns, checked for clashes; synth clears them (and `extra`) before writing. */
function ownedEntries(writers: readonly ArtifactWriter[], extra: string[]): string[] {
  const owned: string[] = [PLAN_FILE, ...extra];
  for (const w of writers)
    for (const o of w.owns) {
      if (owned.includes(o)) throw new Error(`synth: ${w.name} claims ${o}, which another writer owns`);
      owned.push(o);
    }
  return owned;
}

/** Run every writer, merge their plan sections, and add plan.json. Throws on a path or key clash. */
export function synthesize(ctx: SynthContext, writers: readonly ArtifactWriter[] = ARTIFACT_WRITERS): SynthResult {
  const plan = planDocument(ctx.stackName, ctx.plan);
  const owned = ownedEntries(writers, []);
  const out = new Collector();
  const summary: string[] = [];
  for (const w of writers) {
    const written = w.write(ctx);
    out.add(w, written, plan);
    summary.push(...(written.summary ?? []));
  }
  const files = [...out.files, { path: PLAN_FILE, content: JSON.stringify(plan, null, 2) + "\n" }];
  return { files, directories: out.directories, owned, plan, summary };
}

/** Where a stack of several models keeps each model's artifacts: `models/<id>/`. */
export const MODELS_OUT = "models";

export interface StackSynthResult extends SynthResult {
  /** Each model's summary lines, in the stack's order; `summary` holds the shared writers' lines. */
  models: Array<{ id: string; first: boolean; summary: string[] }>;
}

/**
 * A stack of several models: each writer per model (into `models/<id>/`,
 * its plan sections in that model's plan.json entry) and once for the stack
 * (`writeShared`, at the top). plan.json: the stack, each model's plan
 * document under `models`, the builders and the SM list of triton_with_ft.
 */
export function synthesizeStack(
  stack: StackSynthContext,
  writers: readonly ArtifactWriter[] = ARTIFACT_WRITERS,
): StackSynthResult {
  const owned = ownedEntries(writers, [MODELS_OUT]);
  const out = new Collector();
  const sp = stack.stackPlan;
  const models: StackSynthResult["models"] = [];
  const modelDocs: Record<string, Record<string, unknown>> = {};
  for (const [n, entry] of sp.models.entries()) {
    const resolved = stack.models[n];
    if (!resolved) throw new Error(`synth: model ${entry.id} has no resolved config`);
    const ctx: SynthContext = {
      stackName: stack.stackName,
      stack: resolved,
      plan: entry.plan,
      stackPlan: sp,
      models: stack.models,
      readRepoFile: stack.readRepoFile,
      ...(stack.region ? { region: stack.region } : {}),
      ...(stack.today ? { today: stack.today } : {}),
    };
    // The stack's name is said once, at the top.
    const doc = planDocument(stack.stackName, entry.plan);
    delete doc.stack;
    const modelDoc: Record<string, unknown> = { first: entry.first, builder: sp.builders[entry.builder]?.name, ...doc };
    const summary: string[] = [];
    for (const w of writers) {
      const written = w.writeModel ? w.writeModel(ctx, stack) : w.write(ctx);
      out.add(w, written, modelDoc, `${MODELS_OUT}/${entry.id}/`);
      summary.push(...(written.summary ?? []));
    }
    modelDocs[entry.id] = modelDoc;
    models.push({ id: entry.id, first: entry.first, summary });
  }
  // A live canary is served like a model of its own (its Triton workload, its own steps) under `models/<id>-canary/`;
  // plan.json keeps it under `canaries`, apart from the models the gateway routes by id.
  const canaryDocs: Record<string, Record<string, unknown>> = {};
  for (const c of sp.canaries) {
    if (c.promote) continue;
    const resolved = stack.models.find((m) => m.model.name === c.of)?.canary?.stack;
    if (!resolved) throw new Error(`synth: canary ${c.id} has no resolved config`);
    const ctx: SynthContext = {
      stackName: stack.stackName,
      stack: resolved,
      plan: c.plan,
      stackPlan: sp,
      models: stack.models,
      readRepoFile: stack.readRepoFile,
      ...(stack.region ? { region: stack.region } : {}),
      ...(stack.today ? { today: stack.today } : {}),
    };
    const doc = planDocument(stack.stackName, c.plan);
    delete doc.stack;
    const canaryDoc: Record<string, unknown> = {
      of: c.of,
      buildId: c.buildId,
      weight: c.weight,
      shared: c.shared,
      ...doc,
    };
    const summary: string[] = [];
    for (const w of writers) {
      const written = w.writeModel ? w.writeModel(ctx, stack) : w.write(ctx);
      out.add(w, written, canaryDoc, `${MODELS_OUT}/${c.id}/`);
      summary.push(...(written.summary ?? []));
    }
    canaryDocs[c.id] = canaryDoc;
    models.push({ id: c.id, first: false, summary });
  }
  const plan: Record<string, unknown> = {
    stack: stack.stackName,
    models: modelDocs,
    ...(Object.keys(canaryDocs).length > 0 ? { canaries: canaryDocs } : {}),
    builders: sp.builders,
    gateway: sp.gateway.plan,
  };
  const summary: string[] = [];
  for (const w of writers) {
    if (!w.writeShared) continue;
    const written = w.writeShared(stack);
    out.add(w, written, plan);
    summary.push(...(written.summary ?? []));
  }
  const files = [...out.files, { path: PLAN_FILE, content: JSON.stringify(plan, null, 2) + "\n" }];
  return { files, directories: out.directories, owned, plan, summary, models };
}
