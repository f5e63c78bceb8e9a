/**
 * The gateway's manifests and the namespace's NetworkPolicies: valid against
 * the Kubernetes schema, restricted pod security profile, TLS listener only
 * with a certificate, and policies that admit only the gateway to Triton's
 * 8000/8001 and only the scraper to the metrics ports.
 */
import { isDeepStrictEqual } from "node:util";
import { describe, expect, it } from "vitest";
import { ConfigMap } from "kubernetes-models/v1/ConfigMap";
import { Secret } from "kubernetes-models/v1/Secret";
import { Service } from "kubernetes-models/v1/Service";
import { Deployment } from "kubernetes-models/apps/v1/Deployment";
import { NetworkPolicy } from "kubernetes-models/networking.k8s.io/v1/NetworkPolicy";
import { PodDisruptionBudget } from "kubernetes-models/policy/v1/PodDisruptionBudget";
import { resolveStack } from "../../../infra/resolve";
import type { ResolvedStack } from "../../../infra/config/stack";
import { selectorLabels } from "../../../infra/render/tritonManifests";
import {
  SCRAPER_NAMESPACE_LABEL,
  renderGatewayManifests,
  type GatewayManifests,
} from "../../../infra/render/gatewayManifests";
import { INSTANCE_TYPE_LABEL } from "../../../infra/render/scheduling";

import { gpt2Config, withOverrides, type RawConfig } from "../../lib/fixtures";
import { gatewayOf } from "../../lib/plan";
import { seedModelsPlan } from "../../lib/scalingFixtures";

import { PORTS, SYSTEM_NODE_LABEL } from "../../../infra/conventions/workload";
import { STORE_PORT } from "../../../infra/conventions/store";
const DIGEST = `123456789012.dkr.ecr.us-east-1.amazonaws.com/triton-ft-test/gateway@sha256:${"cd".repeat(32)}`;

function resolved(cfg: RawConfig = gpt2Config()): ResolvedStack {
  const { stack, problems } = resolveStack(cfg, { hfToken: false, kubeconfig: false });
  if (!stack) throw new Error(JSON.stringify(problems));
  return stack;
}

function render(tlsCertificateArn?: string, image = DIGEST): GatewayManifests {
  const cfg = withOverrides(gpt2Config(), {
    serving: { consumers: ["team-a"], ...(tlsCertificateArn ? { tlsCertificateArn } : {}) },
  });
  const s = resolved(cfg);
  return renderGatewayManifests({
    ...gatewayOf(s).workload,
    image,
    keysJson: JSON.stringify({ consumers: [{ name: "team-a", keySha256: ["0".repeat(64)] }] }),
  });
}

