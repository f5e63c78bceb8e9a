/**
 * Kubernetes manifests of the gateway, the only thing behind the load
 * balancer, and the namespace's NetworkPolicies. Pure: no Pulumi; the
 * component turns them into resources and `synth` writes them as YAML.
 *
 * - Deployment on the system nodes: required onto the stack's system node
 *   group by its label when the stack creates the cluster; in any cluster it
 *   tolerates no GPU taint and avoids the GPU instance type. Restricted pod
 *   security profile, probes, PDB.
 * - NLB Service: TLS on 443 with `serving.tlsCertificateArn`, else plain 80;
 *   health-checked on /readyz (ready when Triton's ensemble is).
 * - ConfigMap (the gateway config, rendered from the plan) and a Secret with
 *   the consumers' key hashes; a checksum of both in the pod template rolls
 *   the pods when either changes (the keys also reload in place).
 * - NetworkPolicies: default deny in the namespace; the gateway may be
 *   reached on 8080 from anywhere (NLB with IP targets keeps client
 *   addresses) and on 9090 from the metrics scraper; Triton only from the
 *   gateway on 8000/8001 and from the scraper on 8002; egress only to DNS
 *   and, for the gateway, to Triton and its shared store (serving.store).
 * - With a shared store: the store's password as an environment variable from
 *   its Secret (never in the ConfigMap) and, for the in-cluster store, the
 *   CA certificate its TLS is checked against (render/storeManifests.ts).
 */
import { createHash } from "node:crypto";
import { stringify } from "yaml";
import type { IConfigMap } from "kubernetes-models/v1/ConfigMap";
import type { ISecret } from "kubernetes-models/v1/Secret";
import type { IService } from "kubernetes-models/v1/Service";
import type { IDeployment } from "kubernetes-models/apps/v1/Deployment";
import type { IContainer } from "kubernetes-models/v1/Container";
import type { INetworkPolicy } from "kubernetes-models/networking.k8s.io/v1/NetworkPolicy";
import type { INetworkPolicyEgressRule } from "kubernetes-models/networking.k8s.io/v1/NetworkPolicyEgressRule";
import type { INetworkPolicyPort } from "kubernetes-models/networking.k8s.io/v1/NetworkPolicyPort";
import type { IPodDisruptionBudget } from "kubernetes-models/policy/v1/PodDisruptionBudget";

import { NLB_LOAD_BALANCER_CLASS, recommendedLabels, selectorLabels } from "./tritonManifests";
import { isDigestRef, isSynthRef, notPinnedMessage } from "../imageRef";
import {
  podSecurityContext,
  scannerSkipAnnotations,
  supportContainerSecurityContext,
  type ScannerSkip,
} from "./podSecurity";
import { spreadAcrossZonesAndNodes, systemNodeAffinity } from "./scheduling";
import { STORE_PASSWORD_KEY } from "./storeManifests";
import { storeSelector } from "./storeManifests";

import { NLB_HEALTH_CHECK, PORTS, workloadName, GATEWAY_PORTS } from "../conventions/workload";
import { STORE_CA_DIR, STORE_PASSWORD_ENV, STORE_PORT } from "../conventions/store";
import type { LoadBalancerSettings, WorkloadInput } from "../plan/types";
import type { StorePlan } from "../plan/types";
import { gatewayName } from "../conventions/workload";
import type { GatewayWorkloadInput } from "../plan/types";
import type { GatewayConfigFile } from "../plan/types";
/** Deliberate scanner findings of the gateway Deployment, with why (docs/security.md "Documented exceptions"). */
export const GATEWAY_SCANNER_SKIPS: readonly ScannerSkip[] = [
  {
    id: "CKV_K8S_11",
    reason:
      "no CPU limit on purpose: CFS throttling stalls the event loop that streams every response; the pod requests the CPU it needs",
  },
  {
    id: "CKV_K8S_40",
    reason: "runs as the Node.js image's own unprivileged user node (uid 1000), which the image's files belong to",
  },
];
/** With a shared store: its password is an environment variable, as the gateway's config names it (docs/security.md). */
export const GATEWAY_STORE_SCANNER_SKIP: ScannerSkip = {
  id: "CKV_K8S_35",
  reason:
    "the shared store's password reaches the gateway as GATEWAY_STORE_PASSWORD from its Secret (secretKeyRef), never the ConfigMap; one container, no child processes, read-only root",
};
/** The Node.js image's unprivileged user node (GATEWAY_SCANNER_SKIPS CKV_K8S_40). */
const GATEWAY_UID = 1000;
/** Declares that every request through this Service is authenticated (the gateway's API keys); policy/rules/kubernetes.ts reads it. */
export const CLIENT_AUTH_ANNOTATION = "triton-ft.io/client-auth";

