// Real control-plane suite: `bash test/k8s/run.sh` (builds or reuses the
// pinned binaries, then runs this config with the JUnit reporter for CI).
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

export default defineConfig({
  root: fileURLToPath(new URL("../..", import.meta.url)),
  test: {
    include: ["test/k8s/**/*.test.ts"],
    globalSetup: ["test/k8s/globalSetup.ts"],
    testTimeout: 180_000,
    hookTimeout: 300_000,
    // One cluster for the whole suite: files share it, so run them one at a time.
    fileParallelism: false,
  },
});
