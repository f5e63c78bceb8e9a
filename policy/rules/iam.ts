/**
 * IAM baseline: no wildcard actions, and `Resource: "*"` only where AWS offers
 * nothing narrower.
 *
 * A statement may use `Resource: "*"` when every action in it is on
 * RESOURCE_STAR_ALLOWED (actions AWS's Service Authorization Reference lists
 * with no resource type: they cannot be scoped by ARN), or when a Condition
 * confines it to resources this stack owns (a tag the caller must put on a
 * resource it creates, a tag the resource must carry, this VPC, or one AWS
 * service's linked role). Creates are the usual case for the second: the new
 * resource's ARN holds an id that does not exist yet, so AWS's own published
 * policies scope CreateLoadBalancer and friends by request tag.
 *
 * AWS-managed policies attached to roles are invisible to a pack (only their
 * ARN is), so only the ones on MANAGED_POLICY_ALLOWED may be attached.
 */
import type { ResourceRule, ResourceView } from "./types";
import { arr, obj, str, strings, type Obj } from "./values";
import { vendorOf, type VendorPolicy } from "./vendor";

export const TYPES = {
  policy: "aws:iam/policy:Policy",
  rolePolicy: "aws:iam/rolePolicy:RolePolicy",
  userPolicy: "aws:iam/userPolicy:UserPolicy",
  groupPolicy: "aws:iam/groupPolicy:GroupPolicy",
  role: "aws:iam/role:Role",
  rolePolicyAttachment: "aws:iam/rolePolicyAttachment:RolePolicyAttachment",
  policyAttachment: "aws:iam/policyAttachment:PolicyAttachment",
} as const;

/** Actions that may be granted on `Resource: "*"` unconditionally, each with why. Patterns end in `*` only. */
export const RESOURCE_STAR_ALLOWED: ReadonlyArray<{ action: string; reason: string }> = [
  { action: "ec2:Describe*", reason: "EC2 Describe actions support no resource-level permissions" },
  { action: "ec2:GetSecurityGroupsForVpc", reason: "lists the groups usable in a VPC; no resource-level permissions" },
  {
    action: "elasticloadbalancing:Describe*",
    reason: "Elastic Load Balancing Describe actions support no resource-level permissions",
  },
  { action: "ecr:GetAuthorizationToken", reason: "registry login token; the action has no resource type" },
  { action: "sts:GetCallerIdentity", reason: "identity of the caller; no resource type and needs no permission" },
  { action: "acm:ListCertificates", reason: "account-wide listing; no resource type" },
  { action: "iam:ListServerCertificates", reason: "account-wide listing; no resource type" },
  { action: "shield:GetSubscriptionState", reason: "account-wide subscription state; no resource type" },
  { action: "ssm:DescribeInstanceInformation", reason: "fleet listing; no resource-level permissions" },
];

/** AWS-managed policies a role may carry; everything else must be written out and checked here. */
export const MANAGED_POLICY_ALLOWED: ReadonlyArray<{ name: string; reason: string }> = [
  { name: "AmazonEKSClusterPolicy", reason: "the EKS control plane's service role (attached by @pulumi/eks)" },
  {
    name: "AmazonEKSVPCResourceController",
    reason: "EKS control plane: security groups for pods (attached by @pulumi/eks)",
  },
  { name: "AmazonEKSWorkerNodePolicy", reason: "EKS nodes join the cluster" },
  { name: "AmazonEKS_CNI_Policy", reason: "the VPC CNI assigns pod IPs on the nodes" },
  { name: "AmazonEC2ContainerRegistryReadOnly", reason: "nodes pull images from ECR" },
  { name: "AmazonSSMManagedInstanceCore", reason: "Session Manager on the builder instead of opening more ports" },
];

/** Condition keys that confine a `Resource: "*"` grant to this stack's resources. */
const SCOPING_KEY =
  /^(aws:RequestTag\/.+|aws:ResourceTag\/.+|ec2:ResourceTag\/.+|aws:TagKeys|ec2:Vpc|iam:AWSServiceName|ec2:CreateAction|elasticloadbalancing:CreateAction)$/;

/**
 * Tagging actions decide ownership: controllers (the AWS Load Balancer
 * Controller) manage whatever carries their cluster tag, so tagging another
 * team's resource adopts it. On wildcard ARNs they need a scoping condition.
 */
const TAGGING_ACTION = /^[\w-]+:(AddTags|RemoveTags|CreateTags|DeleteTags|TagResource|UntagResource)$/i;
/** What the load balancer controller finds and manages by its cluster tag: load balancers, target groups, security groups. */
const ADOPTED_BY_TAG = /^\*$|:loadbalancer\/|:targetgroup\/|:security-group\//;

function matches(pattern: string, action: string): boolean {
  const p = pattern.toLowerCase();
  const a = action.toLowerCase();
  return p.endsWith("*") ? a.startsWith(p.slice(0, -1)) : a === p;
}

export function resourceStarAllowed(action: string): boolean {
  return !action.includes("*") && RESOURCE_STAR_ALLOWED.some((e) => matches(e.action, action));
}

/** True when some condition operator constrains a scoping key (for `Null`, to "the key must be present"). */
export function conditionScopes(condition: unknown): boolean {
  for (const [operator, clauses] of Object.entries(obj(condition))) {
    const isNull = operator.replace(/IfExists$/, "").endsWith("Null");
    for (const [key, value] of Object.entries(obj(clauses))) {
      if (!SCOPING_KEY.test(key)) continue;
      if (isNull ? strings(value).every((v) => v === "false") : strings(value).length > 0) return true;
    }
  }
  return false;
}

