/**
 * Karpenter's controller permissions and interruption plumbing, taken from the
 * CloudFormation template AWS publishes with each release (vendored verbatim in
 * infra/data/karpenter/<version>/, see source.json). Pure: it reads the template
 * and substitutes the stack's values; the component creates the resources.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { parse } from "yaml";
import type { PolicyDocument } from "./iam";
import { CHARTS } from "../catalog/charts";

/** The release of the pinned chart (infra/catalog/charts.ts): its template is vendored under that tag's name. */
export const KARPENTER_VERSION = `v${CHARTS.karpenter.appVersion}`;
const DATA_DIR = path.resolve(__dirname, "../data/karpenter", KARPENTER_VERSION);

/** `!Sub "..."` and friends, kept as tagged values so their text can be substituted. */
interface Sub {
  sub: string;
}
interface GetAtt {
  getAtt: string;
}
interface Ref {
  ref: string;
}

const CFN_TAGS = [
  { tag: "!Sub", resolve: (value: string): Sub => ({ sub: value }) },
  { tag: "!GetAtt", resolve: (value: string): GetAtt => ({ getAtt: value }) },
  { tag: "!Ref", resolve: (value: string): Ref => ({ ref: value }) },
];

interface CfnResource {
  Type: string;
  Properties: Record<string, unknown>;
}

export function karpenterTemplate(): Record<string, CfnResource> {
  const doc = parse(readFileSync(path.join(DATA_DIR, "cloudformation.yaml"), "utf8"), { customTags: CFN_TAGS }) as {
    Resources: Record<string, CfnResource>;
  };
  return doc.Resources;
}

export interface KarpenterIamValues {
  partition: string;
  region: string;
  accountId: string;
  urlSuffix: string;
  clusterName: string;
  interruptionQueueArn: string;
  nodeRoleArn: string;
}

function substitute(text: string, v: KarpenterIamValues): string {
  const vars: Record<string, string> = {
    "AWS::Partition": v.partition,
    "AWS::Region": v.region,
    "AWS::AccountId": v.accountId,
    "AWS::URLSuffix": v.urlSuffix,
    ClusterName: v.clusterName,
    "KarpenterInterruptionQueue.Arn": v.interruptionQueueArn,
    "KarpenterNodeRole.Arn": v.nodeRoleArn,
  };
  return text.replace(/\$\{([^}]+)\}/g, (_, name: string) => {
    const value = vars[name];
    if (value === undefined) throw new Error(`karpenter template: no value for \${${name}}`);
    return value;
  });
}

/** Names of the controller's managed policies in the template, in order. */
export function controllerPolicyNames(): string[] {
  return Object.entries(karpenterTemplate())
    .filter(([, r]) => r.Type === "AWS::IAM::ManagedPolicy")
    .map(([name]) => name);
}

/** The controller's managed policies (name without the cluster suffix, and the document). */
export function controllerPolicies(v: KarpenterIamValues): Array<{ name: string; document: PolicyDocument }> {
  const out: Array<{ name: string; document: PolicyDocument }> = [];
  for (const [name, r] of Object.entries(karpenterTemplate())) {
    if (r.Type !== "AWS::IAM::ManagedPolicy") continue;
    const doc = r.Properties.PolicyDocument as Sub;
    if (typeof doc?.sub !== "string") throw new Error(`karpenter template: ${name} has no !Sub policy document`);
    out.push({ name, document: JSON.parse(substitute(doc.sub, v)) as PolicyDocument });
  }
  return out;
}

/** EventBridge patterns that feed the interruption queue (spot, rebalance, health, state changes, reservations). */
export function interruptionRules(): Array<{ name: string; eventPattern: Record<string, unknown> }> {
  return Object.entries(karpenterTemplate())
    .filter(([, r]) => r.Type === "AWS::Events::Rule")
    .map(([name, r]) => ({ name, eventPattern: r.Properties.EventPattern as Record<string, unknown> }));
}

/** The queue's retention (seconds) as the template sets it: interruption notices are useless after minutes. */
export function interruptionQueueRetentionSeconds(): number {
  const q = Object.values(karpenterTemplate()).find((r) => r.Type === "AWS::SQS::Queue");
  const s = q?.Properties.MessageRetentionPeriod;
  if (typeof s !== "number") throw new Error("karpenter template: no interruption queue");
  return s;
}

export const KARPENTER_NAMESPACE = "kube-system";
export const KARPENTER_SERVICE_ACCOUNT = "karpenter";
