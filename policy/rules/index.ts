/** Every rule of the pack, in report order. */
import { EC2_RULES } from "./ec2";
import { ECR_RULES } from "./ecr";
import { EKS_RULES } from "./eks";
import { IAM_RULES } from "./iam";
import { kubernetesRules, type ImageRuleOptions } from "./kubernetes";
import type { Rule } from "./types";

export function allRules(opts: ImageRuleOptions = {}): Rule[] {
  return [...EC2_RULES, ...ECR_RULES, ...EKS_RULES, ...IAM_RULES, ...kubernetesRules(opts)];
}

export { evaluate, type ResourceView, type Rule, type Violation } from "./types";
