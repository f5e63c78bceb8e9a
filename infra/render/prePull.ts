/**
 * The triton_with_ft pre-pull: a DaemonSet on the model's GPU nodes whose one
 * container is triton_with_ft itself, asleep, so each node pulls the image's
 * layers as soon as its digest is known, while gemm and bake still run on the
 * builder. The server image is triton_with_ft plus the bake's own layers
 * (images/server), so the Triton pods then pull only those.
 *
 * Only for a model whose nodes come with the cluster (no serving.autoscaling):
 * a DaemonSet's pod launches no Karpenter node, so on a NodePool it would pull
 * nothing before the server's own pod (resolve/workload.ts prePullOnNodes). Once the server runs it
 * is harmless: 1m CPU and 16 MiB, and it keeps the shared layers referenced, so
 * the kubelet's image garbage collection leaves them for the next rollout.
 *
 * Pure.
 */
import type { IDaemonSet } from "kubernetes-models/apps/v1/DaemonSet";
import type { IDaemonSetSpec } from "kubernetes-models/apps/v1/DaemonSetSpec";
import type { IObjectMeta } from "@kubernetes-models/apimachinery/apis/meta/v1/ObjectMeta";
import { isDigestRef, isSynthRef, notPinnedMessage } from "../imageRef";
import { PRE_PULL_REQUESTS, workloadName } from "../conventions/workload";
import type { WorkloadInput } from "../plan/types";
import {
  type ScannerSkip,
  TRITON_SERVER_UID,
  TRITON_SCANNER_SKIPS,
  containerSecurityContext,
  podSecurityContext,
  scannerSkipAnnotations,
} from "./podSecurity";
import { gpuTolerations, instanceTypeAffinity, ownNodesToleration } from "./scheduling";
import { recommendedLabels } from "./tritonManifests";

/** Its file among the model's manifests (synth's `k8s/`), after the Deployment's. */
export const PRE_PULL_FILE = "11-prepull-daemonset.yaml";

/** The component label of the pre-pull's objects (never the server's: its Service must not select them). */
export const PRE_PULL_COMPONENT = "image-prepull";

export function prePullName(w: Pick<WorkloadInput, "modelName">): string {
  return `${workloadName(w)}-prepull`;
}

/** Labels of the pre-pull's pods; its own name label, so the server's selector (name + instance) never matches them. */
function prePullLabels(w: WorkloadInput): { labels: Record<string, string>; selector: Record<string, string> } {
  const base = recommendedLabels(w, PRE_PULL_COMPONENT);
  const selector = {
    "app.kubernetes.io/name": "tritonserver-prepull",
    "app.kubernetes.io/instance": base["app.kubernetes.io/instance"] ?? "",
  };
  return { labels: { ...base, ...selector }, selector };
}

/**
 * Deliberate choices checkov flags on the pre-pull, with why: it runs as the
 * server's own user (the Triton Deployment's reason), and its one container
 * only sleeps, so it serves nothing a probe could check and a CPU limit would
 * only throttle its start.
 */
export const PRE_PULL_SCANNER_SKIPS: readonly ScannerSkip[] = [
  ...TRITON_SCANNER_SKIPS.filter((s) => s.id === "CKV_K8S_40"),
  {
    id: "CKV_K8S_8",
    reason:
      "no liveness probe: the container only sleeps so that the node keeps triton_with_ft's layers; it serves nothing",
  },
  {
    id: "CKV_K8S_9",
    reason:
      "no readiness probe: nothing selects the pre-pull's pods and they serve nothing; a pod is ready once its image is pulled",
  },
  {
    id: "CKV_K8S_11",
    reason:
      "no CPU limit: the container only sleeps (1m requested and counted on the node); a limit would only throttle its start",
  },
];

/** The DaemonSet's metadata: known before the image, so its name is known at preview. */
export function prePullMetadata(w: WorkloadInput): IObjectMeta & { name: string; namespace: string } {
  return {
    name: prePullName(w),
    namespace: w.namespace,
    labels: prePullLabels(w).labels,
    annotations: scannerSkipAnnotations(PRE_PULL_SCANNER_SKIPS),
  };
}

export function prePullSpec(w: WorkloadInput, tritonWithFtImage: string): IDaemonSetSpec {
  if (!isDigestRef(tritonWithFtImage) && !isSynthRef(tritonWithFtImage))
    throw new Error(notPinnedMessage("triton_with_ft image (pre-pull)", tritonWithFtImage));
  const { labels, selector } = prePullLabels(w);
  return {
    selector: { matchLabels: selector },
    // A new triton_with_ft digest: every node pulls it at once (the pods serve nothing, so none need stay
    // up), and the update takes one pull, as the create does, not one per node.
    updateStrategy: { type: "RollingUpdate", rollingUpdate: { maxUnavailable: "100%" } },
    template: {
      metadata: { labels },
      spec: {
        terminationGracePeriodSeconds: 0,
        enableServiceLinks: false,
        automountServiceAccountToken: false,
        securityContext: podSecurityContext(TRITON_SERVER_UID),
        // The server's own nodes: the same tolerations and node affinity as its Deployment.
        tolerations: [...gpuTolerations(), ...(w.nodeTaint ? [ownNodesToleration(w.nodeTaint)] : [])],
        affinity: instanceTypeAffinity(w.instanceType, w.modelNodeLabel),
        containers: [
          {
            name: "prepull",
            image: tritonWithFtImage,
            // The image's Ubuntu coreutils: the pull is the point, the container only holds it.
            command: ["sleep", "infinity"],
            securityContext: containerSecurityContext(),
            // Counted on the node by the serving pods' budget and the fit rule (resolve/workload.ts nodeDaemonSetRequests).
            resources: {
              requests: {
                cpu: `${PRE_PULL_REQUESTS.cpuMillis}m`,
                memory: `${PRE_PULL_REQUESTS.memoryBytes / 1024 ** 2}Mi`,
              },
              limits: { memory: `${PRE_PULL_REQUESTS.memoryBytes / 1024 ** 2}Mi` },
            },
          },
        ],
      },
    },
  };
}

export function renderPrePull(w: WorkloadInput, tritonWithFtImage: string): IDaemonSet {
  return {
    apiVersion: "apps/v1",
    kind: "DaemonSet",
    metadata: prePullMetadata(w),
    spec: prePullSpec(w, tritonWithFtImage),
  };
}
