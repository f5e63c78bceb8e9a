/**
 * The CPU builder of a stack whose every model is served by vLLM (issue 37):
 * which instance the plan picks (catalog/cpuBuilders.ts), its root volume, and
 * its host check, the `host-ready` step of such a stack. A vLLM model's build
 * (fetch, the CodeGen re-layout, bake) needs Docker, disk and the network,
 * never a GPU; a stack with any FT model keeps its GPU builders (plan/stack.ts).
 *
 * The host check is a script of its own (scripts/remote/cpu-host-ready.sh), not
 * a branch of host-ready.sh: that script's bytes are part of every FT stack's
 * host-ready hash, and of every hash after it.
 *
 * Pure: no Pulumi.
 */
import { cpuBuilderFor } from "../catalog/cpuBuilders";
import { CPU_HOST_READY_FREE_DISK_GIB, vllmBuildRamBytes, vllmBuilderDiskGiB } from "../model/sizing";
import type { ResolvedStack } from "../config/stack";
import { REMOTE } from "./paths";
import type { StepDefinition } from "./stepGraph";
import { timeouts } from "./steps";

/** The CPU builder the plan picked for a stack's vLLM models. */
export interface CpuBuilderPlan {
  instanceType: string;
  vcpus: number;
  memoryGiB: number;
  /** Root volume, GiB: build.builderDiskGiB, else every model's checkpoint and image (model/sizing.ts vllmBuilderDiskGiB). */
  diskGiB: number;
}

/** The CPU builder for these models: the smallest catalog entry with the memory the largest build needs. */
export function cpuBuilderPlan(models: readonly ResolvedStack[]): CpuBuilderPlan {
  const ram = Math.max(0, ...models.map((m) => vllmBuildRamBytes(m.model.family, m.model.arch)));
  const host = cpuBuilderFor(ram);
  const explicit = models[0]?.config.build.builderDiskGiB;
  return {
    instanceType: host.type,
    vcpus: host.vcpus,
    memoryGiB: host.memoryGiB,
    diskGiB: explicit ?? vllmBuilderDiskGiB(models.map((m) => m.model)),
  };
}

/**
 * The CPU builder's `host-ready`: cloud-init, Docker, free disk, git-lfs and the
 * ECR login, as the GPU builder's, without nvidia-smi or the NVIDIA runtime.
 * Model-independent, as the GPU builder's: every later step's hash covers it.
 */
export function cpuHostReadyStep(minutes: number): StepDefinition {
  return {
    id: "host-ready",
    title: "wait for cloud-init; check Docker and disk (a CPU builder: no GPU); git-lfs; ECR login",
    script: "scripts/remote/cpu-host-ready.sh",
    dependsOn: [],
    config: [
      ["WORK_ROOT", REMOTE.root],
      ["AWS_REGION", { deploy: "awsRegion" }],
      ["ECR_REGISTRY", { deploy: "ecrRegistry" }],
      ["REQUIRED_FREE_GIB", CPU_HOST_READY_FREE_DISK_GIB],
    ],
    inputs: [],
    files: [],
    secretEnv: [],
    producesImage: false,
    timeouts: timeouts(minutes),
  };
}
