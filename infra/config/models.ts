/**
 * The two forms of "which models": `triton-ft:model` (one model, today's
 * stacks) and `triton-ft:models` (a map from model id to that model's
 * settings). Both become a list of per-model views in the one-model shape
 * (`StackConfig`), so every rule, plan and renderer is written once, for one
 * model, and runs once per model.
 *
 * A view also maps the keys its rules report back to where the user wrote
 * them: `serving.maxBatchSize` of model `kogpt` is `models.kogpt.maxBatchSize`.
 *
 * Pure: plain values in, plain values out.
 */
import { GPU_INSTANCES, findGpuInstance as findInstance } from "../catalog/gpus";
import { MODEL_ID_RULE, modelIdFaults, suggestModelId } from "./modelIds";
import {
  MODEL_SERVING_KEYS,
  type Add,
  type CanaryConfig,
  type ModelEntry,
  type ParsedConfig,
  type StackConfig,
} from "./schema";

export interface ModelView {
  /** The map key in the `models` form; undefined in the one-model form (the id is then derived). */
  id?: string;
  /** The model's settings in the one-model shape. */
  config: StackConfig;
  /** The raw values in the one-model shape (rules that ask "was this key set?" read them). */
  raw: Record<string, unknown>;
  /** Where a rule's key was written in the stack file. */
  keyOf(key: string): string;
  /** `models.<id>.canary` (one-model form: `serving.canary`): the canary build's own view and its traffic settings. */
  canary?: CanaryView;
}

/**
 * A model's canary as a model of its own (issue 36): the stable view with the
 * canary's overrides merged in, named `<id>-canary` (CANARY_SUFFIX), so the
 * per-model rules, plan, renderers and components run for it unchanged. A
 * canary is served at a fixed size on nodes of its own: it never autoscales.
 */
export interface CanaryView {
  /** The stable model's id. */
  of: string;
  /** Where it was written: `models.<id>.canary`, or `serving.canary` in the one-model form. */
  key: string;
  view: ModelView;
  settings: CanaryConfig;
}

/** What names a canary's resources: `<id>-canary` (a model id that equals one is refused, resolve/canary.ts). */
export const CANARY_SUFFIX = "-canary";

/** The keys of `models.<id>.canary` that change the build or its serving; the others are traffic settings. */
export const CANARY_BUILD_KEYS = ["source", "maxBatchSize", "maxInputLen", "maxOutputLen", "instanceType"] as const;

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

const SERVING_KEYS: readonly string[] = MODEL_SERVING_KEYS;
const MODEL_KEYS = ["preset", "family", "engine", "source", "arch"] as const;

