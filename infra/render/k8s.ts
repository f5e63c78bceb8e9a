/**
 * Kubernetes manifests of the Triton workload as plain objects: Namespace,
 * Deployment, the NLB Service (HTTP 8000 + gRPC 8001), the in-cluster metrics
 * Service (8002), a PodDisruptionBudget and an optional ServiceMonitor.
 *
 * Pure: no Pulumi. The Pulumi component turns these objects into resources and
 * `synth` writes them as YAML, so what is reviewed offline is what is applied.
 * Every number comes from `planWorkload` (k8sPlan.ts).
 */
import type { INamespace } from "kubernetes-models/v1/Namespace";
import type { IService } from "kubernetes-models/v1/Service";
import type { IDeployment } from "kubernetes-models/apps/v1/Deployment";
import type { IPodDisruptionBudget } from "kubernetes-models/policy/v1/PodDisruptionBudget";
import { stringify } from "yaml";
import { PROJECT } from "../config";
import type { ResolvedStack } from "../validate";
import { NLB_HEALTH_CHECK, mebibytes, millicores, planWorkload, type WorkloadPlan } from "./k8sPlan";

export const PORTS = { http: 8000, grpc: 8001, metrics: 8002 } as const;
export const READY_PATH = "/v2/health/ready";
export const LIVE_PATH = "/v2/health/live";
export const GPU_RESOURCE = "nvidia.com/gpu";
/** The taint the GPU node group carries; only pods that tolerate it land on the expensive nodes. */
export const GPU_TAINT = { key: GPU_RESOURCE, value: "true", effect: "NoSchedule" } as const;
/** Well-known node label every kubelet on EC2 sets: pins pods to the GPU model gpt_gemm was tuned on, in any cluster. */
export const INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type";
/** The AWS Load Balancer Controller's class: the in-tree controller ignores such Services. */
export const NLB_LOAD_BALANCER_CLASS = "service.k8s.aws/nlb";
/** Namespace label that makes the controller inject readiness gates: a new pod counts as ready only once the NLB sees it healthy. */
export const READINESS_GATE_LABEL = "elbv2.k8s.aws/pod-readiness-gate-inject";
const ANN = "service.beta.kubernetes.io/aws-load-balancer-";

/** What the container runs: the launch plan (infra/plan/launch.ts LaunchPlan has this shape). */
export interface ContainerLaunch {
  argv: string[];
  env: Record<string, string>;
  workingDir: string;
}

export interface RenderInput {
  stack: ResolvedStack;
  /** Pulumi stack name: part of the instance label so two stacks in one cluster stay apart. */
  stackName: string;
  /** Server image, by digest (`<repo>@sha256:<hex>`); synth passes a marked `<repo>:synth` reference. */
  image: string;
  launch: ContainerLaunch;
  serviceMonitor: boolean;
}

export interface ServiceMonitor {
  apiVersion: "monitoring.coreos.com/v1";
  kind: "ServiceMonitor";
  metadata: { name: string; namespace: string; labels: Record<string, string> };
  spec: {
    selector: { matchLabels: Record<string, string> };
    namespaceSelector: { matchNames: string[] };
    endpoints: Array<{ port: string; path: string; interval: string; scrapeTimeout: string }>;
  };
}

export interface TritonManifests {
  plan: WorkloadPlan;
  namespace: INamespace;
  deployment: IDeployment;
  service: IService;
  metricsService: IService;
  podDisruptionBudget: IPodDisruptionBudget;
  serviceMonitor?: ServiceMonitor;
}

const DIGEST_REF = /^[^\s@]+@sha256:[0-9a-f]{64}$/;
const SYNTH_REF = /^[^\s@]+:synth$/;

/** Kubernetes label values: at most 63 characters, alphanumeric at both ends. */
function labelValue(v: string): string {
  return v.slice(0, 63).replace(/[^A-Za-z0-9]+$/, "");
}

export function workloadName(s: ResolvedStack): string {
  return `triton-${s.model.name}`;
}

/** Labels that never change for the life of the Deployment: its selector (immutable). */
export function selectorLabels(s: ResolvedStack, stackName: string): Record<string, string> {
  return {
    "app.kubernetes.io/name": "tritonserver",
    "app.kubernetes.io/instance": labelValue(`${s.model.name}-${stackName}`),
  };
}

/** Kubernetes recommended labels (app.kubernetes.io/*). */
export function recommendedLabels(
  s: ResolvedStack,
  stackName: string,
  component = "inference-server",
): Record<string, string> {
  return {
    ...selectorLabels(s, stackName),
    "app.kubernetes.io/version": labelValue(s.config.build.tritonVersion),
    "app.kubernetes.io/component": component,
    "app.kubernetes.io/part-of": PROJECT,
    "app.kubernetes.io/managed-by": "pulumi",
  };
}

