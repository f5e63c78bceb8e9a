/**
 * Every rate a time figure is derived from, in one place: the remote build
 * steps' budgets (plan/budgets.ts), the workload's pull, load and probe
 * numbers (resolve/workload.ts), the autoscaler's cold start and lead time
 * (resolve/scaling.ts) and the cost module's minutes-to-serve (cost/time.ts) all
 * read these constants, so a budget, a scaling window and a preview's
 * "first deploy N min" can never disagree about how fast a step is.
 *
 * Each rate is one of two kinds, and `TIMINGS` below lists which:
 * - measured: the real FT converters run at full scale on 16 vCPUs with the
 *   exact architectures (random weights); the upstream facts sheet,
 *   "Measured: the conversion at full scale";
 * - assumed: not measured here; the entry says where the figure comes from and
 *   which way it errs.
 *
 * Pure: plain numbers.
 */
import type { GpuModel } from "./gpus";

const MiB = 1024 ** 2;

/** The four conversions measured at full scale on 16 vCPUs (seconds; peak RAM in GiB). */
export const MEASURED = {
  vcpus: 16,
  /** KoGPT 6B (GPT-J layout, vocab 64512) through the Hugging Face GPT-J converter: 6.6 min in all. */
  kogpt: {
    family: "gptj",
    parameters: 6_166_502_400,
    consolidateSeconds: 13.5,
    converterSeconds: 310.6,
    converterPeakRamGiB: 14.2,
    fp16Seconds: 71.4,
    fp16PeakRamGiB: 3.1,
    verifySeconds: 0.3,
  },
  /** h2oGPT 6.9B (GPT-NeoX) through the GPT-NeoX converter, `-p 4`, fp16 out: 5.3 min in all. */
  h2ogpt: {
    family: "gptneox",
    parameters: 6_857_302_016,
    consolidateSeconds: 11.2,
    /** `-p 4`, fp16 out; peak host RAM 28.1 GiB (the workers share pages) against 35.9 GiB predicted by sizing.ts. */
    converterSeconds: 308.0,
    converterPeakRamGiB: 28.1,
  },
  /** GPT-J 6B from the mesh-transformer-jax slim checkpoint through FT's JAX converter, TP 4: 7.9 min in all. */
  gptjJax: {
    family: "gptj",
    parameters: 6_050_882_784,
    converterSeconds: 389.8,
    converterPeakRamGiB: 19.1,
    fp16Seconds: 80.9,
    fp16PeakRamGiB: 2.4,
  },
  /** CodeGen-6B-mono re-laid out as GPT-J, then the GPT-J converter (`--n-layers 33`), TP 1: 7.8 min in all. */
  codegen6b: {
    family: "codegen",
    parameters: 7_064_213_504,
    relayoutSeconds: 18.8,
    relayoutPeakRamGiB: 29.2,
    converterSeconds: 361.0,
    converterPeakRamGiB: 15.2,
    fp16Seconds: 88.8,
  },
  /** Weights after the fp16 rewrite (every run wrote 2.000 bytes per parameter). */
  fp16BytesPerParameter: 2.0,
} as const;

const perParam = (seconds: number, parameters: number) => seconds / parameters;

/**
 * Seconds per parameter at MEASURED.vcpus. Each phase takes the slowest run of
 * the script that performs it, so a model of another size is estimated on
 * the safe side of what was seen; GPT-2 (never measured) takes the GPT-J
 * converter's rate, the closest script.
 */
