/**
 * The gateway image's Node base, as data next to its pin: images/gateway/Dockerfile's
 * `ARG NODE_IMAGE` must name exactly this tag and digest (test/unit/supportCatalog.test.ts).
 * The support check reads the Node major from here, so the Dockerfile stays the only
 * thing the image build reads and this stays the only thing the program reads.
 */

export interface NodeBaseImage {
  /** Node release the image carries. */
  version: string;
  /** Debian flavour of the official image. */
  variant: string;
  /** Multi-arch manifest-list (image index) digest: one pin for amd64 and arm64. */
  digest: string;
  /** Where the digest was checked: independent public pins of the same tag agree. */
  source: string;
  checked: string;
}

export const GATEWAY_NODE_IMAGE: NodeBaseImage = {
  version: "26.11.1",
  variant: "bookworm-slim",
  digest: "sha256:86f07bc9c5dce4578cf37e5a418b7bfc7f817cda25cde66e2b66e95ed86c4567",
  source:
    'public code search for "node:26.11.1-bookworm-slim@sha256:86f07bc9": the same digest pinned by several ' +
    "unrelated repositories (Renovate-managed Dockerfiles, a Compose ARG, a Makefile); the docker-library/official-images " +
    "mirror reachable here stops at 26.7.0 (2026-08-21). 26.12.1 (security, 2026-10-21) and 26.13.0 (LTS 'Lithium', " +
    "2026-10-28, https://github.com/nodejs/node/releases/tag/v26.13.0) exist, but no public pin of their digests was found",
  checked: "2026-11-25",
};

/** `node:<version>-<variant>@<digest>`, the value of the Dockerfile's ARG NODE_IMAGE. */
export function nodeImageRef(i: NodeBaseImage = GATEWAY_NODE_IMAGE): string {
  return `node:${i.version}-${i.variant}@${i.digest}`;
}

/** A third-party image the stack runs, pinned by digest, with where the digest was checked. */
export interface ImagePin {
  /** Registry and repository. */
  repository: string;
  /** The tag the digest stands for. */
  tag: string;
  /** Multi-arch manifest-list (image index) digest. */
  digest: string;
  source: string;
  checked: string;
  /** The image's own unprivileged user and group (the pod runs as them). */
  uid: number;
  gid: number;
}

/**
 * The in-cluster shared store of the gateway (serving.store.mode inCluster): Valkey
 * 9.1.2 on Alpine, Valkey's official image. Its Dockerfile creates the user with
 * `addgroup -S -g 1000 valkey; adduser -S -G valkey -u 999 valkey` and its entrypoint
 * only drops privileges when started as root, so running it as 999:1000 from the start
 * is what the restricted profile needs.
 */
export const VALKEY_IMAGE: ImagePin = {
  repository: "docker.io/valkey/valkey",
  tag: "9.1.2-alpine",
  digest: "sha256:48332870af354a799964c0012ae1194a0bf2bf894eb508f945810596dc2d8d11",
  source:
    'public code search for "valkey/valkey@sha256:48332870": the same digest pinned by two unrelated repositories, ' +
    "one a Quadlet config whose updater comment lists its tags (9-alpine, 9.1.2-alpine, 9.1.2-alpine3.24), the other a " +
    "benchmark write-up naming it 9.1.2-alpine; the uid/gid from public notes quoting the image's Dockerfile " +
    "(adduser -S -G valkey -u 999, addgroup -S -g 1000) and its /etc/passwd (valkey:x:999:1000)",
  checked: "2026-11-25",
  uid: 999,
  gid: 1000,
};

/** `<repository>@<digest>`: by digest alone (the pack's DIGEST_REF shape); the tag it stands for is `tag`. */
export function pinnedRef(i: ImagePin): string {
  return `${i.repository}@${i.digest}`;
}

/**
 * The GPU metrics exporter on every GPU node (render/observability.ts): dcgm-exporter release
 * 4.5.3-4.8.2 (DCGM 4.5.3, chart 4.8.2; NVIDIA/dcgm-exporter tag of 2026-05-06). Distroless
 * flavour: no shell, runs as the image's own non-root user (uid 1000, the non-profiling mode
 * NVIDIA's chart documents), whose group the pod runs as too.
 */
export const DCGM_EXPORTER_IMAGE: ImagePin = {
  repository: "nvcr.io/nvidia/k8s/dcgm-exporter",
  tag: "4.5.3-4.8.2-distroless",
  digest: "sha256:60d3b00ac80b4ae77f94dae2f943685605585ad9e92fdccda3154d009ae317cc",
  source:
    "NVIDIA's own pin of the tag: NVIDIA/gpu-operator commit d927f86e8c6868dc690abbee790dc018a87e2c83 " +
    '("Update nvcr.io/nvidia/k8s/dcgm-exporter Docker tag to v4.5.3-4.8.2-distroless", 2026-05-05), ' +
    "bundle/manifests/gpu-operator-certified.clusterserviceversion.yaml relatedImages; independent public pins of " +
    'the same tag agree (a Terraform output naming it the "multi-platform" image, Dockerfile ARGs). A different ' +
    "digest seen in private mirror lists is a registry copy, not NVIDIA's index",
  checked: "2026-11-25",
  uid: 1000,
  gid: 1000,
};

/**
 * The base of a vLLM model's server image (issue 37; scripts/remote/bake-vllm.sh, images/vllm/Dockerfile):
 * NVIDIA's Triton with the vLLM backend, 26.07 (Triton 2.71.0, NVIDIA's vLLM 0.24.0, Python 3.12,
 * CUDA 13). Its vLLM runs the project's own model (images/vllm/model_repository/ensemble/1/model.py,
 * a Python-backend model), not the image's vllm_backend. The image's unprivileged user is Triton's
 * triton-server (uid/gid 1000, as for the FT server image).
 */
export const TRITON_VLLM_IMAGE: ImagePin = {
  repository: "nvcr.io/nvidia/tritonserver",
  tag: "26.07-vllm-python-py3",
  digest: "sha256:31e20bfbc65055d6b85553a00d45342a62c506874aa996c11ae53650151f05b1",
  source:
    'public code search for "tritonserver:26.07-vllm-python-py3@sha256": one public repository pins this digest, in ' +
    "its runtime-migration note (English and Russian copies), with the release's component matrix (Triton 2.71.0, " +
    "vLLM 0.24.0, Transformers 5.6.1, Python 3.12). Only that one source was found: not cross-checked against NGC's " +
    "registry from here; the first bake pulls it by this digest (a wrong pin fails there, never a different image)",
  checked: "2026-11-29",
  uid: 1000,
  gid: 1000,
};