export const GATEWAY_COMPONENT = "gateway";
/** Namespaces whose pods may scrape metrics (Prometheus) carry this label. */
export const SCRAPER_NAMESPACE_LABEL = "triton-ft.io/metrics-scraper";
export const GATEWAY_HEALTH_PATH = "/readyz";
export const GATEWAY_LIVE_PATH = "/healthz";
/** TLS policy of the NLB listener: TLS 1.3 and 1.2 only. */
export const NLB_TLS_POLICY = "ELBSecurityPolicy-TLS13-1-2-2021-06";
const ANN = "service.beta.kubernetes.io/aws-load-balancer-";
const CONFIG_DIR = "/etc/triton-ft-gateway";
const KEYS_DIR = "/etc/triton-ft-gateway-keys";
/** NLB deregistration: the same propagation the Triton pods wait for (resolve/workload.ts). */
const PRE_STOP_SECONDS = 50;

export interface GatewayRenderInput extends GatewayWorkloadInput {
  /** Gateway image by digest (`<repo>@sha256:<hex>`), or synth's marked placeholder. */
  image: string;
  /** The keys file (consumers and key hashes) as JSON. */
  keysJson: string;
}

export interface GatewayManifests {
  configMap: IConfigMap;
  keysSecret: ISecret;
  deployment: IDeployment;
  service: IService;
  metricsService: IService;
  podDisruptionBudget: IPodDisruptionBudget;
  networkPolicies: INetworkPolicy[];
}

/** The gateway pods' selector: the stack's instance label plus the component. */
export function gatewaySelector(w: Pick<WorkloadInput, "modelName" | "stackName">): Record<string, string> {
  return {
    "app.kubernetes.io/name": "triton-ft-gateway",
    "app.kubernetes.io/instance": selectorLabels(w)["app.kubernetes.io/instance"],
  };
}

/** Terminated pods finish in-flight generations first: up to the request timeout after the NLB stops sending. */
export function gatewayGracePeriod(config: GatewayConfigFile): number {
  return PRE_STOP_SECONDS + config.limits.requestTimeoutSeconds + 5;
}

function gatewayAnnotations(lb: LoadBalancerSettings, tls: boolean): Record<string, string> {
  const port = tls ? 443 : 80;
  return {
    [`${ANN}type`]: "external",
    [`${ANN}nlb-target-type`]: "ip",
    [`${ANN}scheme`]: lb.scheme,
    [`${ANN}healthcheck-protocol`]: "http",
    [`${ANN}healthcheck-port`]: String(GATEWAY_PORTS.http),
    [`${ANN}healthcheck-path`]: GATEWAY_HEALTH_PATH,
    [`${ANN}healthcheck-interval`]: String(NLB_HEALTH_CHECK.intervalSeconds),
    [`${ANN}healthcheck-timeout`]: String(NLB_HEALTH_CHECK.timeoutSeconds),
    [`${ANN}healthcheck-healthy-threshold`]: String(NLB_HEALTH_CHECK.healthyThreshold),
    [`${ANN}healthcheck-unhealthy-threshold`]: String(NLB_HEALTH_CHECK.unhealthyThreshold),
    [`${ANN}listener-attributes.TCP-${port}`]: `tcp.idle_timeout.seconds=${lb.idleTimeoutSeconds}`,
    [`${ANN}target-group-attributes`]:
      "deregistration_delay.timeout_seconds=60,deregistration_delay.connection_termination.enabled=true",
    [`${ANN}attributes`]: "load_balancing.cross_zone.enabled=true",
    // The gateway refuses any request without a valid API key.
    [CLIENT_AUTH_ANNOTATION]: "api-key",
    ...(tls
      ? {
          [`${ANN}ssl-ports`]: "443",
          [`${ANN}ssl-negotiation-policy`]: NLB_TLS_POLICY,
          // The certificate ARN is set by the caller (it may be a Pulumi output).
        }
      : {}),
  };
}

