/**
 * The CrossGuard entry point: `pulumi preview --policy-pack policy` loads this
 * file. Every rule in ./rules is a pure function; this adapts each to a
 * mandatory ResourceValidationPolicy or StackValidationPolicy.
 *
 * During a preview, properties that depend on resources not yet created are
 * unknown; reading one makes @pulumi/policy report that policy as "can't run
 * during preview" (advisory) for that resource, and `pulumi up` checks it again
 * with the values known, before anything is changed.
 */
import { PolicyPack, type Policies, type ReportViolation } from "@pulumi/policy";
import { allRules, loadVendorPolicies, type ResourceView } from "./rules";

export const PACK_NAME = "triton-ft-security";

interface PolicyResourceLike {
  type: string;
  name: string;
  urn: string;
  props: Record<string, unknown>;
}

function view(r: PolicyResourceLike): ResourceView {
  return { type: r.type, name: r.name, props: r.props };
}

export function policies(): Policies {
  // Read when the pack loads: a vendored file that is not the published one stops the pack loudly.
  return allRules({ vendorPolicies: loadVendorPolicies() }).map((rule) => {
    if (rule.kind === "resource") {
      return {
        name: rule.name,
        description: rule.description,
        enforcementLevel: "mandatory",
        validateResource: (args: PolicyResourceLike, report: ReportViolation) => {
          for (const message of rule.check(view(args))) report(message);
        },
      };
    }
    return {
      name: rule.name,
      description: rule.description,
      enforcementLevel: "mandatory",
      validateStack: (args: { resources: PolicyResourceLike[] }, report: ReportViolation) => {
        const urns = new Map<ResourceView, string>();
        const views = args.resources.map((r) => {
          const v = view(r);
          urns.set(v, r.urn);
          return v;
        });
        for (const v of rule.check(views)) report(v.message, urns.get(v.resource));
      },
    };
  });
}

new PolicyPack(PACK_NAME, { enforcementLevel: "mandatory", policies: policies() });
