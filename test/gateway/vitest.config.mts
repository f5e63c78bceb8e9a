// Gateway suite: the gateway processes in front of a real tritonserver (FT
// stand-in, decoupled), driven by the official `openai` client and raw HTTP.
// `npx vitest run --config test/gateway/vitest.config.mts`; test/gateway/run.sh
// runs it with the JUnit reporter for CI.
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

export default defineConfig({
  root: fileURLToPath(new URL("../..", import.meta.url)),
  test: {
    include: ["test/gateway/**/*.test.ts"],
    globalSetup: ["test/gateway/globalSetup.ts"],
    testTimeout: 60_000,
    hookTimeout: 900_000,
    // One server and two gateways for the whole suite; the latency test needs them quiet.
    fileParallelism: false,
  },
});
