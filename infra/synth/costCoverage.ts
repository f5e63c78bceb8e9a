/**
 * What the estimate prices, resource by resource: every resource type the
 * program can register (the synth inventory's types) is either priced by
 * cost lines of cost.json, or listed here as free or unpriced with the
 * reason. Two checks read it (test/unit/costCoverage.test.ts):
 *
 * - completeness: a type of the inventory without an entry, a priced resource
 *   whose lines the estimate lacks, or a line no resource carries is a
 *   problem, so a billable resource cannot slip in unpriced;
 * - tag allocation: each line's resources carry tags (infra/tags.ts), and a
 *   cost report grouped by `triton-ft:model` gives each model the lines its
 *   resources carry; that must be what cost.json says each model costs.
 *
 * Pure: an inventory and a cost report in, problems and sums out.
 */
import type { CostReport } from "../cost";
import type { LineItem } from "../cost/input";
import { MODEL_TAG_KEY } from "../tags";
import type { InventoryResource, InventoryValue } from "./inventory";

/** A cost line a resource is billed under: its id, and its scope where ids repeat per model. */
export interface LineRef {
  id: string;
  scope?: string;
}

/** Where a resource's billed tags are: its own `tags`, its launch template's tag specifications, a Karpenter node class's `spec.tags`. */
/**
 * Where a resource's AWS tags are: its `tags`, its launch template's tag
 * specifications, its spec's `tags` (a Karpenter EC2NodeClass), the AWS Load
 * Balancer Controller's annotation on a Service (the NLB it makes), or none.
 */
type TagSource = "tags" | "tagSpecifications" | "specTags" | "loadBalancerAnnotation" | { untagged: string };

/** The Service annotation the AWS Load Balancer Controller tags the NLB from. */
export const LOAD_BALANCER_TAGS_ANNOTATION = "service.beta.kubernetes.io/aws-load-balancer-additional-resource-tags";

/**
 * The NLB's tags as the controller reads the annotation: split at commas,
 * each pair trimmed, empty ones skipped, cut at the first `=`
 * (aws-load-balancer-controller pkg/annotations/parser.go,
 * ParseStringMapAnnotation); undefined where it would refuse the annotation.
 * Written from the controller's rules, not from our formatter, so a stack tag
 * the formatter would mangle shows up as a missing or different tag.
 */
export function controllerTags(annotation: string): Record<string, string> | undefined {
  const tags: Record<string, string> = {};
  for (const raw of annotation.split(",")) {
    const pair = raw.trim();
    if (pair === "") continue;
    const at = pair.indexOf("=");
    if (at <= 0) return undefined;
    tags[pair.slice(0, at)] = pair.slice(at + 1);
  }
  return tags;
}

export type CoverageRule =
  | {
      kind: "priced";
      /** The lines it is billed under; `optional` matches lines present only with some settings. */
      lines: (r: InventoryResource, ctx: CoverageContext) => { required: LineRef[]; optional?: RegExp };
      tags: TagSource;
      /** Billable parts the estimate leaves out, with why. */
      unpriced?: string;
    }
  | { kind: "free"; reason: string }
  | { kind: "unpriced"; reason: string };

export interface CoverageContext {
  /** The stack's first model: its resources keep the one-model names (no `-<id>` suffix). */
  firstModel: string;
}

const FREE = (reason: string): CoverageRule => ({ kind: "free", reason });
const K8S_OBJECT = FREE("a Kubernetes object: its pods run on the priced nodes, it creates nothing in AWS");
const NO_CHARGE = (what: string) => FREE(`${what}: AWS charges nothing for it`);

/** `<base>` for the first model, `<base>-<id>` for a further one (plan/stack.ts modelResourceName). */
function modelOfName(name: string, base: string, ctx: CoverageContext): string {
  return name === base ? ctx.firstModel : name.slice(base.length + 1);
}

/** The builder component a resource belongs to: its id in the estimate's builder lines. */
function builderOf(r: InventoryResource): string {
  const parent = r.parent ?? "";
  const prefix = "triton-ft:builder:Builder::";
  if (!parent.startsWith(prefix)) throw new Error(`${r.type} ${r.name} is not a builder's`);
  return parent.slice(prefix.length);
}

const GPU_LINES = (model: string): LineRef[] => [
  { id: "gpu-nodes", scope: model },
  { id: "gpu-node-volumes", scope: model },
];
const SYSTEM_LINES: LineRef[] = [{ id: "system-nodes" }, { id: "system-node-volumes" }];

