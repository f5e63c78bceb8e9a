/**
 * The policy pack's rule model, free of @pulumi/policy so the rules run as
 * plain functions: under the CLI (policy/index.ts adapts them), in the unit
 * tests over what the program registers under the mock runtime, and over the
 * YAML manifests `npm run synth` renders.
 */

/** One resource as a policy sees it: its type token, logical name and input properties. */
export interface ResourceView {
  /** Pulumi type token, e.g. `aws:ec2/instance:Instance`, `kubernetes:apps/v1:Deployment`. */
  type: string;
  /** Logical (Pulumi) name, or `metadata.name` for a rendered manifest. */
  name: string;
  props: Record<string, unknown>;
}

/** What a rule reports: the offending resource and a message naming it and the fix. */
export interface Violation {
  rule: string;
  resource: string;
  message: string;
}

/** Checks one resource at a time (a CrossGuard resource validation). */
export interface ResourceRule {
  kind: "resource";
  name: string;
  description: string;
  /** Messages for each problem found on this resource; empty when it complies or the rule does not apply. */
  check(r: ResourceView): string[];
}

/** Checks relations between resources (a CrossGuard stack validation): "every X has a Y". */
export interface StackRule {
  kind: "stack";
  name: string;
  description: string;
  check(resources: ResourceView[]): Array<{ resource: ResourceView; message: string }>;
}

export type Rule = ResourceRule | StackRule;

/** Runs every rule over a set of resources: what the pack would report at preview. */
export function evaluate(rules: Rule[], resources: ResourceView[]): Violation[] {
  const out: Violation[] = [];
  for (const rule of rules) {
    if (rule.kind === "resource") {
      for (const r of resources)
        for (const message of rule.check(r)) out.push({ rule: rule.name, resource: label(r), message });
    } else {
      for (const v of rule.check(resources))
        out.push({ rule: rule.name, resource: label(v.resource), message: v.message });
    }
  }
  return out;
}

export function label(r: ResourceView): string {
  return `${r.type} '${r.name}'`;
}
