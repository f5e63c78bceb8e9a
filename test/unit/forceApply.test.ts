import { describe, expect, it } from "vitest";
import type * as pulumi from "@pulumi/pulumi";
import { FORCE_APPLY_ANNOTATION, forceApply } from "../../infra/forceApply";

const args = (type: string, props: Record<string, unknown>): pulumi.ResourceTransformArgs => ({
  type,
  name: "x",
  custom: true,
  props,
  opts: {},
});

describe("forceApply (the stack takes back fields edited by hand)", () => {
  it("annotates Kubernetes objects, keeping their own annotations", () => {
    const r = forceApply(
      args("kubernetes:apps/v1:Deployment", { metadata: { name: "d", annotations: { a: "1" } }, spec: {} }),
    );
    expect(r?.props.metadata).toEqual({ name: "d", annotations: { a: "1", [FORCE_APPLY_ANNOTATION]: "true" } });
    expect(r?.props.spec).toEqual({});
  });

  it("leaves the provider, Helm releases and objects without metadata alone", () => {
    expect(forceApply(args("pulumi:providers:kubernetes", { kubeconfig: "k" }))).toBeUndefined();
    expect(forceApply(args("kubernetes:helm.sh/v3:Release", { chart: "c" }))).toBeUndefined();
    expect(forceApply(args("aws:s3/bucket:Bucket", { metadata: {} }))).toBeUndefined();
    expect(forceApply(args("kubernetes:core/v1:ConfigMap", { data: {} }))).toBeUndefined();
  });
});
