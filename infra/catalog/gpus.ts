/**
 * AWS GPU catalog: the facts the planner needs about each GPU model and each
 * instance type. Values are AWS's and NVIDIA's published specifications for
 * the g5 and p4 families.
 */

export type GpuModel = "A10G" | "A100-40GB" | "A100-80GB";

/** The extended resource the NVIDIA device plugin advertises per GPU; pods request GPUs by this name. */
export const GPU_RESOURCE = "nvidia.com/gpu";

/** Facts about each GPU model, whatever instance carries it. */
export interface GpuModelFacts {
  /** nvidia-smi's name for the model (a substring of `--query-gpu=name`); host-ready checks it. */
  nvidiaSmiName: string;
  /**
   * Peak memory bandwidth in GB/s (NVIDIA data sheets). FT's decode step is
   * bandwidth-bound: each generated token streams the GPU's weights and KV cache once.
   */
  memoryBandwidthGBps: number;
}

export const GPU_MODELS: Record<GpuModel, GpuModelFacts> = {
  A10G: { nvidiaSmiName: "A10G", memoryBandwidthGBps: 600 },
  "A100-40GB": { nvidiaSmiName: "A100-SXM4-40GB", memoryBandwidthGBps: 1555 },
  "A100-80GB": { nvidiaSmiName: "A100-SXM4-80GB", memoryBandwidthGBps: 2039 },
};

export interface GpuInstance {
  type: string;
  gpuModel: GpuModel;
  gpuCount: number;
  /** Memory per GPU in GiB as the driver reports it (AWS lists 24 GB / 40 GB / 80 GB). */
  gpuMemoryGiB: number;
  /** CUDA compute capability as FT's `-DSM` wants it (e.g. 86 for sm_86). */
  sm: number;
  vcpus: number;
  ramGiB: number;
  /** GPUs share an NVSwitch fabric: the only case where FT's custom all-reduce helps (at TP 8). */
  nvswitch: boolean;
}

const g5 = (size: string, gpuCount: number, vcpus: number, ramGiB: number): GpuInstance => ({
  type: `g5.${size}`,
  gpuModel: "A10G",
  gpuCount,
  gpuMemoryGiB: 24,
  sm: 86,
  vcpus,
  ramGiB,
  nvswitch: false,
});

export const GPU_INSTANCES: readonly GpuInstance[] = [
  g5("xlarge", 1, 4, 16),
  g5("2xlarge", 1, 8, 32),
  g5("4xlarge", 1, 16, 64),
  g5("8xlarge", 1, 32, 128),
  g5("16xlarge", 1, 64, 256),
  g5("12xlarge", 4, 48, 192),
  g5("24xlarge", 4, 96, 384),
  g5("48xlarge", 8, 192, 768),
  {
    type: "p4d.24xlarge",
    gpuModel: "A100-40GB",
    gpuCount: 8,
    gpuMemoryGiB: 40,
    sm: 80,
    vcpus: 96,
    ramGiB: 1152,
    nvswitch: true,
  },
  {
    type: "p4de.24xlarge",
    gpuModel: "A100-80GB",
    gpuCount: 8,
    gpuMemoryGiB: 80,
    sm: 80,
    vcpus: 96,
    ramGiB: 1152,
    nvswitch: true,
  },
];

export function findGpuInstance(type: string): GpuInstance | undefined {
  return GPU_INSTANCES.find((i) => i.type === type);
}

export function gpuInstanceTypes(): string[] {
  return GPU_INSTANCES.map((i) => i.type);
}
