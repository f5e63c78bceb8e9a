/**
 * The triton_with_ft pre-pull DaemonSet (infra/render/prePull.ts): on the
 * model's own GPU nodes, restricted, tiny, by digest, never selected by the
 * server's Service; and the program creates it only where it pulls before the
 * pods (an FT model whose nodes come with the cluster, in a stack that builds).
 */
import { describe, expect, it } from "vitest";
import { DaemonSet } from "kubernetes-models/apps/v1/DaemonSet";
import { resolveStack } from "../../infra/resolve";
import { renderPrePull } from "../../infra/render/prePull";
import { prePullOnNodes } from "../../infra/resolve/workload";
import { deploymentSpec, selectorLabels } from "../../infra/render/tritonManifests";
import { containerSecurityContext, podSecurityContext } from "../../infra/render/podSecurity";
import { PROMETHEUS_URL } from "../lib/scalingFixtures";
import { gpt2Config, withOverrides, type RawConfig } from "../lib/fixtures";
import { planOf } from "../lib/plan";
import { runProgram } from "../lib/pulumi";
import { TRITON_WITH_FT_IMAGE_BYTES } from "../../infra/model/sizing";
import { ASSUMED } from "../../infra/catalog/timings";

const TWF = `123456789012.dkr.ecr.us-east-1.amazonaws.com/triton-ft-test/triton_with_ft@sha256:${"cd".repeat(32)}`;
const SERVER = `123456789012.dkr.ecr.us-east-1.amazonaws.com/triton-ft-test/server@sha256:${"ab".repeat(32)}`;

function resolved(raw: RawConfig) {
  const { stack } = resolveStack(raw, {});
  if (!stack) throw new Error("fixture must resolve");
  return stack;
}

function workload(raw: RawConfig) {
  return planOf(resolved(raw), (p) => `h:${p}`).renderInputs.triton;
}

describe("the pre-pull DaemonSet", () => {
  const w = workload(gpt2Config());
  const ds = renderPrePull(w, TWF);

  it("is a valid DaemonSet of triton_with_ft by digest, asleep, with tiny requests", () => {
    expect(() => new DaemonSet(ds).validate()).not.toThrow();
    const c = ds.spec?.template.spec?.containers[0];
    expect(c?.image).toBe(TWF);
    expect(c?.command).toEqual(["sleep", "infinity"]);
    expect(c?.resources).toEqual({ requests: { cpu: "1m", memory: "16Mi" }, limits: { memory: "16Mi" } });
    expect(() => renderPrePull(w, "triton_with_ft:latest")).toThrow(/triton_with_ft image/);
  });

  it("runs on the server's nodes under the restricted profile, and the server's selector never matches it", () => {
    const server = deploymentSpec(w, SERVER).template.spec;
    const pod = ds.spec?.template.spec;
    expect(pod?.affinity).toEqual(server?.affinity);
    expect(pod?.tolerations).toEqual(server?.tolerations);
    expect(pod?.securityContext).toEqual(podSecurityContext(1000));
    expect(pod?.containers[0]?.securityContext).toEqual(containerSecurityContext());
    expect(pod?.automountServiceAccountToken).toBe(false);
    const labels = ds.spec?.template.metadata?.labels ?? {};
    const matches = Object.entries(selectorLabels(w)).every(([k, v]) => labels[k] === v);
    expect(matches).toBe(false);
    expect(labels["app.kubernetes.io/component"]).toBe("image-prepull");
    expect(labels["app.kubernetes.io/managed-by"]).toBe("pulumi");
    expect(ds.metadata?.namespace).toBe(w.namespace);
  });

  it("is wanted for an FT model on nodes that come with the cluster only", () => {
    const fixed = resolved(gpt2Config());
    expect(prePullOnNodes(fixed)).toBe(true);
    expect(
      prePullOnNodes(
        resolved(
          withOverrides(gpt2Config(), { serving: { autoscaling: { min: 1, max: 2, prometheusUrl: PROMETHEUS_URL } } }),
        ),
      ),
    ).toBe(false);
    expect(prePullOnNodes({ ...fixed, vllm: {} as NonNullable<typeof fixed.vllm> })).toBe(false);
  });

  it("is created by the program with the image the compile pushed, beside the server's Deployment", async () => {
    const run = await runProgram(gpt2Config(), { stack: "dev" });
    const created = run.one("kubernetes:apps/v1:DaemonSet", "triton-prepull");
    const spec = created.inputs.spec as { template: { spec: { containers: Array<{ image: string }> } } };
    expect(spec.template.spec.containers[0]?.image).toMatch(/\/build-triton-with-ft@sha256:[0-9a-f]{64}$/);
    expect(created.options.dependsOn).toContain("kubernetes:core/v1:Namespace::triton-ns");
    // The provider awaits its pods, each a whole pull of triton_with_ft: past its 10-minute default.
    const budget = planOf(resolved(gpt2Config()), (p) => `h:${p}`).renderInputs.triton.workload.timeouts;
    const pull = Math.ceil(TRITON_WITH_FT_IMAGE_BYTES / ASSUMED.ecrPullBytesPerSecond);
    expect(budget.deploymentCreateSeconds).toBeGreaterThan(pull);
    expect(created.options.customTimeouts).toEqual({
      create: `${Math.ceil(budget.deploymentCreateSeconds / 60)}m`,
      update: `${Math.ceil(budget.deploymentCreateSeconds / 60)}m`,
    });
    expect(spec).toMatchObject({ updateStrategy: { rollingUpdate: { maxUnavailable: "100%" } } });
  }, 180_000);
});
