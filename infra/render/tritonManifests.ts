/**
 * Kubernetes manifests of the Triton workload as plain objects, one function
 * per manifest: Namespace, Deployment, the NLB Service (HTTP 8000 + gRPC 8001),
 * the in-cluster metrics Service (8002), a PodDisruptionBudget and an optional
 * ServiceMonitor.
 *
 * Pure: no Pulumi. The TritonService component turns these objects into
 * resources (rendering the Deployment with the real image reference) and
 * `synth` writes them as YAML, so what is reviewed offline is what is applied.
 * Every number comes from the plan's workload section (resolve/workload.ts
 * `WorkloadPlan`); this module never computes one.
 */
import type { INamespace } from "kubernetes-models/v1/Namespace";
import type { IService } from "kubernetes-models/v1/Service";
import type { IDeployment } from "kubernetes-models/apps/v1/Deployment";
import type { IDeploymentSpec } from "kubernetes-models/apps/v1/DeploymentSpec";
import type { IPodDisruptionBudget } from "kubernetes-models/policy/v1/PodDisruptionBudget";
import type { IObjectMeta } from "@kubernetes-models/apimachinery/apis/meta/v1/ObjectMeta";
import { stringify } from "yaml";
import { GPU_RESOURCE } from "../catalog/gpus";
import { PROJECT } from "../config";
import { isDigestRef, isSynthRef, notPinnedMessage } from "../imageRef";
import {
  TRITON_SCANNER_SKIPS,
  TRITON_SERVER_UID,
  containerSecurityContext,
  podSecurityContext,
  scannerSkipAnnotations,
  scratchEnv,
  scratchVolume,
} from "./podSecurity";
import { mebibytes, millicores } from "./quantities";
import { gpuTolerations, instanceTypeAffinity, ownNodesToleration, spreadAcrossZonesAndNodes } from "./scheduling";
import { serviceMonitor, type ServiceMonitor } from "./serviceMonitor";

import { PORTS, workloadName } from "../conventions/workload";
import type { WorkloadInput } from "../plan/types";
export const READY_PATH = "/v2/health/ready";
export const LIVE_PATH = "/v2/health/live";
/** The AWS Load Balancer Controller's class: the in-tree controller ignores such Services. */
export const NLB_LOAD_BALANCER_CLASS = "service.k8s.aws/nlb";
/** Namespace label that makes the controller inject readiness gates: a new pod counts as ready only once the NLB sees it healthy. */
export const READINESS_GATE_LABEL = "elbv2.k8s.aws/pod-readiness-gate-inject";

export interface RenderInput extends WorkloadInput {
  /** Server image, by digest (`<repo>@sha256:<hex>`); synth passes its marked `<repo>:synth` placeholder. */
  image: string;
}

export interface TritonManifests {
  namespace: INamespace;
  deployment: IDeployment;
  service: IService;
  metricsService: IService;
  podDisruptionBudget: IPodDisruptionBudget;
  serviceMonitor?: ServiceMonitor;
}

/** Kubernetes label values: at most 63 characters, alphanumeric at both ends. */
function labelValue(v: string): string {
  return v.slice(0, 63).replace(/[^A-Za-z0-9]+$/, "");
}

/** Labels that never change for the life of the Deployment: its selector (immutable). */
export function selectorLabels(w: Pick<WorkloadInput, "modelName" | "stackName">): Record<string, string> {
  return {
    "app.kubernetes.io/name": "tritonserver",
    "app.kubernetes.io/instance": labelValue(`${w.modelName}-${w.stackName}`),
  };
}

/** Kubernetes recommended labels (app.kubernetes.io/*). */
export function recommendedLabels(
  w: Pick<WorkloadInput, "modelName" | "stackName" | "tritonVersion">,
  component = "inference-server",
): Record<string, string> {
  return {
    ...selectorLabels(w),
    "app.kubernetes.io/version": labelValue(w.tritonVersion),
    "app.kubernetes.io/component": component,
    "app.kubernetes.io/part-of": PROJECT,
    "app.kubernetes.io/managed-by": "pulumi",
  };
}

/**
 * Pod Security Admission on the serving namespace: every pod in it (Triton, the gateway, the DCGM
 * exporter) is built to the restricted profile (podSecurity.ts; the exporter reads no host paths),
 * so the API server refuses any pod that is not. `latest`: the profile of the cluster's own version.
 */
export const POD_SECURITY_LABELS = {
  "pod-security.kubernetes.io/enforce": "restricted",
  "pod-security.kubernetes.io/enforce-version": "latest",
} as const;

export function renderNamespace(w: WorkloadInput): INamespace {
  return {
    apiVersion: "v1",
    kind: "Namespace",
    metadata: {
      name: w.namespace,
      labels: { ...recommendedLabels(w), [READINESS_GATE_LABEL]: "enabled", ...POD_SECURITY_LABELS },
    },
  };
}

/** The Deployment's metadata: known before the image, so its name is known at preview. */
export function deploymentMetadata(w: WorkloadInput): IObjectMeta & { name: string; namespace: string } {
  return {
    name: workloadName(w),
    namespace: w.namespace,
    labels: recommendedLabels(w),
    // Scanner findings that are deliberate, each with its reason (docs/security.md "Documented exceptions").
    annotations: scannerSkipAnnotations(TRITON_SCANNER_SKIPS),
  };
}

