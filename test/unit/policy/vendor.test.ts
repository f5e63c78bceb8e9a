/**
 * Vendored third-party IAM policies (policy/rules/vendor.ts): their published
 * statements pass verbatim, an edited statement or an edited file does not,
 * and tagging what the load balancer controller adopts still needs a condition;
 * Karpenter's templated statements pass only with their placeholders filled by
 * plain values.
 */
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { statementProblems } from "../../../policy/rules/iam";
import { loadVendorPolicies, VENDOR_POLICY_DIRS } from "../../../policy/rules/vendor";
import { KARPENTER_VERSION, controllerPolicies, controllerPolicyNames } from "../../../infra/cloud/karpenter";

const DIR = VENDOR_POLICY_DIRS[0];
const PUBLISHED = {
  Version: "2012-10-17",
  Statement: [
    { Effect: "Allow", Action: ["ec2:AuthorizeSecurityGroupIngress", "ec2:RevokeSecurityGroupIngress"], Resource: "*" },
    {
      Effect: "Allow",
      Action: ["elasticloadbalancing:AddTags", "elasticloadbalancing:RemoveTags"],
      Resource: ["arn:aws:elasticloadbalancing:*:*:listener/net/*/*/*"],
    },
    {
      Effect: "Allow",
      Action: ["elasticloadbalancing:AddTags"],
      Resource: ["arn:aws:elasticloadbalancing:*:*:loadbalancer/net/*/*"],
    },
  ],
};

const roots: string[] = [];
function vendorTree(text: string, sha256?: string): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "vendor-"));
  roots.push(root);
  const dir = path.join(root, DIR, "v9.9.9");
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, "iam_policy.json"), text);
  const sha = sha256 ?? createHash("sha256").update(text).digest("hex");
  fs.writeFileSync(
    path.join(dir, "source.json"),
    JSON.stringify({ version: "v9.9.9", partitions: { aws: { file: "iam_policy.json", sha256: sha } } }),
  );
  return root;
}
afterAll(() => roots.forEach((r) => fs.rmSync(r, { recursive: true, force: true })));

describe("vendored policies", () => {
  const text = JSON.stringify(PUBLISHED, null, 4);
  const vendors = loadVendorPolicies(vendorTree(text));
  const [sgRules, listenerTags, lbTags] = PUBLISHED.Statement;

  it("loads the published statements with their version", () => {
    expect(vendors.map((v) => v.name)).toEqual(["aws-load-balancer-controller v9.9.9 iam_policy.json"]);
    expect(vendors[0]?.statements).toHaveLength(3);
  });

  it('accepts a published Resource "*" statement verbatim, whatever the key order', () => {
    expect(statementProblems(sgRules, [])).toEqual([expect.stringMatching(/on Resource "\*"/)]);
    expect(statementProblems(sgRules, vendors)).toEqual([]);
    const reordered = { Resource: sgRules.Resource, Action: sgRules.Action, Effect: "Allow" };
    expect(statementProblems(reordered, vendors)).toEqual([]);
  });

  it("checks an edited statement like any other", () => {
    const widened = { ...sgRules, Action: [...sgRules.Action, "ec2:DeleteSecurityGroup"] };
    expect(statementProblems(widened, vendors)).toEqual([
      expect.stringMatching(/DeleteSecurityGroup on Resource "\*"/),
    ]);
  });

  it("accepts unconditioned tags on listeners, never on what the controller adopts by tag", () => {
    expect(statementProblems(listenerTags, vendors)).toEqual([]);
    expect(statementProblems(lbTags, vendors)).toEqual([
      expect.stringMatching(
        /AddTags on arn:aws:elasticloadbalancing:\*:\*:loadbalancer\/net\/\*\/\* with no condition/,
      ),
    ]);
  });

  it("refuses a vendored file that is not the published one", () => {
    const root = vendorTree(
      text.replace("RevokeSecurityGroupIngress", "DeleteSecurityGroup"),
      createHash("sha256").update(text).digest("hex"),
    );
    expect(() => loadVendorPolicies(root)).toThrow(/sha256 .* differs from source.json/);
  });

  it("has nothing to load where nothing is vendored", () => {
    const empty = fs.mkdtempSync(path.join(os.tmpdir(), "vendor-none-"));
    roots.push(empty);
    expect(loadVendorPolicies(empty)).toEqual([]);
  });
});

