/**
 * The program under Pulumi's mock runtime with serving.autoscaling: what the
 * scaling wiring registers (Karpenter instead of a fixed GPU node group, KEDA,
 * the ScaledObjects of Triton and the gateway, DCGM, the operator objects) and
 * what it leaves to the HPA.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { runProgram, type ProgramRun } from "../lib/pulumi";
import { controllerPolicyNames, interruptionRules } from "../../infra/cloud/karpenter";
import { gptjAutoscaled } from "../lib/scalingFixtures";
import { gpt2Config } from "../lib/fixtures";

type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj => (v ?? {}) as Obj;

/** Custom resources register as `kubernetes:<apiVersion>:<kind>`. */
function crd(run: ProgramRun, kind: string) {
  return run.resources.filter((r) => r.type.startsWith("kubernetes:") && r.type.endsWith(`:${kind}`));
}

describe("create mode with serving.autoscaling", () => {
  let run: ProgramRun;
  beforeAll(async () => {
    const cfg = gptjAutoscaled();
    cfg.serving.serviceMonitor = true;
    run = await runProgram(cfg);
  });

  it("has Karpenter launch the GPU nodes instead of a fixed node group", () => {
    const groups = run.byType("eks:index:ManagedNodeGroup").map((r) => r.name);
    expect(groups).toEqual(["cluster-system"]);
    const releases = run.byType("kubernetes:helm.sh/v3:Release").map((r) => [r.inputs.chart, r.inputs.version]);
    expect(releases).toEqual(
      expect.arrayContaining([
        ["oci://public.ecr.aws/karpenter/karpenter", "1.14.1"],
        ["keda", "2.20.2"],
      ]),
    );
  });

  it("gives Karpenter AWS's published controller policies, an IRSA role and an interruption queue", () => {
    const policies = run.byType("aws:iam/policy:Policy").filter((r) => r.name.includes("karpenter"));
    expect(policies).toHaveLength(controllerPolicyNames().length);
    for (const p of policies) expect(String(p.inputs.policy)).not.toContain("${");
    expect(run.byType("aws:cloudwatch/eventRule:EventRule")).toHaveLength(interruptionRules().length);
    expect(run.byType("aws:sqs/queue:Queue")[0].inputs).toMatchObject({
      messageRetentionSeconds: 300,
      sqsManagedSseEnabled: true,
    });
    const role = run.byType("aws:iam/role:Role").find((r) => r.name.endsWith("-karpenter"));
    expect(String(role?.inputs.assumeRolePolicy)).toContain("system:serviceaccount:kube-system:karpenter");
    const release = run
      .byType("kubernetes:helm.sh/v3:Release")
      .find((r) => String(r.inputs.chart).includes("karpenter"));
    // The queue's generated name is unknown under mocks; the cluster name is wired through.
    expect(obj(obj(release?.inputs.values).settings).clusterName).toBeDefined();
  });

  it("fills the EC2NodeClass with the cluster's node role, private subnets and security group", () => {
    const [nc] = crd(run, "EC2NodeClass");
    const spec = obj(nc.inputs.spec);
    expect(String(spec.role)).not.toContain("<");
    expect((spec.subnetSelectorTerms as Obj[]).length).toBeGreaterThanOrEqual(2);
    for (const t of spec.subnetSelectorTerms as Obj[]) expect(String(t.id)).toMatch(/^subnet-/);
    expect(crd(run, "NodePool")).toHaveLength(1);
  });

  it("scales the Deployment with a ScaledObject and leaves its replica count to the HPA", () => {
    const so = crd(run, "ScaledObject").find((r) => r.name === "scaling-scaledobject");
    if (!so) throw new Error("no Triton ScaledObject");
    expect(obj(so.inputs.spec)).toMatchObject({ minReplicaCount: 2, maxReplicaCount: 8 });
    const d = run.one("kubernetes:apps/v1:Deployment", "triton-deployment");
    expect(obj(d.inputs.spec).replicas).toBeUndefined();
    const pdb = obj(run.one("kubernetes:policy/v1:PodDisruptionBudget", "triton-pdb").inputs.spec);
    expect(pdb.maxUnavailable).toBe(1);
    expect(pdb.minAvailable).toBeUndefined();
  });

  it("scales the gateway on in-flight requests, from gatewayReplicas, with its own PDB", () => {
    const so = crd(run, "ScaledObject").find((r) => r.name === "scaling-gateway-scaledobject");
    if (!so) throw new Error("no gateway ScaledObject");
    const spec = obj(so.inputs.spec);
    // maxInflight 2 × 8 × min 2 = 32 per pod, target 16; at max 8 Triton pods 2 × 8 × 8 = 128 in flight -> 8 pods.
    expect(spec).toMatchObject({
      minReplicaCount: 2,
      maxReplicaCount: 8,
      scaleTargetRef: { kind: "Deployment", name: "triton-gpt-j-6b-gateway" },
    });
    const trigger = (spec.triggers as Obj[])[0];
    expect(trigger).toMatchObject({ type: "prometheus", metricType: "AverageValue" });
    expect(obj(trigger.metadata)).toMatchObject({ threshold: "16" });
    expect(String(obj(trigger.metadata).query)).toContain("triton_ft_gateway_inflight_requests");
    expect(obj(run.one("kubernetes:apps/v1:Deployment", "gateway-deployment").inputs.spec).replicas).toBeUndefined();
    const pdb = obj(run.one("kubernetes:policy/v1:PodDisruptionBudget", "gateway-pdb").inputs.spec);
    expect(pdb).toMatchObject({ maxUnavailable: 1 });
    expect(pdb.minAvailable).toBeUndefined();
  });

  it("adds the DCGM exporter, the dashboard and, with the operator, ServiceMonitor and PrometheusRule", () => {
    expect(run.byType("kubernetes:apps/v1:DaemonSet").map((r) => r.name)).toEqual(["scaling-dcgm-exporter"]);
    expect(crd(run, "PrometheusRule")).toHaveLength(1);
    // Triton's own ServiceMonitor plus the exporter's and the gateway's.
    expect(crd(run, "ServiceMonitor")).toHaveLength(3);
    const cm = run.byType("kubernetes:core/v1:ConfigMap").find((r) => r.name === "scaling-dashboard");
    expect(obj(obj(cm?.inputs.metadata).labels).grafana_dashboard).toBe("1");
  });
});