/** The Deployment's spec, rendered with the server image reference. */
export function deploymentSpec(w: WorkloadInput, image: string): IDeploymentSpec {
  if (!isDigestRef(image) && !isSynthRef(image)) {
    throw new Error(notPinnedMessage("server image", image));
  }
  const plan = w.workload;
  const labels = recommendedLabels(w);
  const selector = selectorLabels(w);
  const gpus = String(plan.tensorParallel);
  const memory = mebibytes(plan.memoryRequestBytes);
  const { launch } = w;
  const scratch = scratchVolume();
  // The launch env wins over the scratch defaults on a name clash.
  const env = new Map(scratchEnv().map((e) => [e.name, e.value ?? ""]));
  for (const [k, v] of Object.entries(launch.env)) env.set(k, v);
  return {
    // With serving.autoscaling the HPA (KEDA) owns spec.replicas: leaving it out keeps
    // server-side apply from resetting the count on every pulumi up.
    ...(w.autoscaling ? {} : { replicas: plan.replicas }),
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
        // Triton never calls the Kubernetes API.
        automountServiceAccountToken: false,
        // Restricted Pod Security profile, as the image's own triton-server user.
        securityContext: podSecurityContext(TRITON_SERVER_UID),
        // A one-model stack's canary: its own nodes' taint too (plan/types.ts nodeTaint).
        tolerations: [...gpuTolerations(), ...(w.nodeTaint ? [ownNodesToleration(w.nodeTaint)] : [])],
        affinity: instanceTypeAffinity(w.instanceType, w.modelNodeLabel),
        topologySpreadConstraints: spreadAcrossZonesAndNodes(selector),
        containers: [
          {
            name: "tritonserver",
            image,
            // Triton waits this long for in-flight requests after SIGTERM; it must fit in the grace period.
            command: [...launch.argv, `--exit-timeout-secs=${plan.drainSeconds}`],
            workingDir: launch.workingDir,
            env: [...env.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => ({ name: k, value: v })),
            // Read-only root: the server writes only to /dev/shm and the /tmp scratch volume.
            securityContext: containerSecurityContext(),
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
            volumeMounts: [{ name: "dshm", mountPath: "/dev/shm" }, scratch.mount],
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
        volumes: [
          { name: "dshm", emptyDir: { medium: "Memory", sizeLimit: mebibytes(plan.shmBytes) } },
          scratch.volume,
        ],
      },
    },
  };
}

export function renderDeployment(w: WorkloadInput, image: string): IDeployment {
  return { apiVersion: "apps/v1", kind: "Deployment", metadata: deploymentMetadata(w), spec: deploymentSpec(w, image) };
}

/**
 * Triton's Service (HTTP 8000 + gRPC 8001): ClusterIP, in-cluster only. The
 * gateway is the only thing behind the load balancer (render/gatewayManifests.ts),
 * and a NetworkPolicy admits only the gateway's pods to these ports.
 */
export function renderService(w: WorkloadInput): IService {
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: { name: workloadName(w), namespace: w.namespace, labels: recommendedLabels(w) },
    spec: {
      type: "ClusterIP",
      selector: selectorLabels(w),
      ports: [
        { name: "http", port: PORTS.http, targetPort: "http", protocol: "TCP" },
        { name: "grpc", port: PORTS.grpc, targetPort: "grpc", protocol: "TCP" },
      ],
    },
  };
}

/** The in-cluster metrics Service (8002). */
export function renderMetricsService(w: WorkloadInput): IService {
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: { name: `${workloadName(w)}-metrics`, namespace: w.namespace, labels: recommendedLabels(w, "metrics") },
    spec: {
      type: "ClusterIP",
      selector: selectorLabels(w),
      ports: [{ name: "metrics", port: PORTS.metrics, targetPort: "metrics", protocol: "TCP" }],
    },
  };
}

export function renderPodDisruptionBudget(w: WorkloadInput): IPodDisruptionBudget {
  return {
    apiVersion: "policy/v1",
    kind: "PodDisruptionBudget",
    metadata: { name: workloadName(w), namespace: w.namespace, labels: recommendedLabels(w) },
    spec: {
      // One pod may go at a time; a single replica is protected (scale up before draining its node).
      // Autoscaled from a floor of 2 or more: one pod at a time, whatever the current count.
      ...(w.autoscaling && w.autoscaling.minReplicas >= 2
        ? { maxUnavailable: 1 }
        : { minAvailable: Math.max(1, w.workload.replicas - 1) }),
      selector: { matchLabels: selectorLabels(w) },
      // A pod still loading or crash-looping serves nothing: do not let it block node drains.
      unhealthyPodEvictionPolicy: "AlwaysAllow",
    },
  };
}

/** The Prometheus Operator ServiceMonitor, when `serving.serviceMonitor` asks for it. */
export function renderServiceMonitor(w: WorkloadInput): ServiceMonitor | undefined {
  if (!w.serviceMonitor) return undefined;
  return serviceMonitor(workloadName(w), w.namespace, recommendedLabels(w, "metrics"), {
    ...selectorLabels(w),
    "app.kubernetes.io/component": "metrics",
  });
}

/** Every manifest, for synth and the tests; the component renders them one by one. */
export function renderManifests(input: RenderInput): TritonManifests {
  const out: TritonManifests = {
    namespace: renderNamespace(input),
    deployment: renderDeployment(input, input.image),
    service: renderService(input),
    metricsService: renderMetricsService(input),
    podDisruptionBudget: renderPodDisruptionBudget(input),
  };
  const monitor = renderServiceMonitor(input);
  if (monitor) out.serviceMonitor = monitor;
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