/** A node group or launch template of the cluster: the system pool's or a model's GPU pool's. */
function nodeLines(r: InventoryResource, ctx: CoverageContext): { required: LineRef[] } {
  if (r.name === "cluster-system") return { required: SYSTEM_LINES };
  if (r.name === "cluster-gpu" || r.name.startsWith("cluster-gpu-"))
    return { required: GPU_LINES(modelOfName(r.name, "cluster-gpu", ctx)) };
  throw new Error(`${r.type} ${r.name}: not a node pool the estimate knows`);
}

export const COST_COVERAGE: Readonly<Record<string, CoverageRule>> = {
  "aws:ecr/repository:Repository": {
    kind: "priced",
    lines: (r) => ({ required: [{ id: `ecr-${String(r.inputs.name)}` }] }),
    tags: "tags",
    unpriced: "image scanning on push (basic scanning is free) and pulls inside the region (free)",
  },
  "aws:kms/key:Key": {
    kind: "priced",
    lines: () => ({ required: [{ id: "kms-keys" }] }),
    tags: "tags",
    unpriced: "requests and the key-months of the first two rotations (the kms-keys line's note)",
  },
  "aws:elasticache/serverlessCache:ServerlessCache": {
    kind: "priced",
    lines: () => ({ required: [{ id: "store-data" }, { id: "store-ecpu" }] }),
    tags: "tags",
  },
  "aws:ec2/instance:Instance": {
    kind: "priced",
    lines: (r) => {
      const b = builderOf(r);
      return {
        required: [{ id: `builder-${b}-volume` }, { id: `builder-${b}-iops` }, { id: `builder-${b}-throughput` }],
        // Its instance hours only when it is never stopped; a build run's hours are printed apart.
        optional: new RegExp(`^builder-${b}-instance$`),
      };
    },
    tags: "tags",
  },
  "aws:ec2/eip:Eip": {
    kind: "priced",
    lines: (r) => ({ required: [{ id: `builder-${builderOf(r)}-address` }] }),
    tags: "tags",
  },
  "awsx:ec2:Vpc": {
    kind: "priced",
    lines: () => ({ required: [{ id: "nat-gateways" }, { id: "nat-addresses" }], optional: /^nat-image-pulls-/ }),
    tags: "tags",
    unpriced: "data transfer between AZs (the pods and nodes are spread over them)",
  },
  "eks:index:Cluster": {
    kind: "priced",
    lines: () => ({ required: [{ id: "eks-control-plane" }] }),
    tags: "tags",
    unpriced: "CloudWatch Logs of the control plane's log types (volume unknown: docs/cost.md)",
  },
  "eks:index:ManagedNodeGroup": { kind: "priced", lines: nodeLines, tags: "tags" },
  // A managed node group's instances and volumes carry its launch template's tag specifications.
  "aws:ec2/launchTemplate:LaunchTemplate": { kind: "priced", lines: nodeLines, tags: "tagSpecifications" },
  "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass": {
    kind: "priced",
    lines: (r, ctx) => ({ required: GPU_LINES(modelOfName(r.name, "cluster-gpu-ec2nodeclass", ctx)) }),
    tags: "specTags",
  },
  "kubernetes:core/v1:Service": {
    kind: "priced",
    // Only a LoadBalancer Service (the gateway's) has a cost: the NLB the controller makes for it.
    lines: (r) =>
      (r.inputs.spec as { type?: string } | undefined)?.type === "LoadBalancer"
        ? { required: [{ id: "nlb" }, { id: "nlb-lcu" }], optional: /^nlb-addresses$/ }
        : { required: [] },
    // The controller tags the NLB with the annotation's tags besides its own tracking tags (elbv2.k8s.aws/cluster, service.k8s.aws/stack).
    tags: "loadBalancerAnnotation",
  },
  "kubernetes:core/v1:PersistentVolumeClaim": {
    kind: "priced",
    lines: () => ({ required: [{ id: "store-volume" }] }),
    tags: { untagged: "the cluster's CSI driver creates the volume with its own tags" },
  },
  "aws:sqs/queue:Queue": {
    kind: "unpriced",
    reason: "Karpenter's interruption queue: a few messages a month, inside the account's monthly free SQS requests",
  },
  "aws:cloudwatch/eventRule:EventRule": NO_CHARGE(
    "a rule on AWS service events (EventBridge bills custom events only)",
  ),
  "aws:cloudwatch/eventTarget:EventTarget": NO_CHARGE("an EventBridge rule's target"),
  "aws:ecr/lifecyclePolicy:LifecyclePolicy": NO_CHARGE("a repository's lifecycle policy"),
  "aws:ecr/accountSetting:AccountSetting": NO_CHARGE("the registry's blob-mounting setting"),
  "aws:elasticache/user:User": NO_CHARGE("an ElastiCache user (access control)"),
  "aws:elasticache/userGroup:UserGroup": NO_CHARGE("an ElastiCache user group (access control)"),
  "aws:ec2/keyPair:KeyPair": NO_CHARGE("an EC2 key pair"),
  "aws:ec2/securityGroup:SecurityGroup": NO_CHARGE("a security group"),
  "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule": NO_CHARGE("a security group rule"),
  "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule": NO_CHARGE("a security group rule"),
  "aws:ec2transitgateway/instanceState:InstanceState": FREE(
    "starts or stops the builder: no resource of its own (the builder is priced as aws:ec2/instance:Instance)",
  ),
  "aws:iam/instanceProfile:InstanceProfile": NO_CHARGE("IAM"),
  "aws:iam/policy:Policy": NO_CHARGE("IAM"),
  "aws:iam/role:Role": NO_CHARGE("IAM"),
  "aws:iam/rolePolicy:RolePolicy": NO_CHARGE("IAM"),
  "aws:iam/rolePolicyAttachment:RolePolicyAttachment": NO_CHARGE("IAM"),
  "aws:sqs/queuePolicy:QueuePolicy": NO_CHARGE("a queue's policy"),
  "aws:ssm/parameter:Parameter": NO_CHARGE("a Standard-tier SSM parameter (the builder's host key)"),
  "command:remote:Command": FREE("a command run over SSH on the builder, priced as the builder"),
  "command:remote:CopyToRemote": FREE("a copy over SSH to the builder, priced as the builder"),
  "random:index/randomPassword:RandomPassword": FREE("generated by Pulumi, no cloud resource"),
  "tls:index/privateKey:PrivateKey": FREE("generated by Pulumi, no cloud resource"),
  "tls:index/selfSignedCert:SelfSignedCert": FREE("generated by Pulumi, no cloud resource"),
  "tls:index/locallySignedCert:LocallySignedCert": FREE("generated by Pulumi, no cloud resource"),
  "tls:index/certRequest:CertRequest": FREE("generated by Pulumi, no cloud resource"),
  "pulumi:providers:kubernetes": FREE("the Kubernetes provider: no cloud resource"),
  "pulumi:pulumi:StackReference": FREE("reads another stack's outputs"),
  "kubernetes:helm.sh/v3:Release": FREE(
    "a chart's pods on the priced nodes: none of the charts (device plugin, load balancer controller, Karpenter, KEDA, kube-prometheus-stack without a storageSpec) creates an AWS resource itself; the NLB and Karpenter's nodes are priced at the Service and the EC2NodeClass",
  ),
  "kubernetes:karpenter.sh/v1:NodePool": FREE("its nodes are priced at its EC2NodeClass"),
  "kubernetes:apps/v1:DaemonSet": K8S_OBJECT,
  "kubernetes:apps/v1:Deployment": K8S_OBJECT,
  "kubernetes:core/v1:ConfigMap": K8S_OBJECT,
  "kubernetes:core/v1:Namespace": K8S_OBJECT,
  "kubernetes:core/v1:Secret": K8S_OBJECT,
  "kubernetes:keda.sh/v1alpha1:ScaledObject": K8S_OBJECT,
  "kubernetes:monitoring.coreos.com/v1:PrometheusRule": K8S_OBJECT,
  "kubernetes:monitoring.coreos.com/v1:ServiceMonitor": K8S_OBJECT,
  "kubernetes:networking.k8s.io/v1:NetworkPolicy": K8S_OBJECT,
  "kubernetes:policy/v1:PodDisruptionBudget": K8S_OBJECT,
};

