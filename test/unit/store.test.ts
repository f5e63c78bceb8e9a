/**
 * The gateway's shared store as the stack provides it (serving.store): the
 * default by cluster mode, the rules preview refuses, the gateway config and
 * manifests that reach it (password from a Secret, never the ConfigMap; TLS;
 * egress to it only), the in-cluster Valkey's manifests, and the SharedStore
 * component under the mock runtime (ElastiCache Serverless, or Valkey in the cluster).
 */
import { describe, expect, it } from "vitest";
import { Deployment } from "kubernetes-models/apps/v1/Deployment";
import { NetworkPolicy } from "kubernetes-models/networking.k8s.io/v1/NetworkPolicy";
import { PersistentVolumeClaim } from "kubernetes-models/v1/PersistentVolumeClaim";
import { Service } from "kubernetes-models/v1/Service";
import { GatewayConfigSchema } from "../../images/gateway/src/config";
import { resolveStack } from "../../infra/resolve";
import { gatewayPlan } from "../../infra/plan/gateway";
import { renderGatewayManifests } from "../../infra/render/gatewayManifests";
import { renderStoreManifests, storeServerArgs } from "../../infra/render/storeManifests";
import { VALKEY_IMAGE } from "../../infra/catalog/images";
import { gatewayAccessString } from "../../infra/components/sharedStore";
import { gpt2Config, withOverrides, type RawConfig } from "../lib/fixtures";
import { gatewayOf } from "../lib/plan";
import { runComponents } from "../lib/pulumi";

import { MANAGED_HOST_PLACEHOLDER, STORE_PASSWORD_ENV, STORE_PORT } from "../../infra/conventions/store";
const KUBECONFIG = { kubeconfig: true };
const inCluster = (store: Record<string, unknown> = {}): RawConfig =>
  withOverrides(gpt2Config(), { cluster: { mode: "kubeconfig" }, serving: { store } });

function resolved(cfg: RawConfig) {
  const r = resolveStack(cfg, KUBECONFIG);
  if (!r.stack) throw new Error(JSON.stringify(r.problems));
  return r.stack;
}

function problemKeys(cfg: RawConfig): string[] {
  return resolveStack(cfg, KUBECONFIG).problems.map((p) => p.key);
}

describe("serving.store: which store, checked at preview", () => {
  it("defaults to managed (ElastiCache) when the stack creates the cluster, in-cluster Valkey otherwise", () => {
    expect(gatewayPlan(resolved(gpt2Config())).store?.mode).toBe("managed");
    expect(gatewayPlan(resolved(inCluster())).store?.mode).toBe("inCluster");
    const none = gatewayPlan(resolved(withOverrides(gpt2Config(), { serving: { store: { mode: "none" } } })));
    expect(none.store).toBeUndefined();
    expect(none.config.store).toBeUndefined();
  });

  it("refuses managed on a cluster it did not create, a volume without an in-cluster store, inCluster without storage on a created cluster, unknown keys", () => {
    expect(problemKeys(inCluster({ mode: "managed" }))).toEqual(["triton-ft:serving.store.mode"]);
    expect(problemKeys(withOverrides(gpt2Config(), { serving: { store: { storageGiB: 5 } } }))).toEqual([
      "triton-ft:serving.store.storageGiB",
    ]);
    expect(problemKeys(withOverrides(gpt2Config(), { serving: { store: { mode: "inCluster" } } }))).toEqual([
      "triton-ft:serving.store.mode",
    ]);
    // With a StorageClass named, a created cluster may run the store too.
    expect(
      problemKeys(withOverrides(gpt2Config(), { serving: { store: { mode: "inCluster", storageClassName: "gp3" } } })),
    ).toEqual([]);
    expect(problemKeys(inCluster({ replicas: 3 }))).toEqual(["triton-ft:serving.store.replicas"]);
    expect(problemKeys(inCluster({ mode: "redis" }))).toEqual(["triton-ft:serving.store.mode"]);
  });

  it("assumes the most gateway pods there can be until it has counted them: the replicas, or the autoscaler's max", () => {
    expect(
      gatewayPlan(resolved(withOverrides(gpt2Config(), { serving: { gatewayReplicas: 3 } }))).config.store,
    ).toMatchObject({
      assumedPods: 3,
    });
    const autoscaled = gatewayPlan(
      resolved(
        withOverrides(gpt2Config(), {
          serving: { autoscaling: { min: 1, max: 6, target: 0.5, prometheusUrl: "http://prometheus.monitoring:9090" } },
        }),
      ),
    );
    expect(autoscaled.config.store?.assumedPods).toBeGreaterThan(2);
  });
});