interface Doc {
  where: string;
  text: unknown;
}

function parse(text: unknown): Obj | undefined {
  if (typeof text === "string") {
    try {
      return obj(JSON.parse(text));
    } catch {
      return undefined;
    }
  }
  return text !== null && typeof text === "object" ? obj(text) : undefined;
}

/** The permission documents a resource carries (trust policies are left out: they grant sts actions to principals). */
function documents(r: ResourceView): Doc[] {
  switch (r.type) {
    case TYPES.policy:
    case TYPES.rolePolicy:
    case TYPES.userPolicy:
    case TYPES.groupPolicy:
      return [{ where: "policy", text: r.props.policy }];
    case TYPES.role:
      return arr(r.props.inlinePolicies).map((p, i) => ({
        where: `inlinePolicies[${i}] (${str(obj(p).name) ?? "unnamed"})`,
        text: obj(p).policy,
      }));
    default:
      return [];
  }
}

export function statementProblems(statement: Obj, vendors: readonly VendorPolicy[] = []): string[] {
  if (statement.Effect !== "Allow") return [];
  // A vendor's published statement, verbatim (rules/vendor.ts): only the absolute bans apply.
  const vendor = vendorOf(statement, vendors);
  const sid = str(statement.Sid) ? `statement ${str(statement.Sid)}` : "a statement";
  const out: string[] = [];
  if (statement.NotAction !== undefined)
    out.push(`${sid} allows NotAction, i.e. every other action. Fix: list the actions (Action: [...]).`);
  if (statement.NotResource !== undefined)
    out.push(`${sid} allows NotResource, i.e. every other resource. Fix: list the resource ARNs.`);
  const actions = strings(statement.Action);
  const wild = actions.filter((a) => a.includes("*"));
  if (wild.length > 0)
    out.push(`${sid} allows wildcard action(s) ${wild.join(", ")}. Fix: list the exact actions needed.`);
  if (!vendor && strings(statement.Resource).includes("*") && !conditionScopes(statement.Condition)) {
    const unscoped = actions.filter((a) => !a.includes("*") && !resourceStarAllowed(a));
    if (unscoped.length > 0)
      out.push(
        `${sid} allows ${unscoped.join(", ")} on Resource "*", though AWS offers narrower resources for them. Fix: name the resource ARNs, or add a Condition confining it to this stack's resources (aws:ResourceTag/aws:RequestTag of the cluster tag, ec2:Vpc).`,
      );
  }
  // Even a vendor's statement may not tag what the controller adopts by tag without a condition.
  const resources = strings(statement.Resource).filter((r) => r.includes("*") && (!vendor || ADOPTED_BY_TAG.test(r)));
  const tagging = actions.filter((a) => TAGGING_ACTION.test(a));
  if (tagging.length > 0 && resources.length > 0 && !conditionScopes(statement.Condition))
    out.push(
      `${sid} allows ${tagging.join(", ")} on ${resources.join(", ")} with no condition, so it can tag (and so adopt) resources it does not own. Fix: add a Condition requiring the owner tag (Null aws:ResourceTag/<cluster tag>: "false") or tagging only on create (elasticloadbalancing:CreateAction / ec2:CreateAction).`,
    );
  return out;
}

export function leastPrivilege(vendors: readonly VendorPolicy[] = []): ResourceRule {
  return {
    kind: "resource",
    name: "iam-least-privilege",
    description:
      'No wildcard IAM actions; Resource "*" only for allow-listed actions, when a Condition scopes it, or in a vendored published policy kept verbatim.',
    check(r) {
      const out: string[] = [];
      for (const d of documents(r)) {
        if (d.text === undefined) continue;
        const doc = parse(d.text);
        if (!doc) {
          out.push(
            `IAM ${r.type.split(":").pop()} '${r.name}': ${d.where} is not a JSON policy document. Fix: pass JSON.stringify(document).`,
          );
          continue;
        }
        const statements = Array.isArray(doc.Statement) ? doc.Statement : [doc.Statement];
        for (const s of statements)
          for (const p of statementProblems(obj(s), vendors))
            out.push(`IAM ${r.type.split(":").pop()} '${r.name}' ${d.where}: ${p}`);
      }
      return out;
    },
  };
}

export const managedPolicies: ResourceRule = {
  kind: "resource",
  name: "iam-managed-policy-allow-list",
  description: "Only allow-listed AWS-managed policies are attached.",
  check(r) {
    if (r.type !== TYPES.rolePolicyAttachment && r.type !== TYPES.policyAttachment) return [];
    const arn = str(r.props.policyArn);
    const m = arn && /^arn:aws[\w-]*:iam::aws:policy\/(?:.*\/)?([^/]+)$/.exec(arn);
    if (!m) return [];
    if (MANAGED_POLICY_ALLOWED.some((p) => p.name === m[1])) return [];
    return [
      `IAM attachment '${r.name}' attaches the AWS-managed policy ${m[1]}, whose grants this pack cannot inspect. Fix: write the needed statements as a policy of this stack, or add ${m[1]} to MANAGED_POLICY_ALLOWED in policy/rules/iam.ts with the reason.`,
    ];
  },
};

export function iamRules(vendors: readonly VendorPolicy[] = []): ResourceRule[] {
  return [leastPrivilege(vendors), managedPolicies];
}
