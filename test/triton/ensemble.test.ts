/**
 * The project's model repository and client against a real tritonserver.
 * Only `fastertransformer` is a stand-in (test/triton/ft_standin): it echoes
 * the prompt's tokens cyclically, so every expected text below follows from
 * the prompt alone:
 *   max_tokens = prompt token count  -> text is the prompt again;
 *   stop word inside the prompt      -> text ends with that word;
 *   end token inside the prompt      -> text stops right before it.
 * Every contract test runs over HTTP and over gRPC.
 */
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { createServer } from "node:net";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { type Protocol, type TritonClient, TritonClientError } from "../../infra/client/api";
import { REPOSITORY_MODELS, generate, readiness, type GenerateOptions, type Prompt } from "../../infra/client/ensemble";
import { TritonGrpcClient } from "../../infra/client/grpc";
import { TritonHttpClient } from "../../infra/client/http";

const triton = inject("triton");
const ROOT = path.resolve(__dirname, "../..");
const PROTOCOLS: Protocol[] = ["http", "grpc"];
const clients: Record<Protocol, TritonClient> = {
  http: new TritonHttpClient(triton.http, { timeoutMs: 30_000 }),
  grpc: new TritonGrpcClient(`grpc://${triton.grpc}`, { timeoutMs: 30_000 }),
};
/** What a client error looks like on each protocol: HTTP status, gRPC code. */
const STATUS: Record<Protocol, { invalid: number; notFound: number }> = {
  http: { invalid: 400, notFound: 404 },
  grpc: { invalid: 3, notFound: 5 },
};
// Distinct marker seeds per protocol, so each finds its own stand-in log line.
const SEED_FACTOR: Record<Protocol, number> = { http: 7919, grpc: 7927 };

afterAll(() => {
  for (const c of Object.values(clients)) c.close();
});

/** Tokens the test tokenizer makes of a prompt, as the server reports them. */
async function tokenCount(client: TritonClient, prompt: string): Promise<number> {
  const result = await generate(client, [prompt], { maxTokens: 1 });
  return result.completions[0].inputTokens;
}

async function expectRejected(
  client: TritonClient,
  prompts: Prompt[],
  options: GenerateOptions,
  message: RegExp,
): Promise<TritonClientError> {
  const error = await generate(client, prompts, options).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error, "the request should have failed").toBeInstanceOf(TritonClientError);
  const failure = error as TritonClientError;
  expect(failure.tritonMessage).toMatch(message);
  return failure;
}

async function expectStillServing(client: TritonClient): Promise<void> {
  const result = await generate(client, ["still serving"], { maxTokens: 2 });
  expect(result.completions[0].outputTokens).toBe(2);
  expect(await client.isReady()).toBe(true);
}

