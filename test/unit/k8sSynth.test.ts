import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { Deployment } from "kubernetes-models/apps/v1/Deployment";
import { ARTIFACT_WRITERS, synthesize } from "../../infra/synth/artifacts";
import { K8S_OUT, k8sManifestsWriter, synthServerImage } from "../../infra/synth/k8sArtifacts";
import { resolveStack } from "../../infra/resolve";
import { gpt2Config } from "../lib/fixtures";
import { gatewayOf, planOf, stackPlanOf } from "../lib/plan";
import { gptjAutoscaled, resolvedStack } from "../lib/scalingFixtures";

import type { SynthContext } from "../../infra/synth/types";
function ctx(): SynthContext {
  const { stack } = resolveStack(gpt2Config(), { hfToken: false, kubeconfig: false });
  if (!stack) throw new Error("fixture does not resolve");
  return {
    stackName: "dev",
    stack,
    plan: planOf(stack, undefined, "dev"),
    stackPlan: stackPlanOf(stack, undefined, "dev"),
    models: [stack],
    readRepoFile: () => undefined,
  };
}

describe("synth Kubernetes manifests", () => {
  it("is one of synth's default writers", () => {
    expect(ARTIFACT_WRITERS).toContain(k8sManifestsWriter);
  });

  it("writes the rendered manifests to k8s/ with a marked, digest-less image", () => {
    const result = synthesize(ctx(), [k8sManifestsWriter]);
    const paths = result.files.map((f) => f.path);
    expect(paths).toEqual([
      "k8s/00-namespace.yaml",
      "k8s/10-deployment.yaml",
      "k8s/11-prepull-daemonset.yaml",
      "k8s/20-service.yaml",
      "k8s/21-metrics-service.yaml",
      "k8s/30-poddisruptionbudget.yaml",
      // The managed store's password Secret the gateway reads (the cache itself is AWS, not Kubernetes).
      "k8s/45-store-secrets.yaml",
      "k8s/50-gateway-networkpolicies.yaml",
      "k8s/51-gateway-config.yaml",
      "k8s/52-gateway-keys-secret.yaml",
      "k8s/53-gateway-deployment.yaml",
      "k8s/54-gateway-service.yaml",
      "k8s/55-gateway-metrics-service.yaml",
      "k8s/56-gateway-poddisruptionbudget.yaml",
      // GPU metrics and dashboard; no Prometheus Operator in this stack, so a plain scrape config + rules.
      "k8s/70-dcgm-exporter.yaml",
      "k8s/72-dashboard-configmap.yaml",
      "dashboards/triton-gpt2.json",
      "prometheus/scrape-config.yaml",
      "prometheus/rules.yaml",
      "plan.json",
    ]);
    expect(result.owned).toContain(K8S_OUT);
    expect(synthServerImage("dev")).toBe("triton-ft-dev/server:synth");
    const file = result.files.find((f) => f.path === "k8s/10-deployment.yaml")?.content ?? "";
    expect(file.startsWith("# Rendered offline by `npm run synth`")).toBe(true);
    expect(file).not.toContain("&a1");
    const deployment = parse(file) as ConstructorParameters<typeof Deployment>[0];
    new Deployment(deployment).validate();
    expect(deployment?.spec?.template.spec?.containers[0]?.image).toBe("triton-ft-dev/server:synth");
    expect(deployment?.spec?.template.spec?.containers[0]?.command?.slice(0, -1)).toEqual(ctx().plan.launch.argv);
    expect(deployment?.spec?.template.spec?.containers[0]?.command?.at(-1)).toMatch(/^--exit-timeout-secs=\d+$/);
  });

  it("plan.json carries the workload numbers (the plan's kubernetes section); the summary line names them", () => {
    const result = synthesize(ctx(), [k8sManifestsWriter]);
    const k = result.plan.kubernetes as Record<string, unknown>;
    // The placeholder image is named in the manifests' header, not in the plan.
    const header = result.files.find((f) => f.path === "k8s/00-namespace.yaml")?.content ?? "";
    expect(header).toContain("the image triton-ft-dev/server:synth is a placeholder");
    expect(k.podsPerNode).toBe(1);
    expect(k.gpuNodes).toBe(2);
    expect(result.summary[0]).toMatch(/^kubernetes: 1 pod\(s\) × 1 GPU on 2 node\(s\)/);
  });
});

describe("the plan's render inputs", () => {
  it("are the plan's own sections, assembled once: every renderer input shares them", () => {
    const { plan, stackPlan } = ctx();
    const gateway = stackPlan.gateway;
    const r = plan.renderInputs;
    expect(r.triton.stackName).toBe("dev");
    expect(r.triton.workload).toBe(plan.kubernetes);
    expect(r.triton.launch).toBe(plan.launch);
    // The gateway is the stack's: named after the first model's workload, its config the gateway plan's.
    expect(gateway.workload.triton).toEqual(r.triton);
    expect(gateway.workload.config).toBe(gateway.plan.config);
    expect(r.scaling.workload).toBe(r.triton);
  });

  it("carry the scaling plan of an autoscaled stack, the one plan.json shows", () => {
    const plan = planOf(resolvedStack(gptjAutoscaled()), (p) => `h:${p}`, "dev");
    expect(plan.autoscaling).toBeDefined();
    expect(plan.renderInputs.scaling.autoscaling?.plan).toBe(plan.autoscaling);
    const gateway = gatewayOf(resolvedStack(gptjAutoscaled()), (p) => `h:${p}`, "dev").plan;
    expect(gateway.scaling?.maxReplicas).toBeGreaterThanOrEqual(gateway.replicas);
  });

  it("stay out of plan.json, which shows each number once", () => {
    const result = synthesize(ctx(), []);
    expect(Object.keys(result.plan)).not.toContain("renderInputs");
    expect(result.plan.kubernetes).toEqual(ctx().plan.kubernetes);
  });
});
