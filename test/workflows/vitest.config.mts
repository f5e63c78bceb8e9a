// The workflows' own steps run for real: `npx vitest run --config test/workflows/vitest.config.mts`
// (test/workflows/run.sh runs it with the JUnit reporter for CI).
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

export default defineConfig({
  root: fileURLToPath(new URL("../..", import.meta.url)),
  test: {
    include: ["test/workflows/**/*.test.ts"],
    testTimeout: 600_000,
    hookTimeout: 600_000,
  },
});
