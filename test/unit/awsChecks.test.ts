/**
 * Preview truth about AWS itself: the Region, ARNs of another Region, AZs EKS
 * cannot use, tag keys AWS treats as one or its controllers keep, and GPUs
 * paid for and never used. Each refused at synth with the key, the value and
 * the fix (idle GPUs: a warning with the money).
 */
import { describe, expect, it } from "vitest";
import { resolveStack } from "../../infra/resolve";
import { idleGpus } from "../../infra/resolve/idleGpus";
import { findGpuInstance } from "../../infra/catalog/gpus";
import { AWS_REGIONS, EKS_UNSUPPORTED_AZS, RESERVED_TAG_KEYS } from "../../infra/config/awsFacts";
import type { StackConfig } from "../../infra/config/schema";
import { createdVpcZoneProblems, existingNetworkProblems } from "../../infra/resolve/network";
import { gpt2Config, withOverrides } from "../lib/fixtures";

const TODAY = "2026-11-25";
const resolve = (raw: Record<string, unknown>, region?: string) =>
  resolveStack(raw, {}, { today: TODAY, ...(region ? { region } : {}) });
const problem = (raw: Record<string, unknown>, key: string, region = "us-east-1") =>
  resolve(raw, region).problems.filter((p) => p.key === key);

describe("the Region", () => {
  it("refuses aws:region that is not a Region, offering the near one", () => {
    const [p, ...rest] = problem(gpt2Config(), "aws:region", "us-east1");
    expect(rest).toEqual([]);
    expect(p?.value).toBe("us-east1");
    expect(p?.message).toContain("is not an AWS Region");
    expect(p?.fix).toContain("did you mean us-east-1?");
    // Reported with the schema's problems too, when the namespace itself does not parse.
    const both = resolve({ ...gpt2Config(), model: 7 }, "us-east1").problems.map((x) => x.key);
    expect(both).toEqual(expect.arrayContaining(["aws:region", "triton-ft:model"]));
    expect(problem(gpt2Config(), "aws:region", "eu-central-2")).toEqual([]);
    expect(problem(gpt2Config(), "aws:region", "cn-north-1")).toEqual([]);
  });

  it("refuses a certificate of another Region, and of another partition", () => {
    const cert = (arn: string) =>
      withOverrides(gpt2Config(), { serving: { loadBalancerScheme: "internal", tlsCertificateArn: arn } });
    const other = problem(
      cert("arn:aws:acm:eu-west-1:123456789012:certificate/0a1b2c3d-aaaa-bbbb-cccc-0123456789ab"),
      "triton-ft:serving.tlsCertificateArn",
    );
    expect(other.map((p) => p.message)).toEqual([expect.stringContaining("is in Region eu-west-1")]);
    expect(other[0]?.fix).toContain("in us-east-1");
    const cn = problem(
      cert("arn:aws-cn:acm:cn-north-1:123456789012:certificate/0a1b2c3d-aaaa-bbbb-cccc-0123456789ab"),
      "triton-ft:serving.tlsCertificateArn",
    );
    expect(cn.map((p) => p.message)).toEqual([expect.stringContaining("partition aws-cn")]);
    expect(
      problem(
        cert("arn:aws:acm:us-east-1:123456789012:certificate/0a1b2c3d-aaaa-bbbb-cccc-0123456789ab"),
        "triton-ft:serving.tlsCertificateArn",
      ),
    ).toEqual([]);
  });
});

describe("Availability Zones EKS cannot use", () => {
  it("refuses a created VPC across more AZs than the Region has for EKS", () => {
    const azs = (n: number) => withOverrides(gpt2Config(), { network: { mode: "create", availabilityZones: n } });
    // us-east-1 has six AZ IDs; EKS places no control-plane subnets in use1-az3.
    const p = problem(azs(6), "triton-ft:network.availabilityZones");
    expect(p.map((x) => x.message)).toEqual([expect.stringContaining("use1-az3")]);
    expect(p[0]?.fix).toContain("at most 5");
    expect(problem(azs(5), "triton-ft:network.availabilityZones")).toEqual([]);
    // us-west-1: usw1-az2 is refused, two are left.
    expect(problem(azs(3), "triton-ft:network.availabilityZones", "us-west-1")).toHaveLength(1);
    // A Region with none on record is not limited here.
    expect(problem(azs(6), "triton-ft:network.availabilityZones", "eu-west-1")).toEqual([]);
  });
});

describe("tag keys", () => {
  const tags = (t: Record<string, string>) => withOverrides(gpt2Config(), { tags: t });
  const tagProblems = (t: Record<string, string>) =>
    resolve(tags(t), "us-east-1").problems.filter((p) => p.key.startsWith("triton-ft:tags"));

  it("refuses two keys that differ only in case, and one that is the stack's own key in another case", () => {
    const twice = tagProblems({ Team: "a", team: "b" });
    expect(twice.map((p) => [p.key, p.value])).toEqual([["triton-ft:tags.team", "team"]]);
    expect(twice[0]?.message).toContain("differ only in case");
    const own = tagProblems({ "Pulumi:Stack": "x" });
    expect(own.map((p) => p.message)).toEqual([expect.stringContaining("stack's own tag pulumi:stack")]);
    expect(tagProblems({ team: "a", "cost-center": "b" })).toEqual([]);
  });

  it.each([
    ["kubernetes.io/cluster/other", "Kubernetes"],
    ["Kubernetes.io/role/elb", "Kubernetes"],
    ["karpenter.sh/nodepool", "Karpenter"],
    ["karpenter.k8s.aws/ec2nodeclass", "Karpenter"],
    ["eks:eks-cluster-name", "EKS"],
    ["elbv2.k8s.aws/cluster", "the AWS Load Balancer Controller"],
    ["service.k8s.aws/stack", "the AWS Load Balancer Controller"],
    ["Ingress.k8s.aws/resource", "the AWS Load Balancer Controller"],
  ])("refuses %s, a key %s keeps for itself", (key, owner) => {
    const p = tagProblems({ [key]: "x" });
    expect(p).toHaveLength(1);
    expect(p[0]?.key).toBe(`triton-ft:tags.${key}`);
    expect(p[0]?.message).toContain(`which ${owner} keeps for itself`);
  });

  it("refuses what the NLB's key=value annotation would change: = in a key, padding spaces", () => {
    const p = tagProblems({ "team=a": "x", " lead": "y", trail: "z ", "cost-center": "a=b c" });
    expect(p.map((x) => [x.key, x.value])).toEqual([
      ["triton-ft:tags.team=a", "team=a"],
      ["triton-ft:tags. lead", " lead"],
      ["triton-ft:tags.trail", "z "],
    ]);
    expect(p[0]?.message).toContain("cuts each pair at its first");
    expect(p[1]?.fix).toContain("leading and trailing spaces");
  });

  it("leaves keys that only look alike alone", () => {
    expect(tagProblems({ "app.kubernetes.io/team": "x", "karpenter-team": "y" })).toEqual([]);
  });
});