describe("the gateway's view of the store", () => {
  it("managed: cluster mode over TLS as the stack's ElastiCache user; the host is set at deploy; no password in the config", () => {
    const plan = gatewayPlan(resolved(gpt2Config()));
    const store = GatewayConfigSchema.parse(plan.config).store;
    expect(store).toMatchObject({
      host: MANAGED_HOST_PLACEHOLDER,
      port: STORE_PORT,
      mode: "cluster",
      tls: true,
      username: "triton-ft-gateway",
      passwordEnv: STORE_PASSWORD_ENV,
    });
    expect(JSON.stringify(plan.config)).not.toMatch(/password"\s*:/i);
  });

  it("in-cluster: standalone over TLS, checked against the mounted CA, to the Service's name", () => {
    const stack = resolved(inCluster());
    const p = gatewayOf(stack);
    const store = p.plan.store!;
    expect(p.plan.config.store).toMatchObject({
      host: `${store.name}.${store.namespace}.svc.cluster.local`,
      mode: "standalone",
      tls: true,
      caFile: "/etc/triton-ft-store-ca/ca.crt",
    });
    const m = renderGatewayManifests({ ...p.workload, image: "gw:synth", keysJson: "{}" });
    const pod = m.deployment.spec!.template.spec!;
    const container = pod.containers[0]!;
    expect(container.env).toContainEqual({
      name: STORE_PASSWORD_ENV,
      valueFrom: { secretKeyRef: { name: store.passwordSecret, key: "password" } },
    });
    expect(container.volumeMounts).toContainEqual({
      name: "store-ca",
      mountPath: "/etc/triton-ft-store-ca",
      readOnly: true,
    });
    expect(pod.volumes).toContainEqual({ name: "store-ca", configMap: { name: store.caConfigMap } });
    // The gateway reaches the store's pods on 6379 and nothing else new.
    const egress = m.networkPolicies.find((n) => n.metadata?.name?.endsWith("-gateway"))!.spec!.egress!;
    const toStore = egress.find((e) => e.ports?.some((x) => x.port === STORE_PORT))!;
    const storeManifests = renderStoreManifests({ ...p.workload, store });
    expect(toStore.to).toEqual([
      { podSelector: { matchLabels: storeManifests.deployment.spec!.selector.matchLabels } },
    ]);
  });

  it("none: no password variable, no store egress", () => {
    const p = gatewayOf(resolved(withOverrides(gpt2Config(), { serving: { store: { mode: "none" } } })));
    const m = renderGatewayManifests({ ...p.workload, image: "gw:synth", keysJson: "{}" });
    expect(JSON.stringify(m.deployment)).not.toContain(STORE_PASSWORD_ENV);
    expect(JSON.stringify(m.networkPolicies)).not.toContain(String(STORE_PORT));
  });
});

describe("the in-cluster Valkey", () => {
  const p = gatewayOf(resolved(inCluster({ storageGiB: 2, storageClassName: "gp3" })));
  const m = renderStoreManifests({ ...p.workload, store: p.plan.store! });

  it("valid objects: one pod replaced (not surged) over its volume, the Service, the claim of the configured size and class", () => {
    new Deployment(m.deployment).validate();
    new Service(m.service).validate();
    new PersistentVolumeClaim(m.volumeClaim).validate();
    new NetworkPolicy(m.networkPolicy).validate();
    expect(m.deployment.spec?.replicas).toBe(1);
    expect(m.deployment.spec?.strategy).toEqual({ type: "Recreate" });
    expect(m.volumeClaim.spec).toMatchObject({ resources: { requests: { storage: "2Gi" } }, storageClassName: "gp3" });
  });

  it("runs the pinned image by digest under the restricted profile, as the image's own user", () => {
    const pod = m.deployment.spec!.template.spec!;
    const c = pod.containers[0]!;
    expect(c.image).toBe(`${VALKEY_IMAGE.repository}@${VALKEY_IMAGE.digest}`);
    expect(VALKEY_IMAGE.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 999, runAsGroup: 1000, fsGroup: 1000 });
    expect(c.securityContext).toMatchObject({
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ["ALL"] },
    });
    expect(pod.automountServiceAccountToken).toBe(false);
    expect(c.resources?.limits?.memory).toBeDefined();
  });

  it("speaks TLS only, takes its password from a mounted file, keeps an append-only file and never evicts", () => {
    const args = storeServerArgs();
    const arg = (name: string) => args[args.indexOf(name) + 1];
    expect(arg("--port")).toBe("0");
    expect(arg("--tls-port")).toBe(String(STORE_PORT));
    expect(arg("--include")).toBe("/etc/valkey-auth/auth.conf");
    expect(arg("--appendonly")).toBe("yes");
    expect(arg("--maxmemory-policy")).toBe("noeviction");
    expect(args.join(" ")).not.toMatch(/requirepass/);
    expect(m.deployment.spec!.template.spec!.containers[0]!.args).toEqual(args);
  });

  it("admits only the gateway pods, on 6379, and talks to no one", () => {
    const spec = m.networkPolicy.spec!;
    expect(spec.ingress).toEqual([
      {
        from: [
          {
            podSelector: {
              matchLabels: {
                "app.kubernetes.io/name": "triton-ft-gateway",
                "app.kubernetes.io/instance": m.deployment.spec!.selector.matchLabels!["app.kubernetes.io/instance"],
              },
            },
          },
        ],
        ports: [{ protocol: "TCP", port: STORE_PORT }],
      },
    ]);
    expect(spec.egress).toEqual([]);
  });
});

