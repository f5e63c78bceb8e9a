/**
 * The AWS Load Balancer Controller's own IAM policy, as the controller
 * publishes it for the chart version this stack installs
 * (docs/install/iam_policy*.json at the release tag), one file per AWS
 * partition. Kept verbatim as data (infra/data/aws-load-balancer-controller/),
 * with its source URL, commit and sha256 in source.json: following the
 * controller's policy means new controller versions get the permissions they
 * need, and its tag-mutating statements carry the controller's own conditions.
 */
import policyAws from "../data/aws-load-balancer-controller/v3.5.0/iam_policy.json";
import policyCn from "../data/aws-load-balancer-controller/v3.5.0/iam_policy_cn.json";
import policyGov from "../data/aws-load-balancer-controller/v3.5.0/iam_policy_us-gov.json";
import source from "../data/aws-load-balancer-controller/v3.5.0/source.json";

export interface PolicyStatement {
  Sid?: string;
  Effect: "Allow" | "Deny";
  Action: string | string[];
  Resource: string | string[];
  Condition?: Record<string, Record<string, string | string[]>>;
}

export interface PolicyDocument {
  Version: "2012-10-17";
  Statement: PolicyStatement[];
}

export type Partition = "aws" | "aws-cn" | "aws-us-gov";

/** Controller version the vendored policy belongs to (the chart's appVersion). */
export const LB_CONTROLLER_POLICY_VERSION: string = source.version;
export const LB_CONTROLLER_POLICY_SOURCE = source;

const BY_PARTITION: Record<Partition, unknown> = { aws: policyAws, "aws-cn": policyCn, "aws-us-gov": policyGov };

/** The published policy for an AWS partition; other partitions have no published policy. */
export function publishedLbControllerPolicy(partition: string): PolicyDocument {
  if (!(partition in BY_PARTITION)) {
    throw new Error(
      `the AWS Load Balancer Controller publishes no IAM policy for partition ${partition} (have: ${Object.keys(BY_PARTITION).join(", ")})`,
    );
  }
  return BY_PARTITION[partition as Partition] as PolicyDocument;
}