/** `serving.maxBatchSize` -> `models.<id>.maxBatchSize`; `model.preset` -> `models.<id>.preset`; `gemm.x` -> `models.<id>.gemm.x`. */
export function modelKey(id: string, key: string): string {
  const [head, ...rest] = key.split(".");
  const first = rest[0] ?? "";
  if (head === "model")
    return rest.length === 0 || first === "name" ? `models.${id}` : `models.${id}.${rest.join(".")}`;
  if (head === "gemm") return `models.${id}.${key}`;
  if (head === "serving" && SERVING_KEYS.includes(first.replace(/\[.*$/, ""))) return `models.${id}.${rest.join(".")}`;
  return key;
}

/** `o` without `key` (a copy). */
function withoutKey<T extends object, K extends keyof T>(o: T, key: K): Omit<T, K> {
  const copy = { ...o };
  delete copy[key];
  return copy;
}

function pick(entry: Record<string, unknown>, keys: readonly string[]): Record<string, unknown> {
  return Object.fromEntries(keys.filter((k) => k in entry).map((k) => [k, entry[k]]));
}

/** The builder instance of a model: the one given, or the entry of the list with the model's serving GPU. */
function builderFor(builders: string | string[], servingType: string, id: string | undefined, add: Add): string {
  if (typeof builders === "string") return builders;
  const gpu = findInstance(servingType)?.gpuModel;
  const match = builders.find((b) => findInstance(b)?.gpuModel === gpu);
  if (match) return match;
  if (gpu) {
    const candidates = GPU_INSTANCES.filter((i) => i.gpuModel === gpu).sort((a, b) => a.ramGiB - b.ramGiB);
    add(
      "build.builderInstanceType",
      builders,
      `has no instance with the ${gpu} GPU that ${id ? `models.${id}` : "the model"} serves on (${servingType}); gpt_gemm tunes for the GPU model that serves`,
      `add a ${gpu} instance with enough RAM for the conversion, e.g. ${candidates
        .map((c) => c.type)
        .slice(0, 3)
        .join(" or ")}`,
    );
  }
  return builders[0] ?? "";
}

/** Problems of the builder list as a whole: two builders for one GPU model, or a builder no model uses. */
function checkBuilderList(builders: string[], servingTypes: string[], add: Add): void {
  const served = new Set(servingTypes.map((t) => findInstance(t)?.gpuModel).filter((g) => g !== undefined));
  const seen = new Map<string, string>();
  for (const b of builders) {
    const gpu = findInstance(b)?.gpuModel;
    if (!gpu) continue; // knownInstance reports the unknown type
    const other = seen.get(gpu);
    if (other)
      add(
        "build.builderInstanceType",
        builders,
        `lists two builders with the ${gpu} GPU (${other}, ${b}); models on one GPU model share one builder`,
        `keep one ${gpu} instance: the one with the most RAM the conversions need`,
      );
    seen.set(gpu, b);
    if (!served.has(gpu))
      add(
        "build.builderInstanceType",
        builders,
        `lists ${b} (${gpu}), but no model serves on ${gpu}: the builder would cost money and build nothing`,
        `remove ${b}, or serve a model on ${gpu}`,
      );
  }
}

/**
 * Whether the stack builds on a CPU builder (issue 37): it builds at all (no
 * build.promoteFrom) and every model is served by vLLM, whose fetch and bake
 * need no GPU. One FT model keeps every builder a GPU builder as before, and a
 * vLLM model then bakes on its GPU model's builder. A canary is built with its
 * model's engine, so it follows its model.
 */
export function buildsOnCpu(parsed: Pick<ParsedConfig, "model" | "models" | "build">): boolean {
  if (parsed.build.promoteFrom) return false;
  const engines = parsed.models ? Object.values(parsed.models).map((e) => e.engine) : [parsed.model?.engine];
  return engines.length > 0 && engines.every((e) => e === "vllm");
}

/** The per-model views of a parsed config; problems of the forms themselves go to `add`. */
export function modelViews(parsed: ParsedConfig, raw: Record<string, unknown>, add: Add): ModelView[] {
  const { model, models, build, ...rest } = parsed;
  if (model && models) {
    add(
      "models",
      Object.keys(models),
      "is set together with triton-ft:model",
      "keep one form: move triton-ft:model into triton-ft:models as one entry (docs/serving.md, Several models), or remove triton-ft:models",
    );
    return [];
  }
  if (model) {
    // serving.canary is the view's canary, not a serving key: the stable's config and raw stay as without it.
    const { canary, ...serving } = rest.serving;
    const config: StackConfig = {
      ...rest,
      serving,
      model,
      build: { ...build, builderInstanceType: firstBuilder(build) },
    };
    if (Array.isArray(build.builderInstanceType) && build.builderInstanceType.length > 1)
      add(
        "build.builderInstanceType",
        build.builderInstanceType,
        "lists several builders, but a one-model stack has one serving GPU model",
        "give one instance type",
      );
    const rawServing = isRecord(raw.serving) ? raw.serving : {};
    const view: ModelView = {
      config,
      raw: canary ? { ...raw, serving: withoutKey(rawServing, "canary") } : raw,
      keyOf: (k) => k,
    };
    return [canary ? { ...view, canary: canaryView(view, canary, "serving.canary") } : view];
  }
  if (!models || Object.keys(models).length === 0) {
    add(
      models ? "models" : "model",
      models ? {} : undefined,
      models ? "holds no model" : "is not set, and neither is triton-ft:models",
      "set triton-ft:model (one model) or triton-ft:models (a map from model id to its settings)",
    );
    return [];
  }
  checkOneModelKeysUnused(raw, add);
  const { canary: oneModelCanary, ...stackServing } = rest.serving;
  if (oneModelCanary)
    add(
      "serving.canary",
      oneModelCanary,
      "is the canary of a one-model stack, and this stack lists its models in triton-ft:models",
      "move it into the model it is a canary of: triton-ft:models.<id>.canary",
    );
  const rawModels = isRecord(raw.models) ? raw.models : {};
  const entries = Object.entries(models);
  // A CPU-built stack has no GPU builder to match (resolve/engine.ts refuses the key there).
  const gpuBuilders = !buildsOnCpu(parsed);
  if (gpuBuilders && Array.isArray(build.builderInstanceType))
    checkBuilderList(
      build.builderInstanceType,
      entries.map(([, e]) => e.instanceType),
      add,
    );
  const ids = entries.map(([id]) => id);
  return entries.map(([id, entry]) =>
    modelView(
      id,
      checkModelId(id, ids, add),
      entry,
      rawModels[id],
      { ...rest, serving: stackServing },
      gpuBuilders ? build : { ...build, builderInstanceType: firstBuilder(build) },
      raw,
      add,
    ),
  );
}

/**
 * The name a model's resources get: its id, or, when the id breaks the rule
 * (reported here, once), the valid id offered as the fix. The model is then
 * checked under that name, so nothing derived from the bad id adds noise.
 */
function checkModelId(id: string, ids: readonly string[], add: Add): string {
  const faults = modelIdFaults(id);
  if (faults.length === 0) return id;
  const suggestion = suggestModelId(
    id,
    ids.filter((other) => other !== id),
  );
  add(
    `models.${id}`,
    id,
    `is not a model id: it has ${faults.join(", ")}; a model id is ${MODEL_ID_RULE}`,
    `rename it, e.g. to ${suggestion}, here and in any serving.consumers.<team>.models that names it`,
  );
  return suggestion;
}

function firstBuilder(build: ParsedConfig["build"]): string {
  return typeof build.builderInstanceType === "string"
    ? build.builderInstanceType
    : (build.builderInstanceType[0] ?? "");
}

/** In the `models` form the per-model keys of serving, and gemm, belong to each model. */
function checkOneModelKeysUnused(raw: Record<string, unknown>, add: Add): void {
  const serving = isRecord(raw.serving) ? raw.serving : {};
  for (const k of SERVING_KEYS)
    if (k in serving)
      add(
        `serving.${k}`,
        serving[k],
        "is a per-model key, and this stack lists its models in triton-ft:models",
        `move it into each model: triton-ft:models.<id>.${k}`,
      );
  if (raw.gemm !== undefined)
    add(
      "gemm",
      raw.gemm,
      "is a per-model key, and this stack lists its models in triton-ft:models",
      "move it into each model: triton-ft:models.<id>.gemm",
    );
}

function modelView(
  id: string,
  name: string,
  entry: ModelEntry,
  rawEntry: unknown,
  rest: Omit<StackConfig, "model" | "build">,
  build: ParsedConfig["build"],
  raw: Record<string, unknown>,
  add: Add,
): ModelView {
  const keyOf = (k: string) => modelKey(id, k);
  const addHere: Add = (key, value, message, fix) => add(keyOf(key), value, message, fix);
  const model = { ...pick(entry, MODEL_KEYS), name } as StackConfig["model"];
  const serving = { ...rest.serving, ...(pick(entry, SERVING_KEYS) as Partial<StackConfig["serving"]>) };
  const config: StackConfig = {
    ...rest,
    model,
    serving,
    gemm: entry.gemm,
    build: { ...build, builderInstanceType: builderFor(build.builderInstanceType, entry.instanceType, id, addHere) },
  };
  const r = isRecord(rawEntry) ? rawEntry : {};
  const rawServing = isRecord(raw.serving) ? raw.serving : {};
  const viewRaw: Record<string, unknown> = {
    ...raw,
    model: { ...pick(r, MODEL_KEYS), name },
    serving: { ...rawServing, ...pick(r, SERVING_KEYS) },
    ...(r.gemm !== undefined ? { gemm: r.gemm } : {}),
  };
  delete viewRaw.models;
  if (r.gemm === undefined) delete viewRaw.gemm;
  const view: ModelView = { id, config, raw: viewRaw, keyOf };
  return entry.canary ? { ...view, canary: canaryView(view, entry.canary, `models.${id}.canary`) } : view;
}

/**
 * A one-model stack's canary named after the stable's resolved name: that
 * form's model.name may be unset (resolve/model.ts derives it from the preset
 * or the repository), and the canary's resources are `<stable name>-canary`.
 */
export function canaryNamedAfter(view: ModelView, stableName: string): ModelView {
  if (!view.canary || view.id !== undefined || view.config.model.name !== undefined) return view;
  const named: ModelView = { ...view, config: { ...view.config, model: { ...view.config.model, name: stableName } } };
  return { ...view, canary: canaryView(named, view.canary.settings, view.canary.key) };
}

/**
 * The canary's view: the stable's settings with the canary's build keys over
 * them, a fixed replica count and no autoscaling, under `<id>-canary`. A rule
 * about a key the canary sets is reported under `key` (`models.<id>.canary`,
 * or `serving.canary` in the one-model form) and the key's name; one about an
 * inherited key under the stable's own key.
 */
function canaryView(stable: ModelView, c: CanaryConfig, key: string): CanaryView {
  const of = stable.id ?? stable.config.model.name ?? "";
  const name = `${stable.config.model.name ?? of}${CANARY_SUFFIX}`;
  const base = stable.config;
  // The canary never autoscales: its view has no autoscaling block.
  const stableServing = withoutKey(base.serving, "autoscaling");
  const config: StackConfig = {
    ...base,
    model: { ...base.model, name, ...(c.source ? { source: c.source } : {}) },
    serving: {
      ...stableServing,
      ...(c.instanceType !== undefined ? { instanceType: c.instanceType } : {}),
      ...(c.maxBatchSize !== undefined ? { maxBatchSize: c.maxBatchSize } : {}),
      ...(c.maxInputLen !== undefined ? { maxInputLen: c.maxInputLen } : {}),
      ...(c.maxOutputLen !== undefined ? { maxOutputLen: c.maxOutputLen } : {}),
      replicas: c.replicas,
    },
  };
  const rawModel = isRecord(stable.raw.model) ? stable.raw.model : {};
  const rawServing = isRecord(stable.raw.serving) ? stable.raw.serving : {};
  const rawServingRest = withoutKey(rawServing, "autoscaling");
  const raw: Record<string, unknown> = {
    ...stable.raw,
    model: { ...rawModel, name, ...(c.source ? { source: c.source } : {}) },
    serving: {
      ...rawServingRest,
      ...pick(c, ["instanceType", "maxBatchSize", "maxInputLen", "maxOutputLen"]),
      replicas: c.replicas,
    },
  };
  const keyOf = (k: string): string => {
    const [head = "", rest = ""] = k.split(/\.(.*)/s);
    const leaf = (rest.split(".")[0] ?? "").replace(/\[.*$/, "");
    const setHere =
      (head === "model" && leaf === "source" && c.source !== undefined) ||
      (head === "serving" &&
        (leaf === "replicas" ||
          ((CANARY_BUILD_KEYS as readonly string[]).includes(leaf) && c[leaf as keyof CanaryConfig] !== undefined)));
    return setHere ? `${key}.${rest}` : stable.keyOf(k);
  };
  return { of, key, settings: c, view: { id: name, config, raw, keyOf } };
}
