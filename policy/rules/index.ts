/** Every rule of the pack, in report order. */
import { EC2_RULES } from "./ec2";
import { ECR_RULES } from "./ecr";
import { EKS_RULES } from "./eks";
import { iamRules } from "./iam";
import { kubernetesRules, type ImageRuleOptions } from "./kubernetes";
import type { Rule } from "./types";
import type { VendorPolicy } from "./vendor";

export interface RuleOptions extends ImageRuleOptions {
  /** Vendored third-party policies kept verbatim (rules/vendor.ts loadVendorPolicies). */
  vendorPolicies?: readonly VendorPolicy[];
}

export function allRules(opts: RuleOptions = {}): Rule[] {
  return [...EC2_RULES, ...ECR_RULES, ...EKS_RULES, ...iamRules(opts.vendorPolicies), ...kubernetesRules(opts)];
}

export { evaluate, type ResourceView, type Rule, type Violation } from "./types";
export { loadVendorPolicies, type VendorPolicy } from "./vendor";
