// Gateway suite: the gateway processes in front of a real tritonserver (FT
// stand-in, decoupled), driven by the official `openai` client and raw HTTP.
// `npx vitest run --config test/gateway/vitest.config.mts`; test/gateway/run.sh
// runs it with the JUnit reporter for CI. GATEWAY_UPSTREAM=vllm runs it in front of the project's vLLM
// model instead (test/vllm/run.sh does), without the files that need the FT stand-in (FT_ONLY_FILES).
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

/**
 * Files not run in vLLM mode, each with why: they drive the FT stand-in's own controls (its injected
 * step time, fault and hold files) on tritonservers they start themselves, or reach no model at all.
 * Single tests that need the stand-in skip themselves in their files instead, each with its reason.
 */
const FT_ONLY_FILES: Record<string, string> = {
  "test/gateway/canary.test.ts":
    "starts its own FT stand-in servers and breaks the canary through the stand-in's fault file (errors, first-token delay)",
  "test/gateway/wake.test.ts":
    "starts and delays its own FT stand-in servers and measures the hold path against the stand-in's fixed step time",
  "test/gateway/queue.test.ts":
    "fills a copy of the FT ensemble with a one-request Triton queue while the stand-in holds (its hold file)",
  "test/gateway/tritonRestart.test.ts":
    "restarts an FT stand-in server of its own (and runs only with GATEWAY_OUTAGE_TEST=1)",
  "test/gateway/storeAgreement.test.ts":
    "reaches no model (the store's scripts against the in-memory rule): run once, in FT mode",
  "test/gateway/usageRetry.test.ts": "reaches no model (the usage ledger's retry on the store): run once, in FT mode",
};

export default defineConfig({
  root: fileURLToPath(new URL("../..", import.meta.url)),
  test: {
    include: ["test/gateway/**/*.test.ts"],
    // test/gateway/upstream.ts reads the same variable for the set-up.
    exclude: process.env.GATEWAY_UPSTREAM === "vllm" ? Object.keys(FT_ONLY_FILES) : [],
    globalSetup: ["test/gateway/globalSetup.ts"],
    testTimeout: 60_000,
    hookTimeout: 900_000,
    // One server and two gateways for the whole suite; the latency test needs them quiet.
    fileParallelism: false,
  },
});