export const RATES = {
  consolidate: Math.max(
    perParam(MEASURED.kogpt.consolidateSeconds, MEASURED.kogpt.parameters),
    perParam(MEASURED.h2ogpt.consolidateSeconds, MEASURED.h2ogpt.parameters),
  ),
  relayout: perParam(MEASURED.codegen6b.relayoutSeconds, MEASURED.codegen6b.parameters),
  /** FT's Hugging Face GPT-J converter (KoGPT, and CodeGen after its re-layout); GPT-2's converter is assumed alike. */
  converterGptj: Math.max(
    perParam(MEASURED.kogpt.converterSeconds, MEASURED.kogpt.parameters),
    perParam(MEASURED.codegen6b.converterSeconds, MEASURED.codegen6b.parameters),
  ),
  converterGptneox: perParam(MEASURED.h2ogpt.converterSeconds, MEASURED.h2ogpt.parameters),
  /** FT's converter for the mesh-transformer-jax slim checkpoint. */
  converterJax: perParam(MEASURED.gptjJax.converterSeconds, MEASURED.gptjJax.parameters),
  /** The fp16 rewrite is one script (scripts/convert/to_fp16.py) whatever the converter before it. */
  fp16: Math.max(
    perParam(MEASURED.kogpt.fp16Seconds, MEASURED.kogpt.parameters),
    perParam(MEASURED.gptjJax.fp16Seconds, MEASURED.gptjJax.parameters),
    perParam(MEASURED.codegen6b.fp16Seconds, MEASURED.codegen6b.parameters),
  ),
  verify: perParam(MEASURED.kogpt.verifySeconds, MEASURED.kogpt.parameters),
} as const;

/** Assumed transfer rates (bytes/s) and fixed costs (s) of the build steps; not measured here. */
export const ASSUMED = {
  /** docker pull from ECR in the same region, layers extracted (one rate for the builder and the nodes). */
  ecrPullBytesPerSecond: 50 * MiB,
  /** docker push to ECR in the same region. */
  ecrPushBytesPerSecond: 50 * MiB,
  /** Hugging Face Hub (or an archive URL) to EC2. */
  downloadBytesPerSecond: 50e6,
  /** Local disk copies (build context, EBS gp3 at 500 MiB/s, half of it). */
  diskBytesPerSecond: 250 * MiB,
  /** Starting one container (each conversion phase runs in its own). */
  containerStartSeconds: 15,
  /** fetch's tooling: a venv with huggingface_hub, the Hub's API calls, the config check. */
  fetchSetupSeconds: 5 * 60,
  /** cloud-init, driver and Docker checks, git-lfs install, ECR login. */
  hostReadySeconds: 10 * 60,
  /** The Triton base image pull and the pip installs of the recipe. */
  tritonBaseSeconds: 15 * 60,
  /** gpt_gemm sweep: seconds per (batch × beam × input length) unit, plus a fixed part. */
  gemmSecondsPerUnit: 60 / 1024,
  gemmFixedSeconds: 5 * 60,
  /** The gateway image: a Node base image, npm ci, a small push; whatever the model. */
  gatewayImageSeconds: 8 * 60,
  /** RunInstances to a running builder that answers SSH (the DLAMI's own first boot; host-ready covers cloud-init after it). */
  builderLaunchSeconds: 2 * 60,
  /** An EKS control plane from CreateCluster to ACTIVE: AWS's own figure, "averages 15 minutes" (aws/containers-roadmap#1227). */
  eksControlPlaneSeconds: 15 * 60,
} as const;

/**
 * What a vLLM model's build and start-up take (issue 37). Assumed, not measured here
 * (no GPU run yet): the NGC Triton-with-vLLM image's compressed size (the 26.x
 * `-vllm-python-py3` images list around 10 to 12 GB compressed on NGC; rounded up), and
 * vLLM's start-up before the model is ready: engine and KV-cache profiling plus CUDA-graph
 * capture, which vLLM's own logs put at tens of seconds for small models; one minute plus
 * the weights read at the disk rate is taken here.
 */
export const VLLM_ASSUMED = {
  /** nvcr.io/nvidia/tritonserver:<yy.mm>-vllm-python-py3, compressed, pulled and (as the server image's base) pushed. */
  baseImageBytes: 12 * 1024 * MiB,
  /** From the container's start to a ready model, beside reading the weights: profiling, KV-cache allocation, CUDA graphs. */
  startupSeconds: 60,
} as const;

