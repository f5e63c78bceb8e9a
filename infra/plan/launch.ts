/**
 * The server's launch command. FT drives the GPUs of one node from threads of a
 * single MPI rank, and it refuses a visible GPU count that is not a multiple of
 * TP×PP, so the command limits CUDA_VISIBLE_DEVICES to the GPUs the model uses.
 * It runs from the image WORKDIR, where gemm_config.in is, as the image's
 * unprivileged user: mpirun is not given --allow-run-as-root, so OpenMPI itself
 * refuses to start should the container ever run as root.
 */
import { MODEL_REPOSITORY_DIR, SERVER_WORKDIR, TRITONSERVER_BIN } from "./paths";

export interface LaunchPlan {
  argv: string[];
  env: Record<string, string>;
  workingDir: string;
}

export function visibleDevices(tensorParallel: number): string {
  if (!Number.isInteger(tensorParallel) || tensorParallel < 1)
    throw new Error(`tensor-parallel size must be a positive integer, got ${tensorParallel}`);
  return Array.from({ length: tensorParallel }, (_, i) => String(i)).join(",");
}

export function launchPlan(tensorParallel: number, modelRepository: string = MODEL_REPOSITORY_DIR): LaunchPlan {
  if (!modelRepository.startsWith("/"))
    throw new Error(`the model repository path must be absolute, got ${modelRepository}`);
  return {
    argv: ["mpirun", "-n", "1", TRITONSERVER_BIN, `--model-repository=${modelRepository}`],
    env: { CUDA_VISIBLE_DEVICES: visibleDevices(tensorParallel) },
    workingDir: SERVER_WORKDIR,
  };
}

/**
 * A vLLM model's launch: tritonserver itself (no MPI: vLLM starts its own workers for
 * tensor parallelism), on the same ports and the same model repository path, limited to
 * the model's GPUs.
 */
export function vllmLaunchPlan(tensorParallel: number, modelRepository: string = MODEL_REPOSITORY_DIR): LaunchPlan {
  if (!modelRepository.startsWith("/"))
    throw new Error(`the model repository path must be absolute, got ${modelRepository}`);
  return {
    argv: [TRITONSERVER_BIN, `--model-repository=${modelRepository}`],
    env: { CUDA_VISIBLE_DEVICES: visibleDevices(tensorParallel) },
    workingDir: SERVER_WORKDIR,
  };
}