describe("gateway manifests", () => {
  it("are valid Kubernetes objects", () => {
    const m = render();
    new ConfigMap(m.configMap).validate();
    new Secret(m.keysSecret).validate();
    new Deployment(m.deployment).validate();
    new Service(m.service).validate();
    new Service(m.metricsService).validate();
    new PodDisruptionBudget(m.podDisruptionBudget).validate();
    for (const p of m.networkPolicies) new NetworkPolicy(p).validate();
  });

  it("follow the restricted pod security profile, with probes and resources", () => {
    const pod = render().deployment.spec!.template.spec!;
    expect(pod.automountServiceAccountToken).toBe(false);
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, seccompProfile: { type: "RuntimeDefault" } });
    const c = pod.containers[0];
    expect(c.image).toBe(DIGEST);
    expect(c.securityContext).toMatchObject({
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ["ALL"] },
    });
    expect(c.readinessProbe?.httpGet?.path).toBe("/readyz");
    expect(c.livenessProbe?.httpGet?.path).toBe("/healthz");
    expect(c.resources?.requests).toMatchObject({ cpu: expect.any(String), memory: expect.any(String) });
    expect(c.resources?.limits?.memory).toBeDefined();
    expect(pod.tolerations).toBeUndefined();
  });

  it("require the stack's system node group only where the stack creates the cluster", () => {
    const affinity = (m: GatewayManifests): unknown =>
      m.deployment.spec!.template.spec!.affinity!.nodeAffinity!.requiredDuringSchedulingIgnoredDuringExecution!
        .nodeSelectorTerms[0].matchExpressions;
    expect(affinity(render())).toEqual([
      { key: SYSTEM_NODE_LABEL.key, operator: "In", values: [SYSTEM_NODE_LABEL.value] },
      { key: INSTANCE_TYPE_LABEL, operator: "NotIn", values: ["g5.xlarge"] },
    ]);
    // An existing cluster's node pools are not the stack's: there the gateway only keeps off the GPU type.
    const { stack, problems } = resolveStack(withOverrides(gpt2Config(), { cluster: { mode: "kubeconfig" } }), {
      hfToken: false,
      kubeconfig: true,
    });
    if (!stack) throw new Error(JSON.stringify(problems));
    const gateway = gatewayOf(stack);
    expect(gateway.plan.systemNodeLabel).toBeUndefined();
    const existing = renderGatewayManifests({
      ...gateway.workload,
      image: DIGEST,
      keysJson: "{}",
    });
    expect(affinity(existing)).toEqual([{ key: INSTANCE_TYPE_LABEL, operator: "NotIn", values: ["g5.xlarge"] }]);
  });

  it("refuses an image that is not pinned by digest", () => {
    expect(() => render(undefined, "gateway:latest")).toThrow(/digest/);
  });

  it("puts an NLB TLS listener on 443 only with a certificate, else plain 80", () => {
    const plain = render().service;
    expect(plain.spec?.ports?.map((p) => p.port)).toEqual([80]);
    expect(Object.keys(plain.metadata?.annotations ?? {}).some((k) => k.endsWith("ssl-cert"))).toBe(false);
    const arn = "arn:aws:acm:us-east-1:123456789012:certificate/abc";
    const tls = render(arn).service;
    expect(tls.spec?.ports?.map((p) => [p.port, p.targetPort])).toEqual([[443, "http"]]);
    expect(tls.metadata?.annotations?.["service.beta.kubernetes.io/aws-load-balancer-ssl-cert"]).toBe(arn);
    expect(tls.metadata?.annotations?.["service.beta.kubernetes.io/aws-load-balancer-ssl-ports"]).toBe("443");
  });

  it("keeps only hashes in the Secret and rolls pods when the config or keys change", () => {
    const m = render();
    expect(m.keysSecret.stringData?.["keys.json"]).toContain("keySha256");
    expect(m.deployment.spec?.template.metadata?.annotations?.["triton-ft.io/config-checksum"]).toMatch(
      /^[0-9a-f]{64}$/,
    );
  });
});

describe("network policies", () => {
  const m = render();
  const byName = (suffix: string) => m.networkPolicies.find((p) => p.metadata?.name?.endsWith(suffix))!;
  const gatewaySelector = m.deployment.spec!.selector.matchLabels!;

  it("deny everything in the namespace by default", () => {
    expect(byName("default-deny").spec).toEqual({ podSelector: {}, policyTypes: ["Ingress", "Egress"] });
  });

  it("admit only the gateway to Triton's 8000/8001 and only the scraper to 8002", () => {
    const triton = byName("-triton").spec!;
    const [fromGateway, fromScraper] = triton.ingress!;
    expect(fromGateway.from).toEqual([{ podSelector: { matchLabels: gatewaySelector } }]);
    expect(fromGateway.ports?.map((p) => p.port)).toEqual([PORTS.http, PORTS.grpc]);
    expect(fromScraper.from).toEqual([{ namespaceSelector: { matchLabels: { [SCRAPER_NAMESPACE_LABEL]: "true" } } }]);
    expect(fromScraper.ports?.map((p) => p.port)).toEqual([PORTS.metrics]);
    expect(triton.egress?.every((e) => e.ports?.every((p) => p.port === 53))).toBe(true);
  });

  it("let the gateway reach only Triton, DNS and its shared store (managed by default here: the VPC on 6379)", () => {
    const gw = byName("-gateway").spec!;
    expect(gw.podSelector?.matchLabels).toEqual(gatewaySelector);
    const ports = gw.egress!.flatMap((e) => e.ports!.map((p) => p.port));
    expect(ports.sort()).toEqual([53, 53, PORTS.http, PORTS.grpc, STORE_PORT].sort());
    const store = gw.egress!.find((e) => e.ports?.some((p) => p.port === STORE_PORT));
    // ElastiCache sits in the stack's VPC: network.vpcCidr's default.
    expect(store?.to).toEqual([{ ipBlock: { cidr: "10.42.0.0/16" } }]);
  });
});

