import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CHARTS } from "../../infra/catalog/charts";
import {
  LB_CONTROLLER_POLICY_SOURCE,
  LB_CONTROLLER_POLICY_VERSION,
  publishedLbControllerPolicy,
  type PolicyStatement,
} from "../../infra/cloud/lbControllerIamPolicy";

const DATA = join(__dirname, "..", "..", "infra", "data", "aws-load-balancer-controller");

describe("pinned charts", () => {
  it("are the current upstream releases", () => {
    expect(CHARTS.lbController).toMatchObject({ version: "3.5.0", appVersion: "v3.5.0" });
    expect(CHARTS.devicePlugin).toMatchObject({ version: "0.20.0", appVersion: "0.20.0" });
  });

  it("the LB controller's IAM policy is the one published for the chart's version", () => {
    // Moving the chart without re-vendoring docs/install/iam_policy*.json fails here.
    expect(LB_CONTROLLER_POLICY_VERSION).toBe(CHARTS.lbController.appVersion);
    expect(LB_CONTROLLER_POLICY_SOURCE.chart.version).toBe(CHARTS.lbController.version);
    expect(CHARTS.lbController.source).toContain(`/${CHARTS.lbController.appVersion}/`);
  });

  it("the vendored policy files are byte-identical to what source.json records", () => {
    const dir = join(DATA, LB_CONTROLLER_POLICY_VERSION);
    for (const p of Object.values(LB_CONTROLLER_POLICY_SOURCE.partitions)) {
      const sha = createHash("sha256")
        .update(readFileSync(join(dir, p.file)))
        .digest("hex");
      expect(sha, p.file).toBe(p.sha256);
      expect(p.url).toContain(`/${LB_CONTROLLER_POLICY_VERSION}/docs/install/${p.file}`);
    }
  });
});

describe("published LB controller policy", () => {
  const actions = (s: PolicyStatement) => (Array.isArray(s.Action) ? s.Action : [s.Action]);
  const TAG_ACTIONS = /^(ec2:(CreateTags|DeleteTags)|elasticloadbalancing:(AddTags|RemoveTags))$/;

  for (const partition of ["aws", "aws-cn", "aws-us-gov"]) {
    it(`${partition}: every tag-mutating statement has a condition, and ARNs use the partition`, () => {
      const doc = publishedLbControllerPolicy(partition);
      expect(doc.Version).toBe("2012-10-17");
      const tagging = doc.Statement.filter((s) => actions(s).some((a) => TAG_ACTIONS.test(a)));
      expect(tagging.length).toBeGreaterThan(2);
      // Upstream conditions every tag statement on load balancers, target groups and security
      // groups; its one unconditioned statement tags listeners and listener rules only.
      const bare = tagging.filter((s) => s.Condition === undefined);
      expect(bare).toHaveLength(1);
      const bareResources = [bare[0]!.Resource].flat();
      expect(bareResources.every((r) => /:listener(-rule)?\//.test(r))).toBe(true);
      const arns = JSON.stringify(doc).match(/arn:[a-z-]+:/g) ?? [];
      expect(new Set(arns)).toEqual(new Set([`arn:${partition}:`]));
      // What an NLB for a Service needs.
      const all = doc.Statement.flatMap(actions);
      for (const a of [
        "elasticloadbalancing:CreateLoadBalancer",
        "elasticloadbalancing:CreateTargetGroup",
        "ec2:AuthorizeSecurityGroupIngress",
      ])
        expect(all).toContain(a);
    });
  }

  it("refuses a partition without a published policy", () => {
    expect(() => publishedLbControllerPolicy("aws-iso")).toThrow(/no IAM policy for partition aws-iso/);
  });
});
