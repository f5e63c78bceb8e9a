/**
 * Third-party IAM policies the stack applies verbatim: today the AWS Load
 * Balancer Controller's own published policy, vendored by version under
 * infra/data/aws-load-balancer-controller/<version>/ with a source.json that
 * records each file's upstream URL and sha256. Following the controller's
 * policy is what gives a controller upgrade the permissions it needs; some of
 * its statements grant `Resource: "*"` without a condition (listener and rule
 * management, WAF/Shield/ACM lookups). The IAM rule accepts exactly those
 * statements, byte-for-byte as published, as a documented exception (README,
 * Security): a statement edited in any way, or a file whose sha256 no longer
 * matches source.json, is checked like any other.
 */
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { arr, obj, str, type Obj } from "./values";

export interface VendorPolicy {
  /** e.g. `aws-load-balancer-controller v3.5.0 iam_policy.json`. */
  name: string;
  statements: Obj[];
}

/** Folders (relative to the repository root) that hold vendored policies with a source.json. */
export const VENDOR_POLICY_DIRS = ["infra/data/aws-load-balancer-controller"] as const;

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
      for (const entry of Object.values(obj(source.partitions)).map(obj)) {
        const file = str(entry.file);
        if (!file) continue;
        const bytes = fs.readFileSync(path.join(base, version, file));
        const sha = createHash("sha256").update(bytes).digest("hex");
        if (sha !== entry.sha256)
          throw new Error(
            `${dir}/${version}/${file}: sha256 ${sha} differs from source.json (${String(entry.sha256)}); vendored policies are verbatim copies: restore the published file or update source.json with its new source`,
          );
        const doc = obj(JSON.parse(bytes.toString("utf8")));
        const statements = Array.isArray(doc.Statement) ? arr(doc.Statement).map(obj) : [obj(doc.Statement)];
        out.push({ name: `${path.basename(dir)} ${version} ${file}`, statements });
      }
    }
  }
  return out;
}

/** The vendor policy a statement belongs to verbatim, if any. */
export function vendorOf(statement: Obj, vendors: readonly VendorPolicy[]): VendorPolicy | undefined {
  const c = canonical(statement);
  return vendors.find((v) => v.statements.some((s) => canonical(s) === c));
}
