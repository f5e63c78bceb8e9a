/**
 * The composition root's body: config in, components wired, outputs out.
 * `index.ts` hands this function to the Pulumi runtime; tests call it directly
 * under mocks.
 */
import * as pulumi from "@pulumi/pulumi";
import { createBuild } from "./components/build";
import { PROJECT } from "./config";
import { loadStack } from "./stackConfig";
import { stackTags } from "./tags";

/** The stack-output contract other teams consume (documented in README, pinned by a test). */
export interface StackOutputs {
  modelName: pulumi.Input<string>;
  modelFamily: pulumi.Input<string>;
  modelSource: pulumi.Input<string>;
  tensorParallel: pulumi.Input<number>;
  [key: string]: unknown;
}

export function program(): StackOutputs {
  const { stack, secrets } = loadStack();
  const tags = stackTags(PROJECT, pulumi.getStack(), stack);
  const build = createBuild(stack, secrets, tags);
  const m = stack.model;
  const modelSource = m.source.kind === "huggingface" ? `hf://${m.source.repo}@${m.source.revision}` : `${m.source.url}#sha256=${m.source.sha256}`;
  return {
    modelName: "ensemble",
    modelFamily: m.family,
    modelSource,
    tensorParallel: stack.config.serving.tensorParallel,
    ...build.outputs,
  };
}