/** NLB annotations for the AWS Load Balancer Controller; scheme, health check, idle timeout, draining. */
export function loadBalancerAnnotations(s: ResolvedStack, plan: WorkloadPlan): Record<string, string> {
  const sv = s.config.serving;
  const idle = `tcp.idle_timeout.seconds=${sv.idleTimeoutSeconds}`;
  return {
    [`${ANN}type`]: "external",
    [`${ANN}nlb-target-type`]: "ip",
    [`${ANN}scheme`]: sv.loadBalancerScheme,
    [`${ANN}healthcheck-protocol`]: "http",
    [`${ANN}healthcheck-port`]: String(PORTS.http),
    [`${ANN}healthcheck-path`]: READY_PATH,
    [`${ANN}healthcheck-interval`]: String(NLB_HEALTH_CHECK.intervalSeconds),
    [`${ANN}healthcheck-timeout`]: String(NLB_HEALTH_CHECK.timeoutSeconds),
    [`${ANN}healthcheck-healthy-threshold`]: String(NLB_HEALTH_CHECK.healthyThreshold),
    [`${ANN}healthcheck-unhealthy-threshold`]: String(NLB_HEALTH_CHECK.unhealthyThreshold),
    [`${ANN}listener-attributes.TCP-${PORTS.http}`]: idle,
    [`${ANN}listener-attributes.TCP-${PORTS.grpc}`]: idle,
    // Keep flows to a draining pod as long as it still serves, then reset them rather than leave clients hanging.
    [`${ANN}target-group-attributes`]: `deregistration_delay.timeout_seconds=${plan.deregistrationDelaySeconds},deregistration_delay.connection_termination.enabled=true`,
    // Pods per AZ are uneven with few replicas; cross-zone keeps every healthy pod reachable from every NLB node.
    [`${ANN}attributes`]: "load_balancing.cross_zone.enabled=true",
  };
}

