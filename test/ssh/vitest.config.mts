// Real SSH builder suite: `bash test/ssh/run.sh` (runs this config with the
// JUnit reporter for CI).
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

export default defineConfig({
  root: fileURLToPath(new URL("../..", import.meta.url)),
  test: {
    include: ["test/ssh/**/*.test.ts"],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    // Pulumi's runtime state is process-global, and one sshd serves a file: one file at a time.
    fileParallelism: false,
  },
});
