import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/unit/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Pulumi's runtime state is process-global: run program tests one file at a time.
    fileParallelism: false,
  },
});
