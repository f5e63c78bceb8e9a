/**
 * Third-party IAM policies the stack applies verbatim: the AWS Load Balancer
 * Controller's own published policy and Karpenter's controller policies (from
 * the CloudFormation template Karpenter publishes with each release), vendored
 * by version under infra/data/<project>/<version>/ with a source.json that
 * records each file's upstream URL and sha256. Following the controller's
 * policy is what gives a controller upgrade the permissions it needs; some of
 * their statements grant `Resource: "*"` without a condition the rule knows
 * (listener and rule management, WAF/Shield/ACM lookups; Karpenter's pricing
 * lookups, ListInstanceProfiles, the zonal-shift status read scoped by its own
 * condition key). The IAM rule accepts exactly those statements, as published,
 * as a documented exception (docs/security.md "Documented exceptions"): a statement edited in any way,
 * or a file whose sha256 no longer matches source.json, is checked like any other.
 *
 * Karpenter's template writes its policies as CloudFormation `!Sub` strings
 * (`${ClusterName}`, `${AWS::Region}`, ...): a statement matches when it is the
 * template's statement with each placeholder replaced by one plain value
 * (letters, digits, `.:/_-`; never `*`, so a placeholder cannot widen a resource).
 */
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { parse as parseYaml } from "yaml";
import { arr, obj, str, type Obj } from "./values";

export interface VendorPolicy {
  /** e.g. `aws-load-balancer-controller v3.5.0 iam_policy.json`. */
  name: string;
  statements: Obj[];
  /** Statements hold `${Name}` placeholders (CloudFormation `!Sub`) that stand for one stack value each. */
  templated?: boolean;
}

/** Folders (relative to the repository root) that hold vendored policies with a source.json. */
export const VENDOR_POLICY_DIRS = ["infra/data/aws-load-balancer-controller", "infra/data/karpenter"] as const;

/** What a `!Sub` placeholder may stand for: a partition, region, account, cluster name or ARN; never a wildcard. */
const PLACEHOLDER_VALUE = "[A-Za-z0-9._:/-]+";
const PLACEHOLDER = /\$\{[A-Za-z0-9:.]+\}/g;

const REPO_ROOT = path.resolve(__dirname, "..", "..");

/** Canonical JSON (sorted keys) so key order does not matter; array order does. */
export function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(",")}]`;
  if (v !== null && typeof v === "object")
    return `{${Object.keys(v as Obj)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((v as Obj)[k])}`)
      .join(",")}}`;
  return JSON.stringify(v);
}

/**
 * Reads every vendored policy below the given folders. A file whose sha256
 * differs from its source.json is an error: the exception covers only the
 * published bytes.
 */
export function loadVendorPolicies(
  root: string = REPO_ROOT,
  dirs: readonly string[] = VENDOR_POLICY_DIRS,
): VendorPolicy[] {
  const out: VendorPolicy[] = [];
  for (const dir of dirs) {
    const base = path.join(root, dir);
    if (!fs.existsSync(base)) continue;
    for (const version of fs.readdirSync(base).sort()) {
      const sourceFile = path.join(base, version, "source.json");
      if (!fs.existsSync(sourceFile)) continue;
      const source = obj(JSON.parse(fs.readFileSync(sourceFile, "utf8")));
      // One file per partition (JSON policies), or one CloudFormation template (`file` at the top).
      const entries = str(source.file) ? [source] : Object.values(obj(source.partitions)).map(obj);
      for (const entry of entries) {
        const file = str(entry.file);
        if (!file) continue;
        const bytes = fs.readFileSync(path.join(base, version, file));
        const sha = createHash("sha256").update(bytes).digest("hex");
        if (sha !== entry.sha256)
          throw new Error(
            `${dir}/${version}/${file}: sha256 ${sha} differs from source.json (${String(entry.sha256)}); vendored policies are verbatim copies: restore the published file or update source.json with its new source`,
          );
        const name = `${path.basename(dir)} ${version} ${file}`;
        if (/\.ya?ml$/.test(file)) out.push(...templatePolicies(name, bytes.toString("utf8")));
        else out.push({ name, statements: statementsOf(obj(JSON.parse(bytes.toString("utf8")))) });
      }
    }
  }
  return out;
}

function statementsOf(doc: Obj): Obj[] {
  return Array.isArray(doc.Statement) ? arr(doc.Statement).map(obj) : [obj(doc.Statement)];
}

/** CloudFormation's short-form tags, kept as plain values: only `!Sub` policy documents are read. */
const CFN_TAGS = ["!Sub", "!GetAtt", "!Ref"].map((tag) => ({ tag, resolve: (value: string) => ({ [tag]: value }) }));

/** The `AWS::IAM::ManagedPolicy` documents of a CloudFormation template, one VendorPolicy each. */
function templatePolicies(name: string, text: string): VendorPolicy[] {
  const doc = obj(parseYaml(text, { customTags: CFN_TAGS }));
  const out: VendorPolicy[] = [];
  for (const [id, resource] of Object.entries(obj(doc.Resources)).map(([k, v]) => [k, obj(v)] as const)) {
    if (resource.Type !== "AWS::IAM::ManagedPolicy") continue;
    const sub = str(obj(obj(resource.Properties).PolicyDocument)["!Sub"]);
    if (!sub) throw new Error(`${name}: ${id} has no !Sub policy document`);
    out.push({ name: `${name} ${id}`, statements: statementsOf(obj(JSON.parse(sub))), templated: true });
  }
  return out;
}

const matchers = new WeakMap<Obj, RegExp>();
/** A template statement as a regular expression over canonical JSON: each placeholder one plain value. */
function templateMatcher(template: Obj): RegExp {
  let re = matchers.get(template);
  if (!re) {
    const parts = canonical(template).split(PLACEHOLDER);
    re = new RegExp(`^${parts.map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join(PLACEHOLDER_VALUE)}$`);
    matchers.set(template, re);
  }
  return re;
}

/** The vendor policy a statement belongs to verbatim (placeholders filled, for a template), if any. */
export function vendorOf(statement: Obj, vendors: readonly VendorPolicy[]): VendorPolicy | undefined {
  const c = canonical(statement);
  return vendors.find((v) => v.statements.some((s) => (v.templated ? templateMatcher(s).test(c) : canonical(s) === c)));
}