describe("SharedStore component", () => {
  const run = (cfg: RawConfig) => {
    const p = gatewayOf(resolved(cfg));
    return runComponents(async () => {
      const k8s = await import("@pulumi/kubernetes");
      const { SharedStore } = await import("../../infra/components/sharedStore");
      return () => {
        const provider = new k8s.Provider("k8s", { kubeconfig: "{}" });
        const s = new SharedStore("store", {
          plan: p.plan.store!,
          workload: p.workload,
          provider,
          dependsOn: [],
          managed: {
            vpcId: "vpc-0123456789abcdef0",
            subnetIds: ["subnet-00000000000000001", "subnet-00000000000000002"],
            nodeSecurityGroupId: "sg-0123456789abcdef0",
            namePrefix: "triton-ft-unit",
            tags: { team: "ml" },
          },
        });
        return { host: s.host };
      };
    });
  };

  it("managed: a Valkey ElastiCache Serverless cache in the private subnets, only the nodes' group admitted on 6379, AUTH as a prefix-bound user", async () => {
    const r = await run(gpt2Config());
    const cache = r.one("aws:elasticache/serverlessCache:ServerlessCache");
    expect(cache.inputs).toMatchObject({
      engine: "valkey",
      subnetIds: ["subnet-00000000000000001", "subnet-00000000000000002"],
      tags: { team: "ml" },
    });
    const sg = r.one("aws:ec2/securityGroup:SecurityGroup");
    expect(sg.inputs.ingress).toEqual([
      expect.objectContaining({
        protocol: "tcp",
        fromPort: 6379,
        toPort: 6379,
        securityGroups: ["sg-0123456789abcdef0"],
      }),
    ]);
    expect(JSON.stringify(sg.inputs.ingress)).not.toContain("cidrBlocks");
    expect(sg.inputs.egress).toEqual([]);
    expect(cache.inputs.securityGroupIds).toEqual([sg.state.id ?? sg.id]);
    const users = r.byType("aws:elasticache/user:User");
    const byName = Object.fromEntries(users.map((u) => [String(u.inputs.userName), u.inputs]));
    expect(byName.default?.accessString).toMatch(/^off /);
    expect(byName["triton-ft-gateway"]?.accessString).toBe(gatewayAccessString("triton-ft:"));
    expect(String(byName["triton-ft-gateway"]?.accessString)).toContain("~triton-ft:*");
    expect((r.one("aws:elasticache/userGroup:UserGroup").inputs.userIds as string[]).sort()).toEqual(
      users.map((u) => String(u.inputs.userId)).sort(),
    );
    expect(cache.inputs.userGroupId).toBe(r.one("aws:elasticache/userGroup:UserGroup").inputs.userGroupId);
    // The password lives in one Kubernetes Secret and the user; never in an output.
    const password = String(r.one("random:index/randomPassword:RandomPassword", "store-password").state.result);
    const secret = r.one("kubernetes:core/v1:Secret", "store-auth");
    expect((secret.inputs.stringData as Record<string, string>).password).toBe(password);
    expect(JSON.stringify(r.outputs)).not.toContain(password);
    expect(String(r.outputs.host)).toMatch(/\.serverless\.use1\.cache\.amazonaws\.com$/);
    expect(r.byType("kubernetes:apps/v1:Deployment")).toEqual([]);
  });

  it("inCluster: the Valkey pod with its claim, Service and policy, a certificate for the Service's names from its own CA; no AWS", async () => {
    const r = await run(inCluster());
    expect(r.byType("aws:elasticache/serverlessCache:ServerlessCache")).toEqual([]);
    expect(r.byType("kubernetes:apps/v1:Deployment")).toHaveLength(1);
    expect(r.byType("kubernetes:core/v1:PersistentVolumeClaim")).toHaveLength(1);
    expect(r.byType("kubernetes:networking.k8s.io/v1:NetworkPolicy")).toHaveLength(1);
    const request = r.one("tls:index/certRequest:CertRequest");
    expect(request.inputs.dnsNames).toContain(String(r.outputs.host));
    const tlsSecret = r.one("kubernetes:core/v1:Secret", "store-tls");
    expect(tlsSecret.inputs.type).toBe("kubernetes.io/tls");
    expect(Object.keys(tlsSecret.inputs.stringData as object).sort()).toEqual(["ca.crt", "tls.crt", "tls.key"]);
    const auth = r.one("kubernetes:core/v1:Secret", "store-auth").inputs.stringData as Record<string, string>;
    expect(auth["auth.conf"]).toBe(`requirepass ${auth.password}\n`);
  });
});
