/**
 * The restricted Pod Security profile as every workload this stack renders
 * applies it: non-root, no privilege escalation, all capabilities dropped,
 * seccomp RuntimeDefault, a read-only root filesystem with emptyDir scratch
 * for what the process writes, no service-account token. Pure: renderers
 * spread these objects into their pod templates, and the policy pack
 * (policy/rules/kubernetes.ts) checks the result.
 *
 * Where a scanner flags a deliberate choice, the skip and its reason travel in
 * the manifest (`checkov.io/skip<N>` annotations), so the reason is reviewed
 * with the workload it belongs to.
 */
import type { IEnvVar } from "kubernetes-models/v1/EnvVar";
import type { IPodSecurityContext } from "kubernetes-models/v1/PodSecurityContext";
import type { ISecurityContext } from "kubernetes-models/v1/SecurityContext";
import type { IVolume } from "kubernetes-models/v1/Volume";
import type { IVolumeMount } from "kubernetes-models/v1/VolumeMount";

/**
 * The NGC Triton image's unprivileged `triton-server` user: Triton's own image
 * build asserts uid and gid 1000, and images/*\/Dockerfile end with `USER 1000:1000`.
 */
export const TRITON_SERVER_UID = 1000;

/** The pod's user and group; `fsGroup` also gives that group the pod's volumes (the gateway's config and keys). */
export function podSecurityContext(uid: number, opts: { fsGroup?: boolean } = {}): IPodSecurityContext {
  return {
    runAsNonRoot: true,
    runAsUser: uid,
    runAsGroup: uid,
    ...(opts.fsGroup ? { fsGroup: uid } : {}),
    seccompProfile: { type: "RuntimeDefault" },
  };
}

export function containerSecurityContext(): ISecurityContext {
  return {
    runAsNonRoot: true,
    allowPrivilegeEscalation: false,
    privileged: false,
    readOnlyRootFilesystem: true,
    capabilities: { drop: ["ALL"] },
  };
}

/**
 * The same restricted profile for the containers beside Triton (the gateway,
 * the DCGM exporter), which repeat seccomp at container level. It differs from
 * containerSecurityContext only in what is redundant (privileged defaults to
 * false; the pod already sets seccomp) and in field order; two functions keep
 * each rendered manifest as it is, so merging them is a deliberate manifest change.
 */
export function supportContainerSecurityContext(): ISecurityContext {
  return {
    allowPrivilegeEscalation: false,
    readOnlyRootFilesystem: true,
    runAsNonRoot: true,
    capabilities: { drop: ["ALL"] },
    seccompProfile: { type: "RuntimeDefault" },
  };
}

/** Scratch space over the read-only root: mpirun's session directory and Python's temp files. */
export const SCRATCH_DIR = "/tmp";
export const SCRATCH_SIZE = "1Gi";

export function scratchVolume(): { volume: IVolume; mount: IVolumeMount } {
  return {
    volume: { name: "tmp", emptyDir: { sizeLimit: SCRATCH_SIZE } },
    mount: { name: "tmp", mountPath: SCRATCH_DIR },
  };
}

/**
 * Environment that points every writer at the scratch volume. The NGC image
 * creates triton-server without a home directory, so HOME is the scratch
 * folder too; Hugging Face and CUDA caches would otherwise try the read-only root.
 */
export function scratchEnv(): IEnvVar[] {
  return [
    { name: "CUDA_CACHE_PATH", value: `${SCRATCH_DIR}/cuda-cache` },
    { name: "HF_HOME", value: `${SCRATCH_DIR}/huggingface` },
    { name: "HOME", value: SCRATCH_DIR },
    { name: "PYTHONDONTWRITEBYTECODE", value: "1" },
    { name: "TMPDIR", value: SCRATCH_DIR },
  ];
}

export interface ScannerSkip {
  /** checkov check id. */
  id: string;
  reason: string;
}

/** Deliberate choices of the Triton Deployment that checkov flags, with why. */
export const TRITON_SCANNER_SKIPS: readonly ScannerSkip[] = [
  {
    id: "CKV_K8S_11",
    reason:
      "no CPU limit on purpose: CFS throttling of the tokenizer and postprocessing threads only adds latency; the pod requests its share of the node",
  },
  {
    id: "CKV_K8S_40",
    reason:
      "runs as the NGC image's own unprivileged user triton-server (uid 1000, asserted by Triton's image build), which owns /opt/tritonserver",
  },
];

/** checkov reads `checkov.io/skip<N>: <check id>=<reason>` from a resource's annotations. */
export function scannerSkipAnnotations(skips: readonly ScannerSkip[]): Record<string, string> {
  return Object.fromEntries(skips.map((s, i) => [`checkov.io/skip${i + 1}`, `${s.id}=${s.reason}`]));
}
