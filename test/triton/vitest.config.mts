// Real-server integration suite: `npx vitest run --config test/triton/vitest.config.mts`
// (test/triton/run.sh runs it with the JUnit reporter for CI).
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

export default defineConfig({
  root: fileURLToPath(new URL("../..", import.meta.url)),
  test: {
    include: ["test/triton/**/*.test.ts"],
    globalSetup: ["test/triton/globalSetup.ts"],
    testTimeout: 60_000,
    // Cold runs build the Python venv (about a minute) before the server starts.
    hookTimeout: 900_000,
    // One server for the whole suite; files share it, so run them one at a time.
    fileParallelism: false,
  },
});
