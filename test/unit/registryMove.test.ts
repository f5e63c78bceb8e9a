/**
 * Moving a live stack of several models to one server repository per model
 * (infra/plan/registry.ts), on the example stack under the mocks: every
 * repository it had keeps its name and lifecycle policy (ECR replaces a
 * repository only for a new name; the policy decides what expires), each
 * further model bakes into and is tagged deployed in its own new repository,
 * so the shared `server` repository gets no push it did not get before and
 * none of its images becomes expirable by the move.
 */
import { describe, expect, it } from "vitest";
import { lifecyclePolicy } from "../../infra/cloud/ecr";
import { repositoryNames } from "../../infra/naming";
import { runProgram } from "../lib/pulumi";
import { SEED_MODELS_STACK, stackFileConfig } from "../lib/modelsForm";

const PREFIX = "triton-ft-seed-models";
const FURTHER = ["kogpt-6b", "codegen-2b-mono"];

describe("moving the example stack to a server repository per model", () => {
  it("keeps the repositories it had (names, policies) and adds one per further model", async () => {
    const run = await runProgram(stackFileConfig(SEED_MODELS_STACK), { stack: "seed-models" });
    const repos = Object.fromEntries(
      run.byType("aws:ecr/repository:Repository").map((r) => [r.name, String(r.inputs.name)]),
    );
    const before = repositoryNames(PREFIX);
    // The three a one-repository stack had, under the same component names and ECR names.
    expect(repos).toMatchObject({
      "registry-tritonWithFt": before.tritonWithFt,
      "registry-server": before.server,
      "registry-gateway": before.gateway,
    });
    for (const id of FURTHER) expect(repos[`registry-server-${id}`]).toBe(`${before.server}/${id}`);
    expect(Object.keys(repos)).toHaveLength(3 + FURTHER.length);
    // The policies are the one-repository stack's: the move changes no rule of the repositories it keeps.
    const policies = Object.fromEntries(
      run.byType("aws:ecr/lifecyclePolicy:LifecyclePolicy").map((p) => [p.name, p.inputs.policy]),
    );
    expect(policies["registry-server"]).toBe(lifecyclePolicy("server"));
    expect(policies["registry-tritonWithFt"]).toBe(lifecyclePolicy("tritonWithFt"));
    expect(policies["registry-gateway"]).toBe(lifecyclePolicy("gateway"));
  });

  it("pushes each model's bakes to its own repository and tags deployed there; the shared server gets only the first model's", async () => {
    const run = await runProgram(stackFileConfig(SEED_MODELS_STACK), { stack: "seed-models" });
    const bakeRepo = (pipeline: string) => {
      const stdin = String(run.one("command:remote:Command", `${pipeline}-config-bake`).inputs.stdin);
      return /^ECR_REPOSITORY_URL='[^/']+\/([^']+)'$/m.exec(stdin)?.[1];
    };
    expect(bakeRepo("build")).toBe(`${PREFIX}/server`);
    for (const id of FURTHER) expect(bakeRepo(`build-${id}`)).toBe(`${PREFIX}/server/${id}`);
    // tag-deployed.sh moves `deployed` in the repository of the image it is given: the model's own bake
    // (the mocks name a step's image after its resource, so the bake step stands for the repository).
    for (const id of FURTHER) {
      const tag = String(run.one("command:remote:Command", `build-${id}-deployed-server`).inputs.create);
      expect(tag).toMatch(new RegExp(`/build-${id}-bake@sha256:`));
    }
  });
});