/**
 * The FT + backend compile (images/triton_with_ft), on a CPU compile host
 * (catalog/compileHosts.ts). Assumed, not measured here: 16 core-hours for one
 * CUDA arch, the figure the estimate has always used, split by how nvcc works:
 * the host-side C++ and the links run once, while every CUDA kernel is
 * compiled again for each `-gencode` arch of `-DSM`. The split (a quarter
 * fixed, three quarters per arch) is the assumption; it errs towards a longer
 * compile for several archs.
 */
export const COMPILE = {
  /** Host code, CMake configure, links: once whatever the SM list. */
  fixedCoreSeconds: 4 * 3600,
  /** Device code: once per CUDA arch in the SM list. */
  perSmCoreSeconds: 12 * 3600,
  /** Share of the host's vCPUs the build keeps busy: the configure, the FT clone and the final links are serial. */
  parallelEfficiency: 0.7,
  /**
   * The plan picks the smallest compile host whose compile fits this, else the
   * largest (catalog/compileHosts.ts). A policy, not a rate: the compile is on
   * every first deploy's critical path, while the host runs for well under an
   * hour per build. 10 minutes puts every SM list on the largest c7i (one SM:
   * 7.1 min, $5.62 a build in us-east-1; 29 min and $2.17 on the c7i.12xlarge
   * of a 30-minute target), and keeps the compile growing with the SM count: a
   * target a smaller host meets for one SM (15 min: c7i.24xlarge, 14.3 min)
   * would give two SMs the larger host and a shorter compile (12.5 min).
   */
  targetSeconds: 10 * 60,
  /** Compile host's first boot to ready: cloud-init and the Docker check (no GPU, no git-lfs install). */
  hostReadySeconds: 5 * 60,
} as const;

/**
 * triton_with_ft's recipe layers: every layer of images/triton_with_ft/Dockerfile
 * before the compile (the NGC base, the apt layer, the pip layer of
 * requirements.lock), which the twf-layers steps push and pull while the
 * compile runs (plan/budgets.ts RECIPE_LAYERS). Their compressed size, from:
 * - the NGC base `tritonserver:<yy.mm>-py3`: about 16 GB unpacked (23.01-py3,
 *   triton-inference-server/server#5383; 24.06-py3 15.5 GB, #7474, where a
 *   maintainer calls that size expected) times 0.51, the lowest gzip-6 ratio
 *   measured on the lock's CUDA and torch wheels unpacked (torch 0.514; the
 *   others 0.63 to 0.75, 0.611 over all seven), since the base is mostly the
 *   same kind of CUDA and framework libraries: 8.16e9 bytes, assumed;
 * - the pip layer: the locked wheels of images/triton_with_ft/requirements.lock
 *   total 3.00 GiB (their sizes from PyPI's simple JSON API for the exact
 *   sha256s of the lock, 2026-11-29), and a layer of installed wheels gzips to
 *   the wheels' own size: measured 2026-11-29 on the seven largest locked
 *   wheels (torch 2.5.1, cudnn, cublas, cufft, cusparse, nccl, cusolver:
 *   `pip download` of the exact wheels, each unzipped, `tar | gzip -6` of the
 *   unpacked tree as a Docker layer is gzipped), 2,670,142,209 wheel bytes,
 *   4,361,467,446 unpacked, 2,666,904,104 gzipped;
 * - the apt layer (git, git-lfs, python3-dev, rapidjson-dev, zlib, zstd): a few
 *   hundred MB at most, left out, so the estimate errs towards a smaller saving.
 */
export const TRITON_WITH_FT_RECIPE = {
  /** NGC tritonserver:<yy.mm>-py3, unpacked (bytes; assumed from the two issues above). */
  ngcBaseUnpackedBytes: 16e9,
  /** Compressed over unpacked for the NGC base: assumed, the lowest gzip-6 ratio measured on the locked wheels (torch). */
  ngcBaseCompressionRatio: 0.51,
  /** The locked wheels of requirements.lock (bytes; PyPI's listed sizes, 2026-11-29). */
  pipWheelsBytes: 3.0 * 1024 ** 3,
  /** The pip layer gzipped over the wheels' size (measured: the seven largest locked wheels, 0.999). */
  pipLayerToWheelsRatio: 2_666_904_104 / 2_670_142_209,
} as const;

