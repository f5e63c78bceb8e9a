/**
 * AWS GPU catalog: the facts the planner needs about each GPU model, each
 * instance family and each instance type. Values are AWS's and NVIDIA's
 * published specifications (g5, g6, g6e, p4d/p4de, p5, p5e, p5en), each with
 * the page it was read from.
 */

export type GpuModel = "A10G" | "A100-40GB" | "A100-80GB" | "L4" | "L40S" | "H100" | "H200";

/** The extended resource the NVIDIA device plugin advertises per GPU; pods request GPUs by this name. */
export const GPU_RESOURCE = "nvidia.com/gpu";

/** Where a fact was read, and when: the data below is only as good as its source. */
export interface Source {
  url: string;
  /** ISO date the page was read. */
  lookedUp: string;
}

/** Facts about each GPU model, whatever instance carries it. */
export interface GpuModelFacts {
  /**
   * nvidia-smi's name for the model (`--query-gpu=name`, or its tail); host-ready
   * matches it at a word boundary, so "NVIDIA L4" does not accept an L40S.
   */
  nvidiaSmiName: string;
  /**
   * Peak memory bandwidth in GB/s (NVIDIA data sheets). FT's decode step is
   * bandwidth-bound: each generated token streams the GPU's weights and KV cache once.
   */
  memoryBandwidthGBps: number;
  /** CUDA compute capability as FT's `-DSM` wants it (e.g. 86 for sm_86). */
  sm: number;
  /** Karpenter's `karpenter.k8s.aws/instance-gpu-name` value (EC2's GPU name, lower-cased). */
  karpenterGpuName: string;
  source: Source;
}

const NVIDIA = (url: string): Source => ({ url, lookedUp: "2026-11-25" });

export const GPU_MODELS: Record<GpuModel, GpuModelFacts> = {
  A10G: {
    nvidiaSmiName: "A10G",
    memoryBandwidthGBps: 600,
    sm: 86,
    karpenterGpuName: "a10g",
    source: NVIDIA("https://www.nvidia.com/en-us/data-center/products/a10-gpu/"),
  },
  "A100-40GB": {
    nvidiaSmiName: "A100-SXM4-40GB",
    memoryBandwidthGBps: 1555,
    sm: 80,
    karpenterGpuName: "a100",
    source: NVIDIA(
      "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf",
    ),
  },
  "A100-80GB": {
    nvidiaSmiName: "A100-SXM4-80GB",
    memoryBandwidthGBps: 2039,
    sm: 80,
    karpenterGpuName: "a100",
    source: NVIDIA(
      "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf",
    ),
  },
  // Ada Lovelace (sm_89): FT compiles for it only with an explicit -DSM.
  L4: {
    nvidiaSmiName: "NVIDIA L4",
    memoryBandwidthGBps: 300,
    sm: 89,
    karpenterGpuName: "l4",
    source: NVIDIA("https://www.nvidia.com/en-us/data-center/l4/"),
  },
  L40S: {
    nvidiaSmiName: "NVIDIA L40S",
    memoryBandwidthGBps: 864,
    sm: 89,
    karpenterGpuName: "l40s",
    source: NVIDIA("https://www.nvidia.com/en-us/data-center/l40s/"),
  },
  // Hopper (sm_90): the SXM5 parts AWS's p5 family carries.
  H100: {
    nvidiaSmiName: "NVIDIA H100 80GB HBM3",
    memoryBandwidthGBps: 3350,
    sm: 90,
    karpenterGpuName: "h100",
    source: NVIDIA("https://www.nvidia.com/en-us/data-center/h100/"),
  },
  H200: {
    nvidiaSmiName: "NVIDIA H200",
    memoryBandwidthGBps: 4800,
    sm: 90,
    karpenterGpuName: "h200",
    source: NVIDIA("https://www.nvidia.com/en-us/data-center/h200/"),
  },
};

/**
 * How EC2 sells a family's capacity, which decides whether a node can be had
 * when Karpenter or a node group asks for one:
 * - `on-demand`: ordinary on-demand (and spot) capacity, subject to the account's quota;
 * - `reservation`: sold mainly through EC2 Capacity Blocks for ML and On-Demand
 *   Capacity Reservations; plain on-demand launches are quota-gated and often fail
 *   with InsufficientInstanceCapacity, so a reservation is what makes a node appear.
 */
export type CapacityGuidance = "on-demand" | "reservation";

export interface GpuFamilyFacts {
  capacity: CapacityGuidance;
  /** AWS's spec page the family's sizes were read from. */
  source: Source;
}

const AWS_SPECS: Source = {
  url: "https://docs.aws.amazon.com/ec2/latest/instancetypes/ac.html",
  lookedUp: "2026-11-25",
};
const CAPACITY_BLOCKS: Source = {
  url: "https://aws.amazon.com/ec2/capacityblocks/",
  lookedUp: "2026-11-25",
};

export const GPU_FAMILIES: Record<string, GpuFamilyFacts> = {
  g5: { capacity: "on-demand", source: AWS_SPECS },
  g6: { capacity: "on-demand", source: AWS_SPECS },
  g6e: { capacity: "on-demand", source: AWS_SPECS },
  p4d: { capacity: "on-demand", source: AWS_SPECS },
  p4de: { capacity: "reservation", source: CAPACITY_BLOCKS },
  p5: { capacity: "reservation", source: CAPACITY_BLOCKS },
  p5e: { capacity: "reservation", source: CAPACITY_BLOCKS },
  p5en: { capacity: "reservation", source: CAPACITY_BLOCKS },
};

