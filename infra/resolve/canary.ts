/**
 * The rules of `models.<id>.canary` (one-model form: `serving.canary`; issue 36) that are about the canary as a
 * second build of a model, not about it as a model: the per-model rules run on
 * the canary's own view (config/models.ts canaryView) like on any model. Each
 * problem names the key, the value and the fix; all are reported in one round.
 *
 * Pure.
 */
import { findGpuInstance } from "../catalog/gpus";
import { CANARY_BUILD_KEYS, CANARY_SUFFIX, type ModelView } from "../config/models";
import { MODEL_ID_MAX_CHARS, type Add, type CanaryConfig, type StackConfig } from "../config/schema";

/** The canary keys that differ from the stable build (a key set to the stable's own value differs in nothing). */
export function canaryChanges(stable: StackConfig, c: CanaryConfig): string[] {
  const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
  return CANARY_BUILD_KEYS.filter((k) => {
    if (c[k] === undefined) return false;
    return k === "source" ? !same(c.source, stable.model.source) : !same(c[k], stable.serving[k]);
  });
}

/**
 * Problems of one model's canary. `ids` are every model id of the stack (a
 * model named like a canary would share its resources' names); `add` takes
 * keys as written in the stack file.
 */
export function checkCanary(view: ModelView, ids: readonly string[], add: Add): void {
  const canary = view.canary;
  if (!canary) return;
  const { of, settings: c } = canary;
  const key = canary.key;
  const stable = view.config;
  const changes = canaryChanges(stable, c);
  if (changes.length === 0)
    add(
      c.promote ? `${key}.promote` : key,
      c.promote ? true : c,
      c.promote
        ? "promotes a canary that differs from the stable build in nothing: there is no canary build to promote"
        : "differs from the stable build in nothing (source, maxBatchSize, maxInputLen, maxOutputLen, instanceType): it would serve the same thing twice",
      c.promote
        ? `remove ${key}; to change the model, set the new value as the canary's (e.g. ${key}.maxBatchSize), deploy, then promote`
        : `set what the canary changes, e.g. ${key}.source.huggingface.revision or ${key}.maxBatchSize, or remove ${key}`,
    );
  const name = `${of}${CANARY_SUFFIX}`;
  if (ids.includes(name))
    add(
      `models.${name}`,
      name,
      `is the name of model ${of}'s canary resources (its Deployment, Service, nodes, repository, build steps)`,
      `rename the model ${name}, or remove ${key}`,
    );
  if (name.length > MODEL_ID_MAX_CHARS)
    add(
      key,
      of,
      `names its resources ${name} (${name.length} characters), longer than a model id may be (${MODEL_ID_MAX_CHARS}): AWS and Kubernetes names built from it would be refused`,
      `shorten the model id to at most ${MODEL_ID_MAX_CHARS - CANARY_SUFFIX.length} characters`,
    );
  const scaling = stable.serving.autoscaling;
  if (scaling && scaling.min === 0)
    add(
      key,
      "autoscaling.min 0",
      `is set on a model that sleeps (${view.keyOf("serving.autoscaling.min")} 0): a held request and a weighted split do not mix, and a canary judged on a model with no traffic never is`,
      `set ${view.keyOf("serving.autoscaling.min")} to 1 or more while the canary runs, or remove ${key}`,
    );
  if (stable.build.promoteFrom)
    add(
      key,
      c,
      "is set on a stack that builds nothing (build.promoteFrom): a canary is a build of its own",
      `build and promote the canary in the stack that builds (build.promoteFrom's source), or remove ${key}`,
    );
  const stableGpu = findGpuInstance(stable.serving.instanceType)?.gpuModel;
  const canaryGpu = c.instanceType !== undefined ? findGpuInstance(c.instanceType)?.gpuModel : stableGpu;
  if (c.instanceType !== undefined && canaryGpu !== undefined && stableGpu !== undefined && canaryGpu !== stableGpu)
    add(
      `${key}.instanceType`,
      c.instanceType,
      `has the ${canaryGpu} GPU, the stable build serves on ${stableGpu}: the canary shares the stable's builder, whose gpt_gemm tunes for the ${stableGpu}`,
      `pick an instance type with the ${stableGpu} GPU, or serve the new GPU as a model of its own in triton-ft:models`,
    );
  if (c.promote && changes.includes("instanceType"))
    add(
      `${key}.promote`,
      true,
      `would move the stable build to ${c.instanceType ?? ""} nodes: promotion rolls the stable Deployment in place and keeps its nodes`,
      `fold the canary into the model instead: set ${view.keyOf("serving.instanceType")} (and the canary's other keys) and remove ${key} (docs/serving.md, Canary: config, build and promotion)`,
    );
}
