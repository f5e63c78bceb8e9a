// The vLLM suite's gateway part (test/vllm/run.sh runs it after pytest): the real gateway in front of
// the project's vLLM model on a CPU tritonserver, beside the FT stand-in (test/vllm/gatewaySetup.ts).
// `npx vitest run --config test/vllm/vitest.config.mts`.
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

export default defineConfig({
  root: fileURLToPath(new URL("../..", import.meta.url)),
  test: {
    include: ["test/vllm/**/*.test.ts"],
    globalSetup: ["test/vllm/gatewaySetup.ts"],
    testTimeout: 120_000,
    hookTimeout: 1_200_000,
    // One vLLM server, one gateway; the cancellation test times vLLM's sequences, so nothing runs beside it.
    fileParallelism: false,
  },
});
