/**
 * The models one gateway serves, each with its own Triton client, and who may
 * see which. A request's `model` (or the KServe path's model name) picks the
 * entry; a consumer whose key is scoped to some models sees only those.
 *
 * A model the caller may not use is answered exactly like a model that does
 * not exist (same status, same body): a key must not reveal which models
 * other teams use.
 */
import type { Consumer, ModelConfig } from "../config";
import { ApiError } from "../server/apiError";
import type { TritonClient } from "../triton/tritonClient";
import { CanaryRoute } from "../canary/canaryRoute";
import { ReadinessWatch } from "./readinessWatch";

export interface ServedModel {
  readonly config: ModelConfig;
  /** The stable build's Triton. */
  readonly triton: TritonClient;
  /** Only for a model that may sleep (`wake` in its config): whether its Triton is ready now. */
  readonly readiness?: ReadinessWatch;
  /** Only for a model with a `canary`: its build, its Triton and its state. */
  readonly canary?: CanaryRoute;
}

export interface RouterOptions {
  /** One Triton client per model with a canary, by model id: the canary build's. */
  canaryTritons?: ReadonlyMap<string, TritonClient>;
  /** A shared store is configured: a canary takes no request before the pod has read its shared decision. */
  sharedDecisions?: boolean;
}

/**
 * The 404 for a model the caller cannot use, whether it is not served or not
 * theirs. OpenAI answers an unknown model with `invalid_request_error` /
 * `model_not_found`, which its clients branch on. The message names only the
 * models the caller may use.
 */
export function modelNotFound(requested: string, visible: readonly string[]): ApiError {
  const serves =
    visible.length === 0
      ? "this key may use no model"
      : `this endpoint serves ${visible.map((id) => `'${id}'`).join(", ")}`;
  return new ApiError(
    404,
    "invalid_request_error",
    `the model '${requested}' does not exist or you do not have access to it; ${serves}`,
    "model_not_found",
    "model",
  );
}

export class ModelRouter {
  private readonly byId: ReadonlyMap<string, ServedModel>;

  /** `tritons` holds one client per configured model id; a missing one is a wiring mistake, refused here. */
  constructor(
    models: readonly ModelConfig[],
    tritons: ReadonlyMap<string, TritonClient>,
    { canaryTritons = new Map(), sharedDecisions = false }: RouterOptions = {},
  ) {
    this.byId = new Map(
      models.map((config) => {
        const triton = tritons.get(config.id);
        if (!triton) throw new Error(`no Triton client for model ${config.id}`);
        let canary: CanaryRoute | undefined;
        if (config.canary) {
          const canaryTriton = canaryTritons.get(config.id);
          if (!canaryTriton) throw new Error(`no Triton client for the canary of model ${config.id}`);
          canary = new CanaryRoute(config.canary, canaryTriton, sharedDecisions);
        }
        const model: ServedModel = {
          config,
          triton,
          ...(config.wake ? { readiness: new ReadinessWatch(triton) } : {}),
          ...(canary ? { canary } : {}),
        };
        return [config.id, model];
      }),
    );
  }

  /** The models with a canary. */
  get withCanary(): Array<ServedModel & { canary: CanaryRoute }> {
    return this.all.filter((m): m is ServedModel & { canary: CanaryRoute } => m.canary !== undefined);
  }

  /** The models that may sleep, each with its readiness watch. */
  get sleepers(): Array<ServedModel & { readiness: ReadinessWatch }> {
    return this.all.filter((m): m is ServedModel & { readiness: ReadinessWatch } => m.readiness !== undefined);
  }

  /** Every served model, in the config's order. */
  get all(): ServedModel[] {
    return [...this.byId.values()];
  }

  /** The models `consumer` may use, in the config's order; every model for a key without a scope. */
  visibleTo(consumer: Consumer): ServedModel[] {
    const scope = consumer.models;
    return scope === undefined ? this.all : this.all.filter((m) => scope.includes(m.config.id));
  }

  /** The model `requested` names, or the 404 when it is not served or not `consumer`'s. */
  route(requested: string, consumer: Consumer): ServedModel {
    const model = this.byId.get(requested);
    if (model && (consumer.models === undefined || consumer.models.includes(requested))) return model;
    throw modelNotFound(
      requested,
      this.visibleTo(consumer).map((m) => m.config.id),
    );
  }
}
