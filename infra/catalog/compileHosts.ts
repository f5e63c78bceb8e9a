/**
 * The CPU hosts triton_with_ft is compiled on, and how the plan picks one.
 *
 * The FT + backend compile is nvcc and g++ over a few thousand translation
 * units: it needs cores, no GPU (nvcc emits code for the `-DSM` archs it is
 * given without one). So it runs on a compute-optimised instance sized for the
 * work, and the GPU builder keeps only what needs its GPU (gpt_gemm). The
 * conversion needs no GPU either, but it stays on the GPU builder: bake reads
 * its output from that host's disk, and it runs beside the compile, off the
 * critical path (plan/budgets.ts).
 *
 * vCPUs and memory: AWS's instance-type specifications for C7i ("Compute
 * optimized instances"; 4 vCPUs and 8 GiB per xlarge step). Prices are in the
 * vendored table (infra/data/prices/aws.json, the same Karpenter-generated
 * Price List snapshot as every other instance), not here. The host boots the
 * builder's AMI (Docker, git and the AWS CLI preinstalled); its GPU driver
 * stays idle on a CPU instance.
 *
 * Pure: plain data.
 */
import { ASSUMED, COMPILE } from "./timings";

export interface CompileHost {
  type: string;
  vcpus: number;
  memoryGiB: number;
}

/** Smallest first: the plan takes the first that meets the compile target, else the last. */
export const COMPILE_HOSTS: readonly CompileHost[] = [
  { type: "c7i.8xlarge", vcpus: 32, memoryGiB: 64 },
  { type: "c7i.12xlarge", vcpus: 48, memoryGiB: 96 },
  { type: "c7i.16xlarge", vcpus: 64, memoryGiB: 128 },
  { type: "c7i.24xlarge", vcpus: 96, memoryGiB: 192 },
  { type: "c7i.48xlarge", vcpus: 192, memoryGiB: 384 },
];

/** Core-seconds of the FT + backend compile for `smCount` CUDA archs (catalog/timings.ts COMPILE). */
export function compileCoreSeconds(smCount: number): number {
  if (!Number.isInteger(smCount) || smCount < 1) throw new Error(`a compile needs at least one SM, got ${smCount}`);
  return COMPILE.fixedCoreSeconds + COMPILE.perSmCoreSeconds * smCount;
}

/** Wall-clock seconds of the compile on `vcpus` cores at the stated parallel efficiency. */
export function compileSeconds(smCount: number, vcpus: number): number {
  return compileCoreSeconds(smCount) / (vcpus * COMPILE.parallelEfficiency);
}

/**
 * The host for an SM set: the smallest whose compile fits COMPILE.targetSeconds,
 * else the largest (more SMs then take longer, never a bigger host than the catalog has).
 */
export function compileHostFor(smList: readonly number[]): CompileHost {
  const fits = COMPILE_HOSTS.find((h) => compileSeconds(smList.length, h.vcpus) <= COMPILE.targetSeconds);
  const chosen = fits ?? COMPILE_HOSTS[COMPILE_HOSTS.length - 1];
  if (!chosen) throw new Error("the compile host catalog is empty");
  return chosen;
}

/** The compile host's readiness before the compile can start: its launch and first boot checks. */
export const COMPILE_HOST_READY_SECONDS = ASSUMED.builderLaunchSeconds + COMPILE.hostReadySeconds;
