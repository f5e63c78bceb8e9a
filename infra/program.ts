/**
 * The composition root's body: config in, components wired, outputs out.
 * `index.ts` hands this function to the Pulumi runtime; tests call it directly
 * under mocks.
 */
import * as pulumi from "@pulumi/pulumi";
import { createBuild } from "./components/build";
import { createServing } from "./components/serving";
import { PROJECT } from "./config";
import { modelSourceUri, type ContractOutputs } from "./outputs";
import { loadStack } from "./stackConfig";
import { stackTags } from "./tags";

/**
 * The stack-output contract other teams consume (infra/outputs.ts: documented
 * in README, pinned by test/unit/serving.test.ts), plus the build side's extras.
 */
export interface StackOutputs extends ContractOutputs {
  [key: string]: unknown;
}

export function program(): StackOutputs {
  const { stack, secrets } = loadStack();
  const tags = stackTags(PROJECT, pulumi.getStack(), stack);
  const build = createBuild(stack, secrets, tags);
  const serving = createServing(stack, secrets, tags, {
    network: build.network,
    serverImage: build.pipeline.serverImage,
  });
  const m = stack.model;
  return {
    ...build.outputs,
    modelName: "ensemble",
    modelFamily: m.family,
    modelSource: modelSourceUri(m.source),
    tensorParallel: stack.config.serving.tensorParallel,
    serverImage: build.pipeline.serverImage,
    tritonWithFtImage: build.pipeline.tritonWithFtImage,
    ...serving.outputs,
  };
}
