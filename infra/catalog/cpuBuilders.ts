/**
 * The CPU builders a vLLM-only stack builds on (issue 37), and how the plan picks one.
 *
 * A vLLM model's build is a download (fetch), an optional CodeGen re-layout and
 * a Docker build and push (bake): no conversion, no gpt_gemm, no triton_with_ft,
 * so nothing of it needs a GPU. A stack whose every model is served by vLLM
 * therefore builds on a general-purpose CPU instance sized for that work
 * (plan/stack.ts); a stack with any FT model keeps its GPU builder(s).
 *
 * vCPUs and memory: AWS's instance-type specifications for M7i
 * (https://aws.amazon.com/ec2/instance-types/m7i/: 4 vCPUs and 16 GiB per
 * xlarge step), as listed 2026-11-29 (not re-read from AWS's page here). Prices are in the vendored
 * table (infra/data/prices/aws.json), not here. The host boots the builder's
 * AMI (cloud/builderHost.ts: Docker, git, Python and the AWS CLI preinstalled);
 * its GPU driver stays idle on a CPU instance, as on the compile host.
 *
 * Pure: plain data.
 */
const GiB = 1024 ** 3;

export interface CpuBuilder {
  type: string;
  vcpus: number;
  memoryGiB: number;
}

/**
 * Memory every build on a CPU builder takes, whatever the model: the Hub
 * download, Docker's build and push of the server image, the OS. Assumed, not
 * measured (no vLLM bake has run on AWS yet); a CodeGen re-layout needs more
 * (model/sizing.ts vllmBuildRamBytes).
 */
export const CPU_BUILD_BASE_RAM_GIB = 8;

/** Smallest first: the plan takes the first with the memory the build needs, else the last. */
export const CPU_BUILDERS: readonly CpuBuilder[] = [
  { type: "m7i.xlarge", vcpus: 4, memoryGiB: 16 },
  { type: "m7i.2xlarge", vcpus: 8, memoryGiB: 32 },
  { type: "m7i.4xlarge", vcpus: 16, memoryGiB: 64 },
  { type: "m7i.8xlarge", vcpus: 32, memoryGiB: 128 },
  { type: "m7i.12xlarge", vcpus: 48, memoryGiB: 192 },
];

/**
 * The host for a build that needs `ramBytes` of memory (model/sizing.ts
 * vllmBuildRamBytes): the smallest that holds it, else the largest (the
 * resolve layer refuses a model that does not fit the largest).
 */
export function cpuBuilderFor(ramBytes: number): CpuBuilder {
  const fits = CPU_BUILDERS.find((h) => h.memoryGiB * GiB >= ramBytes);
  const chosen = fits ?? CPU_BUILDERS[CPU_BUILDERS.length - 1];
  if (!chosen) throw new Error("the CPU builder catalog is empty");
  return chosen;
}
