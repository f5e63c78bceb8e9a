// Real engine suite: `bash test/engine/run.sh` (builds or reuses the Pulumi CLI,
// the Kubernetes provider and the control plane, then runs this config).
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

export default defineConfig({
  root: fileURLToPath(new URL("../..", import.meta.url)),
  test: {
    include: ["test/engine/**/*.test.ts"],
    // The k8s suite's control plane with kwok nodes, started and stopped the same way.
    globalSetup: ["test/k8s/globalSetup.ts"],
    testTimeout: 600_000,
    hookTimeout: 600_000,
    // One cluster and one stack whose scenarios follow each other.
    fileParallelism: false,
    // Each scenario starts from the state the one before left: after a failure the rest would
    // only fail for that reason (or wait out the provider's timeouts), so the run stops there.
    bail: 1,
    sequence: { concurrent: false },
  },
});