/**
 * The NLB's tags as the AWS Load Balancer Controller reads them: one
 * `key=value` list, split at commas, each pair trimmed and cut at its first
 * `=` (pkg/annotations/parser.go ParseStringMapAnnotation). AWS refuses commas
 * in tags; resolve/limits.ts checkTags refuses a key with `=` and padding
 * spaces the controller would cut. Sorted, so the annotation changes only
 * when a tag does.
 */
export function loadBalancerTagsAnnotation(tags: Readonly<Record<string, string>>): string {
  return Object.keys(tags)
    .sort()
    .map((k) => `${k}=${tags[k] ?? ""}`)
    .join(",");
}

/** What every gateway manifest shares: where it lives, what it is called and which pods it selects. */
interface GatewayContext {
  input: GatewayRenderInput;
  ns: string;
  name: string;
  selector: Record<string, string>;
  podLabels: Record<string, string>;
}

export function renderGatewayManifests(input: GatewayRenderInput): GatewayManifests {
  const { image, triton: w } = input;
  if (!isDigestRef(image) && !isSynthRef(image)) {
    throw new Error(notPinnedMessage("gateway image", image));
  }
  const selector = gatewaySelector(w);
  const ctx: GatewayContext = {
    input,
    ns: w.namespace,
    name: gatewayName(w),
    selector,
    podLabels: { ...recommendedLabels(w, GATEWAY_COMPONENT), ...selector },
  };
  const configJson = `${JSON.stringify(input.config, null, 2)}\n`;
  const checksum = createHash("sha256").update(configJson).update(input.keysJson).digest("hex");
  return {
    configMap: gatewayConfigMap(ctx, configJson),
    keysSecret: gatewayKeysSecret(ctx),
    deployment: gatewayDeployment(ctx, checksum),
    service: gatewayService(ctx),
    metricsService: gatewayMetricsService(ctx),
    podDisruptionBudget: gatewayDisruptionBudget(ctx),
    networkPolicies: gatewayNetworkPolicies(ctx),
  };
}

function gatewayConfigMap({ ns, name, podLabels }: GatewayContext, configJson: string): IConfigMap {
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: `${name}-config`, namespace: ns, labels: podLabels },
    data: { "config.json": configJson },
  };
}

function gatewayKeysSecret({ input, ns, name, podLabels }: GatewayContext): ISecret {
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: `${name}-keys`, namespace: ns, labels: podLabels },
    type: "Opaque",
    // Hashes only: the keys themselves exist only in the stack's secret outputs.
    stringData: { "keys.json": input.keysJson },
  };
}

/** checksum: of the config and the keys, so a change to either rolls the pods. */
function gatewayDeployment(ctx: GatewayContext, checksum: string): IDeployment {
  const { input, ns, name, selector, podLabels } = ctx;
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: {
      name,
      namespace: ns,
      labels: podLabels,
      annotations: scannerSkipAnnotations(
        input.store ? [...GATEWAY_SCANNER_SKIPS, GATEWAY_STORE_SCANNER_SKIP] : GATEWAY_SCANNER_SKIPS,
      ),
    },
    spec: {
      // Autoscaled: left out, so an update does not reset what the HPA chose.
      ...(input.autoscaled ? {} : { replicas: input.replicas }),
      revisionHistoryLimit: 5,
      selector: { matchLabels: selector },
      strategy: { type: "RollingUpdate", rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } },
      template: {
        metadata: { labels: podLabels, annotations: { "triton-ft.io/config-checksum": checksum } },
        spec: {
          automountServiceAccountToken: false,
          enableServiceLinks: false,
          terminationGracePeriodSeconds: gatewayGracePeriod(input.config),
          securityContext: podSecurityContext(GATEWAY_UID, { fsGroup: true }),
          // The system nodes: the stack's system pool when it has one; no GPU toleration, and never the serving GPU instance type.
          affinity: systemNodeAffinity(input.gpuInstanceTypes, input.systemNodeLabel),
          topologySpreadConstraints: spreadAcrossZonesAndNodes(selector),
          containers: [gatewayContainer(input.image, input.store)],
          volumes: [
            { name: "config", configMap: { name: `${name}-config` } },
            { name: "keys", secret: { secretName: `${name}-keys` } },
            ...(input.store?.mode === "inCluster"
              ? [{ name: "store-ca", configMap: { name: input.store.caConfigMap } }]
              : []),
          ],
        },
      },
    },
  };
}