export function renderManifests(input: RenderInput): TritonManifests {
  const { stack: s, stackName, image, launch } = input;
  if (!DIGEST_REF.test(image) && !SYNTH_REF.test(image)) {
    throw new Error(`server image ${image}: must be pinned by digest (<repo>@sha256:<64 hex>)`);
  }
  const sv = s.config.serving;
  if (sv.loadBalancerScheme === "internet-facing" && sv.allowedCidrs.length === 0) {
    throw new Error("an internet-facing load balancer needs serving.allowedCidrs (loadBalancerSourceRanges)");
  }
  const plan = planWorkload(s);
  const name = workloadName(s);
  const ns = sv.namespace;
  const labels = recommendedLabels(s, stackName);
  const selector = selectorLabels(s, stackName);
  const metricsLabels = recommendedLabels(s, stackName, "metrics");

  const namespace: INamespace = {
    apiVersion: "v1",
    kind: "Namespace",
    metadata: { name: ns, labels: { ...labels, [READINESS_GATE_LABEL]: "enabled" } },
  };

  const gpus = String(plan.tensorParallel);
  const memory = mebibytes(plan.memoryRequestBytes);
  const deployment: IDeployment = {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name, namespace: ns, labels },
    spec: {
      replicas: plan.replicas,
      revisionHistoryLimit: 5,
      // The deadline restarts with each pod that becomes available, so one pod's pull + load bounds it.
      progressDeadlineSeconds: plan.podRolloutSeconds,
      selector: { matchLabels: selector },
      // A new pod must load and pass the NLB check before an old one goes: capacity never drops.
      strategy: { type: "RollingUpdate", rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } },
      template: {
        metadata: { labels },
        spec: {
          terminationGracePeriodSeconds: plan.terminationGracePeriodSeconds,
          enableServiceLinks: false,
          tolerations: [{ key: GPU_TAINT.key, operator: "Exists", effect: GPU_TAINT.effect }],
          affinity: {
            nodeAffinity: {
              requiredDuringSchedulingIgnoredDuringExecution: {
                nodeSelectorTerms: [
                  {
                    matchExpressions: [{ key: INSTANCE_TYPE_LABEL, operator: "In", values: [s.servingInstance.type] }],
                  },
                ],
              },
            },
          },
          topologySpreadConstraints: [
            {
              maxSkew: 1,
              topologyKey: "topology.kubernetes.io/zone",
              whenUnsatisfiable: "ScheduleAnyway",
              labelSelector: { matchLabels: selector },
            },
            {
              maxSkew: 1,
              topologyKey: "kubernetes.io/hostname",
              whenUnsatisfiable: "ScheduleAnyway",
              labelSelector: { matchLabels: selector },
            },
          ],
          containers: [
            {
              name: "tritonserver",
              image,
              // Triton waits this long for in-flight requests after SIGTERM; it must fit in the grace period.
              command: [...launch.argv, `--exit-timeout-secs=${plan.drainSeconds}`],
              workingDir: launch.workingDir,
              env: Object.entries(launch.env)
                .sort(([a], [b]) => a.localeCompare(b))
                .map(([k, v]) => ({ name: k, value: v })),
              ports: [
                { name: "http", containerPort: PORTS.http, protocol: "TCP" },
                { name: "grpc", containerPort: PORTS.grpc, protocol: "TCP" },
                { name: "metrics", containerPort: PORTS.metrics, protocol: "TCP" },
              ],
              // CPU has no limit: throttling tokenizer threads only adds latency. Memory
              // limit = request: /dev/shm is charged to it and the pod gets the node's share.
              resources: {
                requests: { cpu: millicores(plan.cpuRequestMillis), memory, [GPU_RESOURCE]: gpus },
                limits: { memory, [GPU_RESOURCE]: gpus },
              },
              volumeMounts: [{ name: "dshm", mountPath: "/dev/shm" }],
              startupProbe: {
                httpGet: { path: READY_PATH, port: "http" },
                periodSeconds: 10,
                timeoutSeconds: 5,
                failureThreshold: Math.ceil(plan.startupBudgetSeconds / 10),
              },
              readinessProbe: {
                httpGet: { path: READY_PATH, port: "http" },
                periodSeconds: 5,
                timeoutSeconds: 5,
                failureThreshold: 3,
              },
              // Lenient: the live endpoint answers from its own thread even under a full batch.
              livenessProbe: {
                httpGet: { path: LIVE_PATH, port: "http" },
                periodSeconds: 15,
                timeoutSeconds: 10,
                failureThreshold: 4,
              },
              // Keep serving while the NLB stops sending new flows; SIGTERM then lets Triton finish in-flight requests.
              lifecycle: { preStop: { exec: { command: ["sleep", String(plan.preStopSeconds)] } } },
            },
          ],
          volumes: [{ name: "dshm", emptyDir: { medium: "Memory", sizeLimit: mebibytes(plan.shmBytes) } }],
        },
      },
    },
  };

  const service: IService = {
    apiVersion: "v1",
    kind: "Service",
    metadata: { name, namespace: ns, labels, annotations: loadBalancerAnnotations(s, plan) },
    spec: {
      type: "LoadBalancer",
      loadBalancerClass: NLB_LOAD_BALANCER_CLASS,
      selector,
      ports: [
        { name: "http", port: PORTS.http, targetPort: "http", protocol: "TCP" },
        { name: "grpc", port: PORTS.grpc, targetPort: "grpc", protocol: "TCP" },
      ],
      ...(sv.allowedCidrs.length > 0 ? { loadBalancerSourceRanges: [...sv.allowedCidrs] } : {}),
    },
  };

  const metricsService: IService = {
    apiVersion: "v1",
    kind: "Service",
    metadata: { name: `${name}-metrics`, namespace: ns, labels: metricsLabels },
    spec: {
      type: "ClusterIP",
      selector,
      ports: [{ name: "metrics", port: PORTS.metrics, targetPort: "metrics", protocol: "TCP" }],
    },
  };

  const podDisruptionBudget: IPodDisruptionBudget = {
    apiVersion: "policy/v1",
    kind: "PodDisruptionBudget",
    metadata: { name, namespace: ns, labels },
    spec: {
      // One pod may go at a time; a single replica is protected (scale up before draining its node).
      minAvailable: Math.max(1, plan.replicas - 1),
      selector: { matchLabels: selector },
      // A pod still loading or crash-looping serves nothing: do not let it block node drains.
      unhealthyPodEvictionPolicy: "AlwaysAllow",
    },
  };

  const out: TritonManifests = { plan, namespace, deployment, service, metricsService, podDisruptionBudget };
  if (input.serviceMonitor) {
    out.serviceMonitor = {
      apiVersion: "monitoring.coreos.com/v1",
      kind: "ServiceMonitor",
      metadata: { name, namespace: ns, labels: metricsLabels },
      spec: {
        selector: { matchLabels: { ...selector, "app.kubernetes.io/component": "metrics" } },
        namespaceSelector: { matchNames: [ns] },
        endpoints: [{ port: "metrics", path: "/metrics", interval: "15s", scrapeTimeout: "10s" }],
      },
    };
  }
  return out;
}

/** Shared label objects would otherwise come out as YAML anchors, which reviewers and some tools read poorly. */
const YAML_OPTIONS = { aliasDuplicateObjects: false } as const;

/** The manifests as YAML files, in apply order, for `synth` (`<out>/k8s/`). */
export function manifestFiles(m: TritonManifests): Record<string, string> {
  const files: Record<string, string> = {
    "00-namespace.yaml": stringify(m.namespace, YAML_OPTIONS),
    "10-deployment.yaml": stringify(m.deployment, YAML_OPTIONS),
    "20-service.yaml": stringify(m.service, YAML_OPTIONS),
    "21-metrics-service.yaml": stringify(m.metricsService, YAML_OPTIONS),
    "30-poddisruptionbudget.yaml": stringify(m.podDisruptionBudget, YAML_OPTIONS),
  };
  if (m.serviceMonitor) files["40-servicemonitor.yaml"] = stringify(m.serviceMonitor, YAML_OPTIONS);
  return files;
}