describe("Karpenter's published controller policies (a CloudFormation template with !Sub placeholders)", () => {
  const vendors = loadVendorPolicies().filter((v) => v.templated);
  const STACK = {
    partition: "aws",
    region: "eu-west-1",
    accountId: "210987654321",
    urlSuffix: "amazonaws.com",
    clusterName: "triton-ft-prod-eks-0a1b2c3",
    interruptionQueueArn: "arn:aws:sqs:eu-west-1:210987654321:cluster-gpu-karpenter-interruptions-4d5e6f",
    nodeRoleArn: "arn:aws:iam::210987654321:role/cluster-gpu-nodes-7a8b9c",
  };
  const statements = controllerPolicies(STACK).flatMap((p) => p.document.Statement);
  const bySid = (sid: string) => {
    const s = statements.find((x) => x.Sid === sid);
    if (!s) throw new Error(`no statement ${sid}`);
    return s;
  };

  it("loads every managed policy of the pinned template", () => {
    expect(vendors.map((v) => v.name.split(" ").pop())).toEqual(controllerPolicyNames());
    expect(vendors.every((v) => v.name.startsWith(`karpenter ${KARPENTER_VERSION} cloudformation.yaml`))).toBe(true);
  });

  it("accepts each statement as the stack fills it in, and only through the exception", () => {
    for (const s of statements) expect(statementProblems(s, vendors), String(s.Sid)).toEqual([]);
    // Without the exception the unconditioned lookups are refused: the exception is what passes them.
    expect(statementProblems(bySid("AllowPricingReadActions"), [])).toEqual([
      expect.stringMatching(/pricing:GetProducts on Resource "\*"/),
    ]);
    expect(statementProblems(bySid("AllowUnscopedInstanceProfileListAction"), [])).not.toEqual([]);
  });

  it("checks an edited statement like any other", () => {
    const pricing = bySid("AllowPricingReadActions");
    const widened = { ...pricing, Action: [pricing.Action, "ec2:TerminateInstances"].flat() };
    expect(statementProblems(widened, vendors)).toEqual([expect.stringMatching(/TerminateInstances on Resource "\*"/)]);
  });

  it("never lets a placeholder stand for a wildcard", () => {
    const zonal = bySid("AllowZonalShiftStatusReadOnly");
    const anyCluster = JSON.parse(JSON.stringify(zonal).replaceAll(STACK.clusterName, "*")) as Record<string, unknown>;
    expect(statementProblems(zonal, vendors)).toEqual([]);
    expect(statementProblems(anyCluster, vendors)).toEqual([expect.stringMatching(/on Resource "\*"/)]);
  });

  it("refuses a template that is not the published one", () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "vendor-karpenter-"));
    roots.push(root);
    const dir = path.join(root, "infra/data/karpenter", "v9.9.9");
    fs.mkdirSync(dir, { recursive: true });
    const published = fs.readFileSync(
      path.join(__dirname, "../../../infra/data/karpenter", KARPENTER_VERSION, "cloudformation.yaml"),
      "utf8",
    );
    fs.writeFileSync(path.join(dir, "cloudformation.yaml"), published.replace('"pricing:GetProducts"', '"pricing:*"'));
    fs.writeFileSync(
      path.join(dir, "source.json"),
      JSON.stringify({ file: "cloudformation.yaml", sha256: createHash("sha256").update(published).digest("hex") }),
    );
    expect(() => loadVendorPolicies(root, ["infra/data/karpenter"])).toThrow(/sha256 .* differs from source.json/);
  });
});
