/**
 * The stack's ECR repositories: triton_with_ft and the gateway, shared, and
 * one server repository per model. A repository has one `deployed` and one
 * `deployed-previous` tag (infra/cloud/ecr.ts): were the models to share one,
 * each model's rollout would move the tags off the image another model runs,
 * and that image would expire once enough other builds followed
 * (test/unit/ecrRetention.test.ts simulates 50 rebuilds of one model).
 *
 * The first model keeps the one-model stack's `server` repository (its
 * component name and its ECR name), so a live stack keeps every repository
 * it has; a further model's repository is `<prefix>/server/<id>`, new.
 *
 * Pure: names only.
 */
import { repositoryNames, serverRepositoryName } from "../naming";

export interface ServerRepositoryPlan {
  /** The model whose baked images it holds. */
  model: string;
  /** Component child name: `server` for the first model (a one-model stack's), `server-<id>` for the others. */
  key: string;
  /** ECR repository name. */
  name: string;
}

export interface RegistryPlan {
  tritonWithFt: string;
  gateway: string;
  /** One per model, in the stack plan's order. */
  servers: ServerRepositoryPlan[];
}

export function registryPlan(prefix: string, modelIds: readonly string[]): RegistryPlan {
  const names = repositoryNames(prefix);
  return {
    tritonWithFt: names.tritonWithFt,
    gateway: names.gateway,
    servers: modelIds.map((model, i) => ({
      model,
      key: i === 0 ? "server" : `server-${model}`,
      name: serverRepositoryName(prefix, model, i === 0),
    })),
  };
}
