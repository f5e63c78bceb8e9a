/**
 * The official Python clients against the gateway in front of the vLLM model (test/vllm/gatewaySetup.ts):
 * `openai` (from the vLLM venv, test/vllm/openai_client.py) with logprobs and top alternatives, and
 * `tritonclient[http]` (the real-server venv, the gateway suite's test/gateway/tritonclient_http.py) with
 * its binary-tensor defaults and with binary_data=False. Each script prints what it saw; this file judges.
 */
import { execFileSync } from "node:child_process";
import path from "node:path";
import { beforeAll, describe, expect, inject, it } from "vitest";
import { venvPython } from "../lib/pyenv";
import { ROOT } from "../gateway/harness";

const h = inject("vllmGateway");
const GPT2 = h.vllm.models.gpt2;

function run(python: string, script: string, args: string[]): Record<string, unknown> {
  const stdout = execFileSync(python, [path.join(ROOT, script), ...args], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
    timeout: 240_000,
  });
  return JSON.parse(stdout.trim().split("\n").pop() ?? "{}") as Record<string, unknown>;
}

interface OpenaiSeen {
  models: string[];
  completion: {
    text: string;
    tokens: string[];
    token_logprobs: number[];
    top_logprobs: Record<string, number>[];
    usage: { completion_tokens: number };
  };
  stream: { text: string; tokens: string[]; top_logprobs: Record<string, number>[] };
  chat: { token: string; logprob: number; top: [string, number, number[]][] }[];
  refusal: { status: number; param: string | null } | null;
}

describe("the openai Python client, vLLM model", () => {
  let seen: OpenaiSeen;
  beforeAll(() => {
    const python = h.vllm.python;
    seen = run(python, "test/vllm/openai_client.py", [
      `${h.gateway.url}/v1`,
      h.gateway.keys.catalogue,
      GPT2.id,
    ]) as unknown as OpenaiSeen;
  }, 300_000);

  it("parses completions logprobs with top alternatives, streamed the same", () => {
    expect(seen.models).toContain(GPT2.id);
    const c = seen.completion;
    expect(c.tokens).toHaveLength(c.usage.completion_tokens);
    expect(c.top_logprobs).toHaveLength(c.tokens.length);
    c.top_logprobs.forEach((top, i) => {
      expect(Object.keys(top).length).toBeGreaterThanOrEqual(1);
      expect(Object.keys(top).length).toBeLessThanOrEqual(4);
      expect(Math.max(...Object.values(top))).toBeCloseTo(c.token_logprobs[i], 5);
    });
    expect(seen.stream).toEqual({ text: c.text, tokens: c.tokens, top_logprobs: c.top_logprobs });
  });

  it("parses chat top_logprobs, the greedy token first, with its bytes", () => {
    expect(seen.chat.length).toBeGreaterThan(0);
    for (const entry of seen.chat) {
      expect(entry.top).toHaveLength(2);
      expect(entry.top[0][0]).toBe(entry.token);
      expect(entry.top[0][1]).toBeCloseTo(entry.logprob, 5);
      expect(entry.top[0][2]).toEqual([...Buffer.from(entry.token, "utf8")]);
    }
  });

  it("raises BadRequestError for more alternatives than the model serves", () => {
    expect(seen.refusal).toEqual({ status: 400, param: "logprobs" });
  });
});

interface Run {
  binary_outputs: string[];
  text: string[];
  text_shape: number[];
  output_token_count: number[];
}

describe("tritonclient (HTTP) through the gateway, vLLM model", () => {
  let seen: Record<string, unknown>;
  beforeAll(() => {
    const hostPort = new URL(h.gateway.url).host;
    seen = run(venvPython(), "test/gateway/tritonclient_http.py", [hostPort, h.gateway.keys.catalogue, GPT2.id]);
  }, 300_000);

  it("sees health, readiness, the binary extension and the model's metadata (vLLM's extra input among them)", () => {
    expect(seen.live && seen.ready && seen.model_ready).toBe(true);
    expect(seen.server_extensions).toContain("binary_tensor_data");
    expect(seen.metadata_inputs).toEqual(expect.arrayContaining(["text_input", "max_tokens", "top_logprobs"]));
  });

  it("infers with binary tensors both ways, with JSON tensors and mixed: the same shapes, counts within max_tokens", () => {
    // Sampling inputs left out mean vLLM's defaults (temperature 1, sampled): texts differ per call, shapes do not.
    const runs = ["binary_default", "json_only", "mixed", "after_errors"].map((name) => seen[name] as Run);
    expect(runs.map((r) => r.binary_outputs)).toEqual([
      ["input_token_count", "output_token_count", "text_output"],
      [],
      ["text_output"],
      ["input_token_count", "output_token_count", "text_output"],
    ]);
    for (const r of runs) {
      expect(r.text_shape).toEqual([3, 1]);
      r.output_token_count.forEach((n, i) => expect(n).toBeLessThanOrEqual([3, 1, 4][i]));
    }
    expect((seen.binary_sampling as Run).output_token_count[0]).toBeLessThanOrEqual(2);
  });

  it("reports refusals with their HTTP status", () => {
    const errors = seen.errors as Record<string, { status: string | null; message?: string }>;
    expect(errors.max_tokens_too_large.status).toBe("400");
    expect(errors.empty_prompt.status).toBe("400");
    expect(errors.bad_key.status).toBe("401");
  });
});