/** The resources that stand for cloud resources: this program's components group them and cost nothing. */
function billable(inv: readonly InventoryResource[]): InventoryResource[] {
  return inv.filter((r) => r.kind !== "component");
}

function refMatches(ref: LineRef, line: LineItem): boolean {
  return ref.id === line.id && (ref.scope === undefined || ref.scope === line.scope);
}

/** The lines of the report each priced resource is billed under. */
function claims(
  resources: readonly InventoryResource[],
  report: CostReport,
  ctx: CoverageContext,
  rules: Readonly<Record<string, CoverageRule>>,
): { byResource: Map<InventoryResource, LineItem[]>; problems: string[] } {
  const problems: string[] = [];
  const byResource = new Map<InventoryResource, LineItem[]>();
  for (const r of resources) {
    const rule = rules[r.type];
    if (!rule) {
      problems.push(`${r.type} (${r.name}): neither priced by a cost line nor listed as free or unpriced`);
      continue;
    }
    if (rule.kind !== "priced") continue;
    const { required, optional } = rule.lines(r, ctx);
    const mine: LineItem[] = [];
    for (const ref of required) {
      const found = report.items.filter((l) => refMatches(ref, l));
      if (found.length === 0)
        problems.push(
          `${r.type} (${r.name}) is billed under ${ref.id}${ref.scope ? ` (${ref.scope})` : ""}, which the estimate lacks`,
        );
      mine.push(...found);
    }
    if (optional) mine.push(...report.items.filter((l) => optional.test(l.id)));
    byResource.set(r, mine);
  }
  return { byResource, problems };
}

