/**
 * Triton calls opened before their request (the gateway opens a request's
 * calls while admission decides: images/gateway/src/triton/openedCalls.ts),
 * on the real tritonserver: a call abandoned without a request runs nothing
 * (Triton's own statistics count no inference), a request sent on a call
 * opened earlier is served as on a fresh one, and the channel serves on.
 */
import { describe, expect, inject, it } from "vitest";
import { ensembleInputs } from "../../images/gateway/src/openai/generate";
import { TritonGateway } from "../../images/gateway/src/triton/tritonClient";

const h = inject("gateway");

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Successful inferences of every model of the tritonserver, from its statistics extension. */
async function inferences(): Promise<number> {
  const base = h.triton.http.startsWith("http") ? h.triton.http : `http://${h.triton.http}`;
  const body = (await (await fetch(`${base}/v2/models/stats`)).json()) as {
    model_stats: { inference_stats: { success: { count: number } } }[];
  };
  return body.model_stats.reduce((n, m) => n + m.inference_stats.success.count, 0);
}

describe("Triton calls opened before their request", () => {
  it("abandoned without a request, they run nothing; a request sent on one opened earlier is served", async () => {
    const client = new TritonGateway(h.triton.grpc, h.models.first.ensemble);
    try {
      const before = await inferences();
      const calls = Array.from({ length: 20 }, () => client.open(Date.now() + 30_000));
      await sleep(200); // the streams are set up on the server's side
      for (const call of calls) call.abandon();
      await sleep(500);
      expect(await inferences()).toBe(before);

      const call = client.open(Date.now() + 30_000);
      await sleep(50);
      const sampling = { maxTokens: 3, temperature: 0, topP: 1, topK: 0, stop: [] };
      let tokens = 0;
      for await (const outputs of call.send(ensembleInputs("opened early", sampling), {
        signal: new AbortController().signal,
        timeoutSeconds: 30,
      })) {
        tokens = Number(outputs.get("output_token_count")?.data[0] ?? 0);
      }
      expect(tokens).toBe(3);
      // The statistics see the one request (the ensemble and the models it calls).
      expect(await inferences()).toBeGreaterThan(before);
    } finally {
      client.close();
    }
  });
});