describe.each(PROTOCOLS)("over %s", (protocol) => {
  const client = clients[protocol];
  const count = (prompt: string) => tokenCount(client, prompt);

  describe("server and models", () => {
    it("is live and ready, with all four models ready", async () => {
      const state = await readiness(client);
      expect(state).toEqual({
        live: true,
        ready: true,
        models: Object.fromEntries(REPOSITORY_MODELS.map((m) => [m, true])),
      });
    });

    it("exposes the ensemble contract in the model metadata", async () => {
      const meta = await client.modelMetadata("ensemble");
      expect(meta.platform).toBe("ensemble");
      const io = (list: { name: string; datatype: string; shape: number[] }[]) =>
        Object.fromEntries(list.map((t) => [t.name, `${t.datatype}${JSON.stringify(t.shape)}`]));
      expect(io(meta.inputs)).toEqual({
        text_input: "BYTES[-1,1]",
        max_tokens: "UINT32[-1,1]",
        bad_words: "BYTES[-1,-1]",
        stop_words: "BYTES[-1,-1]",
        top_k: "UINT32[-1,1]",
        top_p: "FP32[-1,1]",
        temperature: "FP32[-1,1]",
        repetition_penalty: "FP32[-1,1]",
        presence_penalty: "FP32[-1,1]",
        random_seed: "UINT64[-1,1]",
        return_tokens: "UINT32[-1,1]",
      });
      expect(io(meta.outputs)).toEqual({
        text_output: "BYTES[-1,1]",
        input_token_count: "UINT32[-1,1]",
        output_token_count: "UINT32[-1,1]",
        output_log_probs: "FP32[-1,-1]",
        cum_log_probs: "FP32[-1,1]",
        output_tokens: "BYTES[-1,-1]",
      });
    });

    it("reports an unknown model with the status and Triton's message", async () => {
      const error = await client.modelMetadata("no-such-model").catch((e: unknown) => e);
      expect(error).toBeInstanceOf(TritonClientError);
      expect((error as TritonClientError).status).toBe(STATUS[protocol].notFound);
      expect((error as TritonClientError).tritonMessage).toMatch(/no-such-model/);
    });
  });

  describe("text in, text out", () => {
    const prompt = "Hello Triton, this is a test of the server.";
    let n = 0;
    beforeAll(async () => {
      n = await count(prompt);
    });

    it("returns only generated text, with token counts, when optional inputs are omitted", async () => {
      expect(n).toBeGreaterThan(3);
      const short = await generate(client, [prompt], { maxTokens: 3 });
      const [c] = short.completions;
      expect(c.inputTokens).toBe(n);
      expect(c.outputTokens).toBe(3);
      expect(c.text.length).toBeGreaterThan(0);
      expect(prompt.startsWith(c.text)).toBe(true);
      expect(c.text).not.toBe(prompt);
      expect(short.latencyMs).toBeGreaterThan(0);

      const whole = await generate(client, [prompt], { maxTokens: n });
      expect(whole.completions[0]).toEqual({ text: prompt, inputTokens: n, outputTokens: n });
    });

    it("generates up to max_tokens, across the prompt's end", async () => {
      const maxTokens = Math.min(2 * n, triton.maxOutputLen);
      const result = await generate(client, [prompt], { maxTokens });
      const [c] = result.completions;
      expect(c.outputTokens).toBe(maxTokens);
      expect(c.text.startsWith(prompt)).toBe(true);
      expect((prompt + prompt).startsWith(c.text)).toBe(true);
    });

    it("passes sampling inputs to the FT model under FT's names", async () => {
      // random_seed rotates the stand-in's echo; a seed that is a multiple of
      // the prompt length rotates by 0 and doubles as a marker in the log.
      const seed = n * SEED_FACTOR[protocol];
      const options = { maxTokens: n, topK: 5, topP: 0.5, temperature: 0.75, repetitionPenalty: 1.25 };
      const aligned = await generate(client, [prompt], { ...options, randomSeed: seed });
      expect(aligned.completions[0].text).toBe(prompt);
      const shifted = await generate(client, [prompt], { ...options, randomSeed: seed + 1 });
      expect(shifted.completions[0].outputTokens).toBe(n);
      expect(shifted.completions[0].text).not.toBe(prompt);

      const line = readFileSync(triton.log, "utf8")
        .split("\n")
        .find((l) => l.includes("stand-in request") && l.includes(`random_seed=[${seed}]`));
      expect(line, "stand-in log line for the marker seed").toBeDefined();
      expect(line).toContain("runtime_top_k=[5]");
      expect(line).toContain("runtime_top_p=[0.5]");
      expect(line).toContain("temperature=[0.75]");
      expect(line).toContain("repetition_penalty=[1.25]");
      expect(line).toContain(`start_id=[${triton.startId}]`);
      expect(line).toContain(`end_id=[${triton.endId}]`);
    });

    it("sends a prompt's exact UTF-8 bytes", async () => {
      const text = "naïve café — ok";
      const tokens = await count(text);
      const result = await generate(client, [new TextEncoder().encode(text)], { maxTokens: tokens });
      expect(result.completions[0].text).toBe(text);
    });
  });

  describe("batches", () => {
    const prompts = ["Hi", "A rather longer prompt about model servers and batching", "x y z"];

    it("keeps each prompt of a ragged batch separate, with its own lengths", async () => {
      const counts = await Promise.all(prompts.map(count));
      expect(new Set(counts).size).toBe(3);
      const batched = await generate(client, prompts, {
        maxTokens: counts.map((c) => Math.min(c, triton.maxOutputLen)),
      });
      batched.completions.forEach((c, i) => {
        expect(c.inputTokens).toBe(counts[i]);
        expect(c.outputTokens).toBe(Math.min(counts[i], triton.maxOutputLen));
        expect(prompts[i].startsWith(c.text)).toBe(true);
      });
      expect(batched.completions[0].text).toBe("Hi");
      expect(batched.completions[2].text).toBe("x y z");
    });

    it("serves concurrent requests without mixing them up", async () => {
      const many = Array.from({ length: 12 }, (_, i) => `request ${i} asks something`);
      const results = await Promise.all(many.map((p) => generate(client, [p], { maxTokens: triton.maxOutputLen })));
      results.forEach((r, i) => {
        expect(r.completions[0].outputTokens).toBe(triton.maxOutputLen);
        expect(r.completions[0].text.startsWith(many[i])).toBe(true);
      });
    });
  });

  describe("stop words, bad words and end_id", () => {
    const prompt = "alpha beta gamma delta epsilon";

    it("stops right after a stop word, and per prompt in a batch", async () => {
      const single = await generate(client, [prompt], { maxTokens: triton.maxOutputLen, stopWords: [" gamma"] });
      expect(single.completions[0].text).toBe("alpha beta gamma");
      expect(single.completions[0].outputTokens).toBeLessThan(triton.maxOutputLen);

      const batch = await generate(client, [prompt, prompt, prompt], {
        maxTokens: triton.maxOutputLen,
        stopWords: [[" delta", " gamma"], [" beta"], []],
      });
      expect(batch.completions.map((c) => c.text)).toEqual([
        "alpha beta gamma",
        "alpha beta",
        expect.stringMatching(/^alpha beta gamma delta epsilon/),
      ]);
    });

    it("never generates a bad word", async () => {
      const n = await count(prompt);
      const maxTokens = Math.min(2 * n, triton.maxOutputLen);
      const result = await generate(client, [prompt], { maxTokens, badWords: [" beta"] });
      const [c] = result.completions;
      expect(c.outputTokens).toBe(maxTokens);
      expect(c.text).not.toContain("beta");
      // FT bans the token that would complete a bad word; the stand-in then
      // echoes the next prompt token instead, so the rest of the prompt follows.
      expect(c.text.startsWith("alpha")).toBe(true);
      expect(c.text).toContain("gamma delta epsilon");
    });

    it("ends generation at the model's end token", async () => {
      const head = "one two three";
      const result = await generate(client, [`${head}${triton.endToken} four five`], {
        maxTokens: triton.maxOutputLen,
      });
      const [c] = result.completions;
      expect(c.text).toBe(head);
      expect(c.outputTokens).toBe(await count(head));
    });
  });

  describe("bad requests get a clear error and the server keeps serving", () => {
    it("rejects an empty prompt", async () => {
      const e = await expectRejected(client, [""], { maxTokens: 4 }, /text_input\[0\].*empty/);
      expect(e.status).toBe(STATUS[protocol].invalid);
      await expectStillServing(client);
    });

    it("rejects max_tokens 0", async () => {
      const e = await expectRejected(client, ["hello"], { maxTokens: 0 }, /max_tokens\[0\] is 0/);
      expect(e.status).toBe(STATUS[protocol].invalid);
      await expectStillServing(client);
    });

    it("rejects max_tokens above max_output_len", async () => {
      const over = triton.maxOutputLen + 1;
      const e = await expectRejected(
        client,
        ["hello"],
        { maxTokens: over },
        new RegExp(`max_tokens\\[0\\] is ${over}.*max_output_len=${triton.maxOutputLen}`),
      );
      expect(e.status).toBe(STATUS[protocol].invalid);
      await expectStillServing(client);
    });

    it("rejects a prompt longer than max_input_len tokens", async () => {
      const long = Array.from({ length: triton.maxInputLen + 1 }, (_, i) => `w${i}`).join(" ");
      const e = await expectRejected(
        client,
        [long],
        { maxTokens: 4 },
        new RegExp(`more than max_input_len=${triton.maxInputLen}`),
      );
      expect(e.status).toBe(STATUS[protocol].invalid);
      await expectStillServing(client);
    });

    it("rejects a prompt that is not valid UTF-8", async () => {
      const e = await expectRejected(
        client,
        [new Uint8Array([0x68, 0x69, 0xff, 0xfe])],
        { maxTokens: 4 },
        /not valid UTF-8/,
      );
      expect(e.status).toBe(STATUS[protocol].invalid);
      await expectStillServing(client);
    });

    it("rejects a request without the required max_tokens input", async () => {
      const error = await client
        .infer("ensemble", { inputs: [{ name: "text_input", datatype: "BYTES", shape: [1, 1], data: ["hi"] }] })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(TritonClientError);
      expect((error as TritonClientError).status).toBe(STATUS[protocol].invalid);
      expect((error as TritonClientError).tritonMessage).toMatch(/max_tokens/);
      await expectStillServing(client);
    });
  });
});

