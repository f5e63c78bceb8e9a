/**
 * Validates custom resources against the openAPIV3Schema of a vendored CRD
 * (test/data/crds/<file>.yaml) with ajv, the way the API server's structural
 * schema would, minus CEL rules (x-kubernetes-validations) which only a real API
 * server evaluates (test/k8s). Unknown fields are errors here, as with
 * `kubectl apply` (server-side field validation Strict).
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import Ajv, { type ValidateFunction } from "ajv";
import { parseAllDocuments } from "yaml";

export const CRD_DIR = path.resolve(__dirname, "../data/crds");

interface Crd {
  kind: string;
  spec: {
    group: string;
    names: { kind: string };
    versions: Array<{ name: string; served: boolean; schema?: { openAPIV3Schema: Schema } }>;
  };
}
type Schema = { [key: string]: unknown };

/** Object schemas with declared properties reject undeclared ones, unless marked to preserve them. */
function strict(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(strict);
  if (node === null || typeof node !== "object") return node;
  const out: Schema = {};
  for (const [k, v] of Object.entries(node as Schema)) out[k] = strict(v);
  if (
    out.properties !== undefined &&
    out.additionalProperties === undefined &&
    out["x-kubernetes-preserve-unknown-fields"] !== true
  ) {
    out.additionalProperties = false;
  }
  return out;
}

/** The vendored file's header: `# Source: <url>` and `# Version: <version>`. */
export function crdProvenance(file: string): { source: string; version: string } {
  const text = readFileSync(path.join(CRD_DIR, file), "utf8");
  const source = /^# Source: (\S+)$/m.exec(text)?.[1];
  const version = /^# Version: (.+)$/m.exec(text)?.[1];
  if (!source || !version) throw new Error(`${file}: missing '# Source:' or '# Version:' header`);
  return { source, version };
}

/**
 * CRD patterns are Go RE2: its `(?i)` group becomes the `i` flag (the CRDs put it
 * where it applies to the rest of the pattern); a pattern JavaScript cannot
 * compile at all throws, never silently passes.
 */
function re2(pattern: string, flags: string): RegExp {
  const insensitive = pattern.includes("(?i)");
  const source = pattern.split("(?i)").join("");
  return new RegExp(source, insensitive ? `${flags}i` : flags);
}
re2.code = "re2";

const ajv = new Ajv({ strict: false, allErrors: true, validateFormats: false, code: { regExp: re2 } });
const cache = new Map<string, ValidateFunction>();

/** A validator for `apiVersion` + `kind` from the vendored CRD file. */
export function crdValidator(file: string, apiVersion: string, kind: string): (obj: unknown) => string[] {
  const key = `${file}|${apiVersion}|${kind}`;
  let validate = cache.get(key);
  if (!validate) {
    const docs = parseAllDocuments(readFileSync(path.join(CRD_DIR, file), "utf8")).map((d) => d.toJS() as Crd);
    const [group, version] = apiVersion.split("/");
    const crd = docs.find(
      (d) => d?.kind === "CustomResourceDefinition" && d.spec.group === group && d.spec.names.kind === kind,
    );
    const schema = crd?.spec.versions.find((v) => v.name === version && v.served)?.schema?.openAPIV3Schema;
    if (!schema) throw new Error(`${file}: no served ${apiVersion} ${kind} schema`);
    validate = ajv.compile(strict(schema) as Schema);
    cache.set(key, validate);
  }
  const v = validate;
  return (obj: unknown) => {
    if (v(obj)) return [];
    return (v.errors ?? []).map(
      (e) => `${e.instancePath || "/"} ${e.message ?? ""}${e.params ? " " + JSON.stringify(e.params) : ""}`,
    );
  };
}

/** Which vendored CRD holds each custom resource kind this project renders. */
export const CRD_FILES: Record<string, string> = {
  ScaledObject: "keda.sh_scaledobjects.yaml",
  NodePool: "karpenter.sh_nodepools.yaml",
  EC2NodeClass: "karpenter.k8s.aws_ec2nodeclasses.yaml",
  ServiceMonitor: "monitoring.coreos.com_servicemonitors.yaml",
  PrometheusRule: "monitoring.coreos.com_prometheusrules.yaml",
};

/** Validate any rendered custom resource by its kind; throws with every error. */
export function validateCustomResource(obj: { apiVersion: string; kind: string }): void {
  const file = CRD_FILES[obj.kind];
  if (!file) throw new Error(`no vendored CRD for kind ${obj.kind}`);
  const errors = crdValidator(file, obj.apiVersion, obj.kind)(obj);
  if (errors.length > 0) throw new Error(`${obj.kind} does not match ${file}:\n  ${errors.join("\n  ")}`);
}