/**
 * Image pull rate from ECR to a node in the same region, download plus gunzip
 * plus extraction (containerd extracts layers one at a time onto a gp3 volume
 * with a 125 MiB/s baseline). The builder's rate: conservative, so budgets
 * are not tripped by a slow pull.
 */
export const PULL_BYTES_PER_SECOND = ASSUMED.ecrPullBytesPerSecond;
/** gp3 baseline throughput: FT reads every weight file from the image layer once at load. */
export const WEIGHT_READ_BYTES_PER_SECOND = 125 * MiB;
/** Fixed part of a start: tritonserver and mpirun, Python stubs importing tokenizers, CUDA context, NCCL init. */
export const SERVER_FIXED_START_SECONDS = 60;

/**
 * Expected pull rate with nodeadm's FastImagePull (SOCI snapshotter in parallel
 * pull-and-unpack mode: 16 MiB chunks, up to 20 concurrent downloads and 12
 * unpacks per image, unpigz) onto a 1000 MiB/s gp3 root volume. An estimate:
 * three times the serial rate (PULL_BYTES_PER_SECOND). Budgets and the
 * scale-down window keep the serial rate, so a slow pull never trips a probe
 * or unloads a model early.
 */
export const FAST_PULL_BYTES_PER_SECOND = 3 * PULL_BYTES_PER_SECOND;

/**
 * EC2 launch to a Ready node whose device plugin advertises nvidia.com/gpu:
 * instance launch, AL2023 boot and nodeadm join, NVIDIA driver load. Estimates
 * (not measured here): the 8-GPU p4 hosts initialise the NVSwitch fabric manager
 * and take longer than a g5. The PCIe Ada parts (g6, g6e) boot like a g5; the
 * Hopper hosts (p5, p5e, p5en: NVSwitch and many EFA interfaces on the 8-GPU
 * sizes) are budgeted like a p4, the single-GPU p5.4xlarge included, as the
 * longer estimate is the safe one for a budget.
 */
export const NODE_BOOT_SECONDS: Record<GpuModel, number> = {
  A10G: 180,
  "A100-40GB": 420,
  "A100-80GB": 420,
  L4: 180,
  L40S: 180,
  H100: 420,
  H200: 420,
};

/** Time for a new IP target to be registered with the NLB and pass its first checks (observed 1-3 min). */
export const NLB_TARGET_REGISTRATION_SECONDS = 180;
/** Time between the controller deregistering a target and the NLB no longer sending it new flows. */
export const NLB_DEREGISTRATION_PROPAGATION_SECONDS = 30;
/** Time for the controller to create an NLB and for its DNS name to resolve. */
export const NLB_PROVISION_SECONDS = 600;

/**
 * Share of peak memory bandwidth a decode step reaches. Low on purpose: drains
 * (resolve/workload.ts) must not be cut short, and the cost estimate's
 * throughput (cost/tokens.ts) is then a floor. DECODE_BANDWIDTH_EFFICIENCY_HIGH
 * is the other end of the range the estimate reports.
 */
export const DECODE_BANDWIDTH_EFFICIENCY = 0.5;
/**
 * The optimistic end: a bandwidth-bound GEMV kernel on a single GPU seldom
 * streams faster than about 80 % of the data-sheet peak (HBM and GDDR refresh,
 * page turns, kernel launch gaps between layers). Assumed, not measured here.
 */
export const DECODE_BANDWIDTH_EFFICIENCY_HIGH = 0.8;

/**
 * vLLM's decode efficiency range (issue 37): the share of peak memory bandwidth its
 * decode step reaches. Assumed, not measured here (no GPU run yet). The high end is
 * FT's (the same bandwidth-bound GEMV ceiling: Recasens et al., "Mind the Memory Gap",
 * arXiv 2503.08311, 2025, find vLLM's large-batch decode DRAM-bandwidth-bound); the
 * low end is below FT's, for PagedAttention's block-table gather and the Python
 * scheduler's gap between steps. A GPU run must confirm both.
 */