export interface GpuInstance {
  type: string;
  /** EC2 instance family, the part of the type before the dot (g6e for g6e.12xlarge). */
  family: string;
  gpuModel: GpuModel;
  gpuCount: number;
  /**
   * Memory per GPU in GiB, as the planner budgets it: AWS's listed GB for
   * 24/48/80 GB parts; 140 for H200's 141 GB, which the driver reports as about 140.4 GiB.
   */
  gpuMemoryGiB: number;
  /** CUDA compute capability as FT's `-DSM` wants it: always the GPU model's. */
  sm: number;
  vcpus: number;
  ramGiB: number;
  /** GPUs share an NVSwitch fabric: the only case where FT's custom all-reduce helps (at TP 8). */
  nvswitch: boolean;
}

/** One size of a family: the GPU model fixes the SM; the rest is AWS's table row. */
function sized(
  family: string,
  gpuModel: GpuModel,
  gpuMemoryGiB: number,
  nvswitch: boolean,
): (size: string, gpuCount: number, vcpus: number, ramGiB: number) => GpuInstance {
  return (size, gpuCount, vcpus, ramGiB) => ({
    type: `${family}.${size}`,
    family,
    gpuModel,
    gpuCount,
    gpuMemoryGiB,
    sm: GPU_MODELS[gpuModel].sm,
    vcpus,
    ramGiB,
    nvswitch,
  });
}

const g5 = sized("g5", "A10G", 24, false);
// g6 and g6e GPUs talk over PCIe, like g5's: no NVSwitch.
const g6 = sized("g6", "L4", 24, false);
const g6e = sized("g6e", "L40S", 48, false);
// p5.4xlarge has one GPU: no fabric to speak of. The 8-GPU sizes are HGX boards with NVSwitch.
const p5single = sized("p5", "H100", 80, false);
const p5 = sized("p5", "H100", 80, true);
const p5e = sized("p5e", "H200", 140, true);
const p5en = sized("p5en", "H200", 140, true);

/**
 * Every size AWS offers of each family: size, GPUs, vCPUs, RAM GiB. AWS_SPECS is the page these
 * belong to; it could not be opened from here on 2026-11-25, so the vCPU and RAM figures were
 * cross-checked against a public list that names both per size (openshift/openshift-docs,
 * modules/rosa-sdpolicy-am-aws-compute-types.adoc, read 2026-11-25: e.g. p5.4xlarge 16 vCPU /
 * 256 GiB, g6e.48xlarge 192 vCPU / 1,536 GiB, p5en.48xlarge 192 vCPU / 2,048 GiB).
 */
export const GPU_INSTANCES: readonly GpuInstance[] = [
  g5("xlarge", 1, 4, 16),
  g5("2xlarge", 1, 8, 32),
  g5("4xlarge", 1, 16, 64),
  g5("8xlarge", 1, 32, 128),
  g5("16xlarge", 1, 64, 256),
  g5("12xlarge", 4, 48, 192),
  g5("24xlarge", 4, 96, 384),
  g5("48xlarge", 8, 192, 768),
  sized("p4d", "A100-40GB", 40, true)("24xlarge", 8, 96, 1152),
  sized("p4de", "A100-80GB", 80, true)("24xlarge", 8, 96, 1152),
  g6("xlarge", 1, 4, 16),
  g6("2xlarge", 1, 8, 32),
  g6("4xlarge", 1, 16, 64),
  g6("8xlarge", 1, 32, 128),
  g6("16xlarge", 1, 64, 256),
  g6("12xlarge", 4, 48, 192),
  g6("24xlarge", 4, 96, 384),
  g6("48xlarge", 8, 192, 768),
  g6e("xlarge", 1, 4, 32),
  g6e("2xlarge", 1, 8, 64),
  g6e("4xlarge", 1, 16, 128),
  g6e("8xlarge", 1, 32, 256),
  g6e("16xlarge", 1, 64, 512),
  g6e("12xlarge", 4, 48, 384),
  g6e("24xlarge", 4, 96, 768),
  g6e("48xlarge", 8, 192, 1536),
  p5single("4xlarge", 1, 16, 256),
  p5("48xlarge", 8, 192, 2048),
  p5e("48xlarge", 8, 192, 2048),
  p5en("48xlarge", 8, 192, 2048),
];

/**
 * The CUDA archs triton_with_ft must be compiled for: every GPU the image
 * runs on (the serving nodes, and the builder, which runs gpt_gemm and the
 * smoke load in the same image). Sorted and unique, as FT's `-DSM` list.
 */
export function smList(instances: readonly GpuInstance[]): number[] {
  return [...new Set(instances.map((i) => i.sm))].sort((a, b) => a - b);
}

/**
 * FT's `int8_mode` needs its CUTLASS int8 kernels: weight-only int8 (mode 1,
 * fpA_intB GEMM) dispatches for sm_70 to sm_89, int8 GEMM (mode 2, SmoothQuant)
 * for sm_80 to sm_89; both throw "Arch unsupported" on sm_90 (FT df4a7534,
 * kernels/cutlass_kernels/{fpA_intB_gemm,int8_gemm}/*_template.h). Returns why
 * a mode cannot run on this GPU, or undefined when it can.
 */
export function int8ModeUnsupported(mode: number, sm: number): string | undefined {
  if (mode === 0) return undefined;
  const [lo, kernel] = mode === 1 ? [70, "weight-only int8 (fpA_intB)"] : [80, "int8 (SmoothQuant)"];
  if (sm >= lo && sm < 90) return undefined;
  return `FT's ${kernel} CUTLASS GEMM supports sm_${lo} to sm_89 only and refuses sm_${sm} ("Arch unsupported") at load`;
}

export function findGpuInstance(type: string): GpuInstance | undefined {
  return GPU_INSTANCES.find((i) => i.type === type);
}

export function gpuInstanceTypes(): string[] {
  return GPU_INSTANCES.map((i) => i.type);
}
