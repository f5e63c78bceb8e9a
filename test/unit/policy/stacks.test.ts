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
import { CLIENT_AUTH_ANNOTATION as RENDERED_CLIENT_AUTH } from "../../../infra/render/gatewayManifests";
import { CLIENT_AUTH_ANNOTATION } from "../../../policy/rules/kubernetes";
import { runProgram } from "../../lib/pulumi";
import { gpt2Config, withOverrides } from "../../lib/fixtures";
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
    // A synth subprocess per stack: 25 s alone for one model, near 40 s for the stacks of several
    // models on a loaded 2-core machine; the suite's 30 s default is for tests in one process.
  }, 120_000);
});

describe("an internet-facing gateway", () => {
  it("passes the pack with TLS and API keys (the only way validation lets it be internet-facing)", async () => {
    expect(RENDERED_CLIENT_AUTH).toBe(CLIENT_AUTH_ANNOTATION);
    const cfg = withOverrides(gpt2Config(), {
      serving: {
        loadBalancerScheme: "internet-facing",
        allowedCidrs: ["203.0.113.0/24"],
        consumers: ["search"],
        tlsCertificateArn: "arn:aws:acm:us-east-1:123456789012:certificate/0f1e2d3c-aaaa-bbbb-cccc-123456789012",
      },
    });
    const run = await runProgram(cfg);
    const resources = run.resources.map((r) => ({ type: r.type, name: r.name, props: r.inputs }));
    const lb = resources.filter(
      (r) =>
        r.type === "kubernetes:core/v1:Service" &&
        (r.props.spec as { type?: string } | undefined)?.type === "LoadBalancer",
    );
    expect(lb).toHaveLength(1);
    const violations = evaluate(allRules({ vendorPolicies: loadVendorPolicies() }), resources);
    expect(violations, report(violations)).toEqual([]);
    // Without the declaration the same Service is refused: the rule is what keeps it honest.
    const ann = (lb[0]?.props.metadata as { annotations: Record<string, string> }).annotations;
    delete ann[CLIENT_AUTH_ANNOTATION];
    expect(evaluate(allRules(), lb).map((v) => v.rule)).toEqual(["k8s-load-balancer-internal"]);
  });
});