describe("idle GPUs", () => {
  const serving = (s: Partial<StackConfig["serving"]>) =>
    ({ tensorParallel: 1, replicas: 1, ...s }) as StackConfig["serving"];
  const g5x12 = findGpuInstance("g5.12xlarge");
  if (!g5x12) throw new Error("g5.12xlarge not in the catalog");

  it("counts the GPUs no pod uses, the rollout's slot excepted", () => {
    // 4 GPUs, TP 1, one replica: one pod and one surge slot, two GPUs idle.
    expect(idleGpus(serving({}), g5x12)).toMatchObject({ min: 2, max: 2 });
    // TP 3 on 4 GPUs: one pod per node, one GPU never used, plus the node the surge needs.
    expect(idleGpus(serving({ tensorParallel: 3 }), g5x12)).toMatchObject({ min: 2, max: 2 });
    // TP 2, one replica: the pod and the surge slot fill the node.
    expect(idleGpus(serving({ tensorParallel: 2 }), g5x12)).toMatchObject({ min: 0, max: 0 });
    // Autoscaled 1..5 at TP 1: one node at min (3 idle), two at max (3 idle).
    expect(idleGpus(serving({ autoscaling: { min: 1, max: 5 } } as never), g5x12)).toMatchObject({
      min: 3,
      max: 3,
    });
  });

  it("warns on the model's tensorParallel with the idle GPUs' $/month, never refuses", () => {
    const raw = withOverrides(gpt2Config(), { serving: { instanceType: "g5.12xlarge", replicas: 1 } });
    const r = resolve(raw, "us-east-1");
    expect(r.problems).toEqual([]);
    const w = r.warnings.filter((x) => x.key === "triton-ft:serving.tensorParallel");
    expect(w).toHaveLength(1);
    expect(w[0]?.message).toMatch(/leaves 2 GPU\(s\) idle: g5\.12xlarge has 4 GPUs.*about \$[\d,]+\/month/);
    // Without a Region there is no price, and it says so.
    const unpriced = resolve(raw).warnings.find((x) => x.key === "triton-ft:serving.tensorParallel");
    expect(unpriced?.message).toContain("not priced");
  });
});

describe("the facts are data with their sources", () => {
  it("cites a page and a date for each", () => {
    for (const f of [AWS_REGIONS, EKS_UNSUPPORTED_AZS])
      expect(f).toMatchObject({ source: expect.stringMatching(/^https:\/\//), read: expect.any(String) });
    for (const p of RESERVED_TAG_KEYS.prefixes) expect(p.source).toMatch(/https:\/\//);
    for (const r of Object.values(EKS_UNSUPPORTED_AZS.regions))
      for (const id of r.unsupported) expect(r.azIds).toContain(id);
  });
});

describe("Availability Zones at deploy time (the names only the account's lookup maps to IDs)", () => {
  const zones = {
    names: ["us-east-1a", "us-east-1b", "us-east-1c", "us-east-1d", "us-east-1e", "us-east-1f"],
    zoneIds: ["use1-az4", "use1-az3", "use1-az6", "use1-az1", "use1-az2", "use1-az5"],
  };

  it("refuses a created VPC whose first AZ names include one EKS does not use, naming both", () => {
    const [p, ...rest] = createdVpcZoneProblems("us-east-1", zones, 2);
    expect(rest).toEqual([]);
    expect(p).toContain("us-east-1b (use1-az3)");
    expect(p).toContain("use fewer (the AZs before us-east-1b)");
    expect(createdVpcZoneProblems("us-east-1", zones, 1)).toEqual([]);
    // The same IDs are no concern in a Region without any on record.
    expect(createdVpcZoneProblems("eu-west-1", zones, 6)).toEqual([]);
  });

  it("refuses an existing private subnet in such an AZ when the stack creates the cluster there", () => {
    const s = (id: string, az: string, azId: string) => ({
      id,
      vpcId: "vpc-1",
      availabilityZone: az,
      availabilityZoneId: azId,
    });
    const priv = [s("subnet-a", "us-east-1a", "use1-az4"), s("subnet-b", "us-east-1b", "use1-az3")];
    expect(existingNetworkProblems("vpc-1", [], priv, "us-east-1")).toEqual([
      expect.stringContaining("subnet subnet-b is in us-east-1b (use1-az3), where EKS places no control-plane subnets"),
    ]);
    // An existing cluster (no control plane created here): not this stack's concern.
    expect(existingNetworkProblems("vpc-1", [], priv)).toEqual([]);
  });
});