describe("npm run smoke", () => {
  const run = promisify(execFile);
  const smoke = (args: string[]) =>
    run(
      process.execPath,
      [path.join(ROOT, "node_modules/tsx/dist/cli.mjs"), path.join(ROOT, "scripts/smoke.ts"), ...args],
      { cwd: ROOT },
    ).then(
      (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
      (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }),
    );

  it("prints text, token counts and latency for each prompt", async () => {
    const prompts = ["first prompt", "second one"];
    const counts = await Promise.all(prompts.map((p) => tokenCount(clients.http, p)));
    const maxTokens = Math.max(...counts);
    const r = await smoke([
      "--endpoint",
      triton.http,
      "--prompt",
      prompts[0],
      "--prompt",
      prompts[1],
      "--max-tokens",
      String(maxTokens),
    ]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/model fastertransformer: ready/);
    expect(r.stdout).toContain(`--- prompt 1: "first prompt"\n    text: "first prompt`);
    expect(r.stdout).toContain(`    tokens: ${counts[0]} in, ${maxTokens} out`);
    expect(r.stdout).toContain(`--- prompt 2: "second one"\n    text: "second one`);
    expect(r.stdout).toContain(`    tokens: ${counts[1]} in, ${maxTokens} out`);
    expect(r.stdout).toMatch(
      new RegExp(`latency: [\\d.]+ ms for 2 prompt\\(s\\), ${2 * maxTokens} generated token\\(s\\)`),
    );
    expect(r.stdout.trim().endsWith("smoke: OK")).toBe(true);
  });

  it("fails with the server's message on a bad request", async () => {
    const r = await smoke(["--endpoint", triton.http, "--max-tokens", String(triton.maxOutputLen + 1)]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/smoke: FAILED: HTTP 400 from .*max_output_len/);
  });

  it("speaks gRPC to a grpc:// endpoint, with gRPC status codes on failure", async () => {
    const ok = await smoke(["--endpoint", `grpc://${triton.grpc}`, "--prompt", "over grpc", "--max-tokens", "2"]);
    expect(ok.code).toBe(0);
    expect(ok.stdout).toContain(`server grpc://${triton.grpc} (grpc): live=true ready=true`);
    expect(ok.stdout).toMatch(/tokens: \d+ in, 2 out/);
    const bad = await smoke(["--endpoint", `grpc://${triton.grpc}`, "--max-tokens", String(triton.maxOutputLen + 1)]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(
      /smoke: FAILED: gRPC INVALID_ARGUMENT \(3\) from grpc:\/\/.*ModelInfer: .*max_output_len/,
    );
  });

  it("fails clearly when nothing listens at the endpoint", async () => {
    // A port that was free a moment ago: connection refused, not a fetch-blocked port.
    const port = await new Promise<number>((resolve) => {
      const probe = createServer();
      probe.listen(0, "127.0.0.1", () => {
        const address = probe.address();
        probe.close(() => resolve(typeof address === "object" && address !== null ? address.port : 0));
      });
    });
    const r = await smoke(["--endpoint", `127.0.0.1:${port}`, "--timeout", "5"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      `smoke: FAILED: no HTTP response from http://127.0.0.1:${port}/v2/health/live: cannot reach server`,
    );
    expect(r.stderr).toMatch(/ECONNREFUSED/);
  });
});