function gatewayContainer(image: string, store: StorePlan | undefined): IContainer {
  return {
    name: "gateway",
    image,
    env: [
      { name: "GATEWAY_CONFIG", value: `${CONFIG_DIR}/config.json` },
      { name: "GATEWAY_KEYS_FILE", value: `${KEYS_DIR}/keys.json` },
      // The heap stays well inside the memory limit.
      { name: "NODE_OPTIONS", value: "--max-old-space-size=384" },
      ...(store
        ? [
            {
              name: STORE_PASSWORD_ENV,
              valueFrom: { secretKeyRef: { name: store.passwordSecret, key: STORE_PASSWORD_KEY } },
            },
          ]
        : []),
    ],
    ports: [
      { name: "http", containerPort: GATEWAY_PORTS.http, protocol: "TCP" },
      { name: "metrics", containerPort: GATEWAY_PORTS.metrics, protocol: "TCP" },
    ],
    resources: {
      requests: { cpu: "250m", memory: "256Mi" },
      limits: { memory: "512Mi" },
    },
    securityContext: supportContainerSecurityContext(),
    volumeMounts: [
      { name: "config", mountPath: CONFIG_DIR, readOnly: true },
      { name: "keys", mountPath: KEYS_DIR, readOnly: true },
      ...(store?.mode === "inCluster" ? [{ name: "store-ca", mountPath: STORE_CA_DIR, readOnly: true }] : []),
    ],
    startupProbe: {
      httpGet: { path: GATEWAY_LIVE_PATH, port: "http" },
      periodSeconds: 2,
      failureThreshold: 30,
    },
    // Ready only while Triton's ensemble is: the NLB then sends nothing a pod cannot serve.
    readinessProbe: {
      httpGet: { path: GATEWAY_HEALTH_PATH, port: "http" },
      periodSeconds: 5,
      timeoutSeconds: 3,
      failureThreshold: 2,
    },
    livenessProbe: {
      httpGet: { path: GATEWAY_LIVE_PATH, port: "http" },
      periodSeconds: 10,
      timeoutSeconds: 5,
      failureThreshold: 3,
    },
    lifecycle: { preStop: { sleep: { seconds: PRE_STOP_SECONDS } } },
  };
}

function gatewayService({ input, ns, name, selector, podLabels }: GatewayContext): IService {
  const lb = input.triton.loadBalancer;
  const tls = input.tlsCertificateArn !== undefined && input.tlsCertificateArn !== "";
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: {
      name,
      namespace: ns,
      labels: podLabels,
      annotations: {
        ...gatewayAnnotations(lb, tls),
        [`${ANN}additional-resource-tags`]: loadBalancerTagsAnnotation(input.awsTags),
        ...(tls ? { [`${ANN}ssl-cert`]: input.tlsCertificateArn as string } : {}),
      },
    },
    spec: {
      type: "LoadBalancer",
      loadBalancerClass: NLB_LOAD_BALANCER_CLASS,
      selector,
      ports: [{ name: tls ? "https" : "http", port: tls ? 443 : 80, targetPort: "http", protocol: "TCP" }],
      ...(lb.allowedCidrs.length > 0 ? { loadBalancerSourceRanges: [...lb.allowedCidrs] } : {}),
    },
  };
}

function gatewayMetricsService({ ns, name, selector, podLabels }: GatewayContext): IService {
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: {
      name: `${name}-metrics`,
      namespace: ns,
      labels: { ...podLabels, "app.kubernetes.io/component": "gateway-metrics" },
    },
    spec: {
      type: "ClusterIP",
      selector,
      ports: [{ name: "metrics", port: GATEWAY_PORTS.metrics, targetPort: "metrics", protocol: "TCP" }],
    },
  };
}

function gatewayDisruptionBudget({ input, ns, name, selector, podLabels }: GatewayContext): IPodDisruptionBudget {
  return {
    apiVersion: "policy/v1",
    kind: "PodDisruptionBudget",
    metadata: { name, namespace: ns, labels: podLabels },
    spec: {
      // Autoscaled from a floor of 2 or more: one pod at a time, whatever the current count.
      ...(input.autoscaled && input.replicas >= 2
        ? { maxUnavailable: 1 }
        : { minAvailable: Math.max(1, input.replicas - 1) }),
      selector: { matchLabels: selector },
      unhealthyPodEvictionPolicy: "AlwaysAllow",
    },
  };
}