describe("create mode with serving.autoscaling and no Prometheus of its own", () => {
  let run: ProgramRun;
  beforeAll(async () => {
    run = await runProgram(gptjAutoscaled({ prometheusUrl: undefined }));
  });

  it("installs kube-prometheus-stack, pinned, without node-exporter, and scales on its Prometheus", () => {
    const kps = run.byType("kubernetes:helm.sh/v3:Release").find((r) => r.inputs.chart === "kube-prometheus-stack");
    expect(kps?.inputs.version).toBe("88.5.3");
    expect(obj(obj(kps?.inputs.values).nodeExporter).enabled).toBe(false);
    for (const so of crd(run, "ScaledObject")) {
      const trigger = (obj(so.inputs.spec).triggers as Obj[])[0];
      expect(obj(trigger.metadata).serverAddress).toBe("http://prometheus-operated.monitoring.svc:9090");
    }
    expect(crd(run, "ScaledObject")).toHaveLength(2);
  });

  it("renders Triton's, the exporter's and the gateway's ServiceMonitors and the alerts for that operator", () => {
    expect(crd(run, "ServiceMonitor")).toHaveLength(3);
    expect(crd(run, "PrometheusRule")).toHaveLength(1);
  });
});

describe("fixed size", () => {
  it("keeps the managed GPU node group and installs neither KEDA nor Karpenter", async () => {
    const run = await runProgram(gpt2Config());
    expect(
      run
        .byType("eks:index:ManagedNodeGroup")
        .map((r) => r.name)
        .sort(),
    ).toEqual(["cluster-gpu", "cluster-system"]);
    const charts = run.byType("kubernetes:helm.sh/v3:Release").map((r) => String(r.inputs.chart));
    expect(charts.some((c) => c.includes("karpenter") || c === "keda")).toBe(false);
    for (const kind of ["ScaledObject", "NodePool", "EC2NodeClass", "PrometheusRule"])
      expect(crd(run, kind)).toEqual([]);
    // The DCGM exporter, and the triton_with_ft pre-pull of the model's fixed nodes (render/prePull.ts).
    expect(
      run
        .byType("kubernetes:apps/v1:DaemonSet")
        .map((r) => r.name)
        .sort(),
    ).toEqual(["scaling-dcgm-exporter", "triton-prepull"]);
    // The gateway keeps its fixed size and its PDB of max(1, replicas − 1).
    expect(obj(run.one("kubernetes:apps/v1:Deployment", "gateway-deployment").inputs.spec).replicas).toBe(2);
    expect(obj(run.one("kubernetes:policy/v1:PodDisruptionBudget", "gateway-pdb").inputs.spec).minAvailable).toBe(1);
  });
});