export const VLLM_DECODE_BANDWIDTH_EFFICIENCY = { low: 0.4, high: DECODE_BANDWIDTH_EFFICIENCY_HIGH } as const;

/**
 * A decode step's floor per transformer layer: FT launches about ten kernels
 * per layer and step, at a few microseconds each, whatever the bytes. Only
 * very small models (a few hundred MB of weights) reach it; above that the
 * step is bandwidth-bound. Assumed, not measured here.
 */
export const DECODE_STEP_FLOOR_SECONDS_PER_LAYER = 50e-6;

/** One row of the provenance table the docs and cost.json show. */
export interface TimingEntry {
  name: string;
  value: number;
  unit: string;
  kind: "measured" | "assumed";
  basis: string;
}

/** Every rate above with its kind, for docs/cost.md and cost.json (`rates`). */
export const TIMINGS: readonly TimingEntry[] = [
  {
    name: "converter (GPT-J, Hugging Face)",
    value: RATES.converterGptj * 1e9,
    unit: "s per 1e9 parameters at 16 vCPUs",
    kind: "measured",
    basis: "KoGPT 310.6 s / 6.17 B and CodeGen-6B 361.0 s / 7.06 B; the slower",
  },
  {
    name: "converter (GPT-NeoX)",
    value: RATES.converterGptneox * 1e9,
    unit: "s per 1e9 parameters at 16 vCPUs",
    kind: "measured",
    basis: "h2oGPT 6.9B 308.0 s / 6.86 B",
  },
  {
    name: "converter (GPT-J JAX slim)",
    value: RATES.converterJax * 1e9,
    unit: "s per 1e9 parameters at 16 vCPUs",
    kind: "measured",
    basis: "GPT-J 6B TP 4 389.8 s / 6.05 B",
  },
  {
    name: "fp16 rewrite",
    value: RATES.fp16 * 1e9,
    unit: "s per 1e9 parameters at 16 vCPUs",
    kind: "measured",
    basis: "KoGPT 71.4 s, GPT-J JAX 80.9 s, CodeGen-6B 88.8 s; the slowest per parameter",
  },
  {
    name: "consolidate",
    value: RATES.consolidate * 1e9,
    unit: "s per 1e9 parameters at 16 vCPUs",
    kind: "measured",
    basis: "KoGPT 13.5 s, h2oGPT 11.2 s; the slower per parameter",
  },
  {
    name: "CodeGen re-layout",
    value: RATES.relayout * 1e9,
    unit: "s per 1e9 parameters at 16 vCPUs",
    kind: "measured",
    basis: "CodeGen-6B 18.8 s / 7.06 B",
  },
  {
    name: "ECR pull and push",
    value: ASSUMED.ecrPullBytesPerSecond / MiB,
    unit: "MiB/s",
    kind: "assumed",
    basis: "in-region ECR with serial layer extraction onto gp3 (125 MiB/s baseline); conservative",
  },
  {
    name: "FastImagePull",
    value: FAST_PULL_BYTES_PER_SECOND / MiB,
    unit: "MiB/s",
    kind: "assumed",
    basis: "3× the serial rate: SOCI parallel pull and unpack onto a 1000 MiB/s gp3 volume",
  },
  {
    name: "Hub download",
    value: ASSUMED.downloadBytesPerSecond / 1e6,
    unit: "MB/s",
    kind: "assumed",
    basis: "Hugging Face Hub (CDN) to EC2; varies with the Hub's load",
  },
  {
    name: "weight read at load",
    value: WEIGHT_READ_BYTES_PER_SECOND / MiB,
    unit: "MiB/s",
    kind: "assumed",
    basis: "gp3 baseline throughput; FT reads each weight file once",
  },
  {
    name: "server fixed start",
    value: SERVER_FIXED_START_SECONDS,
    unit: "s",
    kind: "assumed",
    basis: "tritonserver, mpirun, Python stubs, CUDA context, NCCL init",
  },
  {
    name: "FT + backend compile, fixed part",
    value: COMPILE.fixedCoreSeconds / 3600,
    unit: "core-hours",
    kind: "assumed",
    basis: "host C++, CMake configure and links: once per build (16 core-hours for one SM, a quarter of it fixed)",
  },
  {
    name: "FT + backend compile, per SM",
    value: COMPILE.perSmCoreSeconds / 3600,
    unit: "core-hours per CUDA arch",
    kind: "assumed",
    basis: "nvcc compiles every kernel once per -gencode arch of -DSM; errs long for several archs",
  },
  {
    name: "compile parallel efficiency",
    value: COMPILE.parallelEfficiency,
    unit: "share of the host's vCPUs",
    kind: "assumed",
    basis: "make -j keeps most cores busy; the configure, the FT clone and the final links are serial",
  },
  {
    name: "compile host ready",
    value: COMPILE.hostReadySeconds,
    unit: "s",
    kind: "assumed",
    basis: "cloud-init and the Docker check on the CPU host; no GPU checks, no git-lfs install",
  },
  {
    name: "NGC base, compressed",
    value: TRITON_WITH_FT_RECIPE.ngcBaseCompressionRatio,
    unit: "compressed / unpacked (16 GB unpacked)",
    kind: "assumed",
    basis:
      "16 GB unpacked (triton-inference-server/server#5383, #7474) × the lowest gzip-6 ratio measured on the locked CUDA/torch wheels (torch 0.514)",
  },
  {
    name: "pip layer of requirements.lock",
    value: TRITON_WITH_FT_RECIPE.pipLayerToWheelsRatio,
    unit: "layer gzip-6 / wheel bytes (3.00 GiB of wheels)",
    kind: "measured",
    basis:
      "2026-11-29: the 7 largest locked wheels unpacked and gzipped as a layer, 2,666,904,104 of 2,670,142,209 wheel bytes; wheel sizes from PyPI's JSON API",
  },
  {
    name: "builder launch",
    value: ASSUMED.builderLaunchSeconds,
    unit: "s",
    kind: "assumed",
    basis: "RunInstances to SSH on the DLAMI; host-ready (10 min assumed) follows",
  },
  {
    name: "EKS control plane",
    value: ASSUMED.eksControlPlaneSeconds,
    unit: "s",
    kind: "assumed",
    basis: "AWS: control-plane provisioning averages 15 minutes (aws/containers-roadmap#1227)",
  },
  {
    name: "GPU node boot (A10G, L4, L40S)",
    value: NODE_BOOT_SECONDS.A10G,
    unit: "s",
    kind: "assumed",
    basis: "launch, AL2023 boot, nodeadm join, driver load; PCIe hosts",
  },
  {
    name: "GPU node boot (A100, H100, H200)",
    value: NODE_BOOT_SECONDS["A100-40GB"],
    unit: "s",
    kind: "assumed",
    basis: "as above plus the NVSwitch fabric manager; the longer estimate",
  },
  {
    name: "NLB target registration",
    value: NLB_TARGET_REGISTRATION_SECONDS,
    unit: "s",
    kind: "assumed",
    basis: "observed 1–3 min for a new IP target to pass its first checks; the long end",
  },
  {
    name: "decode bandwidth efficiency",
    value: DECODE_BANDWIDTH_EFFICIENCY,
    unit: "share of peak",
    kind: "assumed",
    basis: "low end: drains must not be cut short; the $/1k tokens figure is a ceiling",
  },
  {
    name: "decode step floor",
    value: DECODE_STEP_FLOOR_SECONDS_PER_LAYER * 1e6,
    unit: "µs per layer",
    kind: "assumed",
    basis: "about ten kernel launches per layer and step; binds only for very small models",
  },
  {
    name: "decode bandwidth efficiency (high)",
    value: DECODE_BANDWIDTH_EFFICIENCY_HIGH,
    unit: "share of peak",
    kind: "assumed",
    basis: "a well-tuned bandwidth-bound kernel seldom exceeds ~80 % of the data-sheet peak",
  },
];
