/**
 * Names derived from the project and the stack, for AWS resources and ECR
 * repositories. One home, so synth's offline renders and `pulumi up` agree.
 */
import { PROJECT } from "./config";

/** `<project>-<stack>` as AWS names accept it (ECR wants lowercase). */
export function namePrefix(stackName: string): string {
  return `${PROJECT}-${stackName}`.toLowerCase().replace(/[^a-z0-9-]+/g, "-");
}

/** ECR names: lowercase, may contain '/', '-', '_'. The stack namespace keeps stacks apart. */
export function repositoryNames(prefix: string): { tritonWithFt: string; server: string; gateway: string } {
  return { tritonWithFt: `${prefix}/triton_with_ft`, server: `${prefix}/server`, gateway: `${prefix}/gateway` };
}

/** A model's server repository (plan/registry.ts): the first model keeps the one-model `server`, a further one `server/<id>`. */
export function serverRepositoryName(prefix: string, modelId: string, first: boolean): string {
  const base = repositoryNames(prefix).server;
  return first ? base : `${base}/${modelId}`;
}