/**
 * Completeness: every resource type covered, every priced resource's lines
 * present, every line carried by a resource.
 */
export function coverageProblems(
  resources: readonly InventoryResource[],
  report: CostReport,
  ctx: CoverageContext,
  rules: Readonly<Record<string, CoverageRule>> = COST_COVERAGE,
): string[] {
  const { byResource, problems } = claims(billable(resources), report, ctx, rules);
  const carried = new Set([...byResource.values()].flat());
  for (const line of report.items)
    if (!carried.has(line) && !line.outsideStack)
      problems.push(`cost line ${line.id} (${line.scope}: ${line.label}) is carried by no resource of the inventory`);
  return problems;
}

function tagMaps(r: InventoryResource, source: TagSource): Array<Record<string, InventoryValue>> {
  const asMap = (v: InventoryValue | undefined) =>
    v !== null && typeof v === "object" && !Array.isArray(v) ? [v] : [];
  if (source === "tags") return asMap(r.inputs.tags);
  if (source === "specTags") return asMap((r.inputs.spec as Record<string, InventoryValue> | undefined)?.tags);
  if (source === "loadBalancerAnnotation") {
    const annotations = (r.inputs.metadata as Record<string, InventoryValue> | undefined)?.annotations;
    const value = asMap(annotations)[0]?.[LOAD_BALANCER_TAGS_ANNOTATION];
    const tags = typeof value === "string" ? controllerTags(value) : undefined;
    return tags ? [tags] : [];
  }
  if (source === "tagSpecifications") {
    const specs = r.inputs.tagSpecifications;
    return Array.isArray(specs) ? specs.flatMap((s) => asMap((s as Record<string, InventoryValue>).tags)) : [];
  }
  return [];
}

/** Who a tag report puts a resource under: its `triton-ft:model`, else the stack when it carries the stack's tag. */
export function tagOwner(r: InventoryResource, rules: Readonly<Record<string, CoverageRule>> = COST_COVERAGE): string {
  const rule = rules[r.type];
  if (rule?.kind !== "priced") return "stack";
  if (typeof rule.tags === "object") return "stack";
  const maps = tagMaps(r, rule.tags);
  if (maps.length === 0) return "untagged";
  const owners = new Set(
    maps.map((t) => {
      const model = t[MODEL_TAG_KEY];
      if (typeof model === "string") return model;
      return typeof t["pulumi:stack"] === "string" ? "stack" : "untagged";
    }),
  );
  const [only, ...more] = [...owners];
  return only !== undefined && more.length === 0 ? only : `mixed (${[...owners].join(", ")})`;
}

export interface TagAllocation {
  /** $/month at each end by owner: a model id, or "stack". */
  byOwner: Record<string, { min: number; max: number }>;
  /** Lines whose resources a tag report would put elsewhere than the estimate's scope. */
  problems: string[];
}

/** A cost report by tag over the same resources: each line goes to its resources' owner. */
export function tagAllocation(
  resources: readonly InventoryResource[],
  report: CostReport,
  ctx: CoverageContext,
  rules: Readonly<Record<string, CoverageRule>> = COST_COVERAGE,
): TagAllocation {
  const { byResource } = claims(billable(resources), report, ctx, rules);
  const byOwner: TagAllocation["byOwner"] = {};
  const problems: string[] = [];
  // A line for something the stack does not create is in no report by its tags.
  for (const line of report.items.filter((l) => !l.outsideStack)) {
    const owners = new Set(
      [...byResource.entries()].filter(([, lines]) => lines.includes(line)).map(([r]) => tagOwner(r, rules)),
    );
    const [owner, ...more] = [...owners];
    if (owner === undefined || more.length > 0) {
      problems.push(`cost line ${line.id} (${line.scope}): its resources are tagged for ${[...owners].join(", ")}`);
      continue;
    }
    if (owner !== line.scope)
      problems.push(`cost line ${line.id} is the estimate's ${line.scope} but a tag report's ${owner}`);
    const sum = (byOwner[owner] ??= { min: 0, max: 0 });
    sum.min += line.monthlyUsd.min;
    sum.max += line.monthlyUsd.max;
  }
  return { byOwner, problems };
}
