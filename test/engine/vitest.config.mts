// Real engine suite: `bash test/engine/run.sh` (builds or reuses the Pulumi CLI,
// the Kubernetes provider and the control plane, then runs this config).
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

export default defineConfig({
  root: fileURLToPath(new URL("../..", import.meta.url)),
  test: {
    include: ["test/engine/**/*.test.ts"],
    // No globalSetup: each file starts its own control plane with kwok nodes (fileControlPlane.ts),
    // so the files run side by side; they mostly wait on the engine, the provider and the API
    // server. ENGINE_FILE_WORKERS=1 runs them one after another.
    testTimeout: 600_000,
    hookTimeout: 600_000,
    fileParallelism: true,
    maxWorkers: Number(process.env.ENGINE_FILE_WORKERS ?? 3),
    // Within a file, one stack whose scenarios follow each other.
    // Each scenario starts from the state the one before left: after a failure the rest would
    // only fail for that reason (or wait out the provider's timeouts), so the run stops there.
    bail: 1,
    sequence: { concurrent: false },
  },
});
