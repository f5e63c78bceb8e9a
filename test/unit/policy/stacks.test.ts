/**
 * Every committed stack and every test stack passes the policy pack: the
 * resources the program registers under the mock runtime, and the Kubernetes
 * manifests synth renders (Helm and yaml/v2 resources are opaque under mocks,
 * so the workload rules run over the rendered files too).
 */
import * as fs from "node:fs";
import { afterAll, describe, expect, it } from "vitest";
import { allRules, evaluate, loadVendorPolicies, type Violation } from "../../../policy/rules";
import { kubernetesRules } from "../../../policy/rules/kubernetes";
import { registeredResources, stackFiles, synthManifests } from "./stacks";

const STACKS = stackFiles();

function report(vs: Violation[]): string {
  return vs.map((v) => `[${v.rule}] ${v.message}`).join("\n");
}

describe("stack files", () => {
  it("finds the committed stacks and the test stacks", () => {
    const names = STACKS.map((s) => s.name);
    expect(names).toEqual(expect.arrayContaining(["dev", "prod", "triton-test"]));
  });
});

describe.each(STACKS.map((s) => [s.name, s] as const))("stack %s", (_name, stack) => {
  const dirs: string[] = [];
  afterAll(() => {
    for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
  });

  it("passes every rule on the resources the program registers", async () => {
    const resources = await registeredResources(stack);
    expect(resources.length).toBeGreaterThan(10);
    const violations = evaluate(allRules({ vendorPolicies: loadVendorPolicies() }), resources);
    expect(violations, report(violations)).toEqual([]);
  });

  it("passes the Kubernetes rules on the manifests synth renders", () => {
    const { dir, resources } = synthManifests(stack);
    dirs.push(dir);
    expect(resources.some((r) => r.type === "kubernetes:apps/v1:Deployment")).toBe(true);
    const violations = evaluate(kubernetesRules({ allowSynthPlaceholder: true }), resources);
    expect(violations, report(violations)).toEqual([]);
  });
});