describe("network policies of a stack of several models", () => {
  const { plan } = seedModelsPlan();
  const m = renderGatewayManifests({ ...plan.gateway.workload, image: DIGEST, keysJson: "{}" });
  const gatewaySelector = m.deployment.spec!.selector.matchLabels!;
  // Each model's Triton pods, as its own Deployment selects them.
  const tritonSelectors = plan.models.map((e) => selectorLabels(e.plan.renderInputs.triton));

  it("are valid Kubernetes objects, named after the workload they guard", () => {
    for (const p of m.networkPolicies) new NetworkPolicy(p).validate();
    expect(m.networkPolicies.map((p) => p.metadata?.name)).toEqual([
      "triton-h2ogpt-6-9b-default-deny",
      "triton-h2ogpt-6-9b-gateway",
      "triton-h2ogpt-6-9b-triton",
      "triton-kogpt-6b-triton",
      "triton-codegen-2b-mono-triton",
    ]);
  });

  it("let the gateway reach each model's Triton pods on 8000/8001, and only those (and its one store, and DNS)", () => {
    const gw = m.networkPolicies.find(
      (p) => p.spec?.podSelector?.matchLabels?.["app.kubernetes.io/name"] === "triton-ft-gateway",
    )!;
    const egress = gw.spec!.egress!;
    const [toTriton] = egress;
    const dns = egress.at(-1);
    expect(toTriton?.to).toEqual(tritonSelectors.map((matchLabels) => ({ podSelector: { matchLabels } })));
    expect(toTriton?.ports?.map((p) => p.port)).toEqual([PORTS.http, PORTS.grpc]);
    expect(dns?.ports?.every((p) => p.port === 53)).toBe(true);
    // The stack's one shared store (the default serving.store), whatever the model count.
    expect(plan.gateway.workload.store).toBeDefined();
    expect(egress.slice(1, -1).map((r) => r.ports?.map((p) => p.port))).toEqual([[STORE_PORT]]);
    expect(egress).toHaveLength(3);
  });

  it("admit only the gateway to each model's Triton, and only the scraper to its metrics port", () => {
    for (const selector of tritonSelectors) {
      const own = m.networkPolicies.filter((p) => isDeepStrictEqual(p.spec?.podSelector?.matchLabels, selector));
      expect(own, JSON.stringify(selector)).toHaveLength(1);
      const [fromGateway, fromScraper] = own[0]!.spec!.ingress!;
      expect(fromGateway?.from).toEqual([{ podSelector: { matchLabels: gatewaySelector } }]);
      expect(fromGateway?.ports?.map((p) => p.port)).toEqual([PORTS.http, PORTS.grpc]);
      expect(fromScraper?.from).toEqual([
        { namespaceSelector: { matchLabels: { [SCRAPER_NAMESPACE_LABEL]: "true" } } },
      ]);
      expect(fromScraper?.ports?.map((p) => p.port)).toEqual([PORTS.metrics]);
      expect(own[0]!.spec!.ingress).toHaveLength(2);
    }
  });
});