/**
 * Default deny in the namespace; the gateway reaches only the Triton pods of
 * the stack's models (and DNS); each model's Triton admits only the gateway and
 * the scraper. One policy per model: a peer list, not a broader selector, so
 * the gateway reaches exactly these Deployments' pods and no other tritonserver
 * another stack runs in the namespace.
 */
function gatewayNetworkPolicies({ input, ns, name, selector, podLabels }: GatewayContext): INetworkPolicy[] {
  const tritons = input.tritons;
  const scraper = { namespaceSelector: { matchLabels: { [SCRAPER_NAMESPACE_LABEL]: "true" } } };
  const dns: INetworkPolicyEgressRule = {
    to: [
      {
        namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "kube-system" } },
        podSelector: { matchLabels: { "k8s-app": "kube-dns" } },
      },
    ],
    ports: [
      { protocol: "UDP", port: 53 },
      { protocol: "TCP", port: 53 },
    ],
  };
  const policy = (policyName: string, spec: INetworkPolicy["spec"]): INetworkPolicy => ({
    apiVersion: "networking.k8s.io/v1",
    kind: "NetworkPolicy",
    metadata: { name: policyName, namespace: ns, labels: podLabels },
    spec,
  });
  const prefix = name.replace(/-gateway$/, "");
  const tritonPorts: INetworkPolicyPort[] = [
    { protocol: "TCP", port: PORTS.http },
    { protocol: "TCP", port: PORTS.grpc },
  ];
  return [
    policy(`${prefix}-default-deny`, { podSelector: {}, policyTypes: ["Ingress", "Egress"] }),
    policy(`${prefix}-gateway`, {
      podSelector: { matchLabels: selector },
      policyTypes: ["Ingress", "Egress"],
      ingress: [
        // The NLB forwards client addresses (IP targets): the API port is open; the keys guard it.
        { ports: [{ protocol: "TCP", port: GATEWAY_PORTS.http }] },
        { from: [scraper], ports: [{ protocol: "TCP", port: GATEWAY_PORTS.metrics }] },
      ],
      egress: [
        { to: tritons.map((t) => ({ podSelector: { matchLabels: selectorLabels(t) } })), ports: tritonPorts },
        ...storeEgress(input),
        dns,
      ],
    }),
    ...tritons.map((t) =>
      policy(`${workloadName(t)}-triton`, {
        podSelector: { matchLabels: selectorLabels(t) },
        policyTypes: ["Ingress", "Egress"],
        ingress: [
          { from: [{ podSelector: { matchLabels: selector } }], ports: tritonPorts },
          { from: [scraper], ports: [{ protocol: "TCP", port: PORTS.metrics }] },
        ],
        egress: [dns],
      }),
    ),
  ];
}

/** The gateway's way to its store: the in-cluster Valkey's pods, or ElastiCache in the VPC, on the store's port only. */
function storeEgress(input: GatewayRenderInput): INetworkPolicyEgressRule[] {
  const store = input.store;
  if (!store) return [];
  const port = [{ protocol: "TCP" as const, port: STORE_PORT }];
  if (store.mode === "inCluster")
    return [{ to: [{ podSelector: { matchLabels: storeSelector(input.triton) } }], ports: port }];
  return [{ ...(store.egressCidr ? { to: [{ ipBlock: { cidr: store.egressCidr } }] } : {}), ports: port }];
}

/** The gateway's manifests as YAML files for `synth`, after Triton's (render/tritonManifests.ts manifestFiles). */
export function gatewayManifestFiles(m: GatewayManifests): Record<string, string> {
  const yaml = (o: unknown): string => stringify(o, { aliasDuplicateObjects: false });
  return {
    "50-gateway-networkpolicies.yaml": m.networkPolicies.map(yaml).join("---\n"),
    "51-gateway-config.yaml": yaml(m.configMap),
    "52-gateway-keys-secret.yaml": yaml(m.keysSecret),
    "53-gateway-deployment.yaml": yaml(m.deployment),
    "54-gateway-service.yaml": yaml(m.service),
    "55-gateway-metrics-service.yaml": yaml(m.metricsService),
    "56-gateway-poddisruptionbudget.yaml": yaml(m.podDisruptionBudget),
  };
}
