import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import {
  KARPENTER_VERSION,
  controllerPolicies,
  controllerPolicyNames,
  interruptionQueueRetentionSeconds,
  interruptionRules,
} from "../../infra/cloud/karpenter";
import { serviceAccountTrustPolicy } from "../../infra/cloud/iam";
import { CHARTS } from "../../infra/catalog/charts";

const DATA = path.resolve(__dirname, "../../infra/data/karpenter", KARPENTER_VERSION);
const V = {
  partition: "aws",
  region: "us-east-1",
  accountId: "123456789012",
  urlSuffix: "amazonaws.com",
  clusterName: "triton-ft-prod",
  interruptionQueueArn: "arn:aws:sqs:us-east-1:123456789012:triton-ft-prod-karpenter",
  nodeRoleArn: "arn:aws:iam::123456789012:role/triton-ft-prod-nodes",
};

describe("Karpenter's published IAM template", () => {
  it("is the vendored file of the pinned release, unmodified", () => {
    const source = JSON.parse(readFileSync(path.join(DATA, "source.json"), "utf8")) as {
      version: string;
      sha256: string;
      url: string;
      chart: { version: string };
    };
    const sha = createHash("sha256")
      .update(readFileSync(path.join(DATA, "cloudformation.yaml")))
      .digest("hex");
    expect(sha).toBe(source.sha256);
    expect(source.version).toBe(KARPENTER_VERSION);
    expect(source.url).toContain(`/${KARPENTER_VERSION}/`);
    // The chart the stack installs is the release the policies come from.
    expect(`v${CHARTS.karpenter.version}`).toBe(KARPENTER_VERSION);
    expect(source.chart.version).toBe(CHARTS.karpenter.version);
  });

  it("yields the controller policies with every placeholder substituted", () => {
    const policies = controllerPolicies(V);
    expect(policies.map((p) => p.name)).toEqual(controllerPolicyNames());
    expect(policies.length).toBeGreaterThanOrEqual(5);
    const text = JSON.stringify(policies);
    expect(text).not.toContain("${");
    // Scoped to this cluster's resources, and PassRole only for the node role.
    expect(text).toContain("kubernetes.io/cluster/triton-ft-prod");
    const passRole = policies
      .flatMap((p) => p.document.Statement)
      .filter((s) => JSON.stringify(s.Action).includes("iam:PassRole"));
    expect(passRole.map((s) => s.Resource)).toEqual([V.nodeRoleArn]);
    const sqs = policies.flatMap((p) => p.document.Statement).filter((s) => JSON.stringify(s.Action).includes("sqs:"));
    expect(sqs.map((s) => s.Resource)).toEqual([V.interruptionQueueArn]);
  });

  it("refuses a template placeholder it has no value for", () => {
    expect(() => controllerPolicies({ ...V, clusterName: undefined as unknown as string })).toThrow(
      /no value for \$\{ClusterName\}/,
    );
  });

  it("feeds spot, rebalance, health, state-change and reservation events to a short-lived queue", () => {
    const sources = interruptionRules().map((r) => (r.eventPattern["detail-type"] as string[])[0]);
    expect(sources).toEqual(
      expect.arrayContaining(["EC2 Spot Instance Interruption Warning", "EC2 Instance Rebalance Recommendation"]),
    );
    expect(interruptionQueueRetentionSeconds()).toBe(300);
  });

  it("trusts only the controller's service account through the cluster's OIDC provider", () => {
    const t = serviceAccountTrustPolicy(
      "arn:aws:iam::123456789012:oidc-provider/oidc.eks.us-east-1.amazonaws.com/id/ABC",
      "https://oidc.eks.us-east-1.amazonaws.com/id/ABC",
      "kube-system",
      "karpenter",
    );
    expect(t.Statement[0].Condition).toEqual({
      StringEquals: {
        "oidc.eks.us-east-1.amazonaws.com/id/ABC:sub": "system:serviceaccount:kube-system:karpenter",
        "oidc.eks.us-east-1.amazonaws.com/id/ABC:aud": "sts.amazonaws.com",
      },
    });
  });
});
