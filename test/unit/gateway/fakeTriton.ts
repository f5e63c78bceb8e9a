/**
 * An in-memory Triton for the in-process route tests: the same TritonClient
 * interface the gateway's gRPC client implements, answering like the
 * decoupled ensemble (one response per generated token, cumulative
 * text_output plus the token counts). Tests steer it: not ready, a refusal
 * before the first token, a failure mid-stream, or a gate that holds every
 * generation in flight until the test opens it.
 */
import type { ApiError } from "../../../images/gateway/src/server/apiError";
import type { Tensor } from "../../../images/gateway/src/triton/tensors";
import type { ModelMetadata, StreamOptions, TritonClient } from "../../../images/gateway/src/triton/tritonClient";

/**
 * The token the fake generates at position i (1-based): the text grows by
 * " t1", " t2", ... Copy `row` > 0 of a batched request (n, best_of) writes
 * " c<row>t1", ... so copies differ, as differently seeded samples do.
 */
export const token = (i: number, row = 0): string => (row === 0 ? ` t${i}` : ` c${row}t${i}`);

/** FT's log probability (output_log_probs) of the fake's token i (1-based) of copy `row`. */
export const logprob = (i: number, row = 0): number => -(1 + ((i + row) % 7)) / 8;

/**
 * The k top alternatives of the fake's token i of copy `row`, by rank, as a vLLM model returns them:
 * the sampled token first (greedy), then " a1", " a2", ... each less likely.
 */
export const alternatives = (i: number, k: number, row = 0): { text: string; logprob: number }[] =>
  Array.from({ length: k }, (_, rank) =>
    rank === 0
      ? { text: token(i, row), logprob: logprob(i, row) }
      : { text: ` a${rank}`, logprob: logprob(i, row) - rank },
  );

export class FakeTriton implements TritonClient {
  readonly ensemble = "ensemble";
  isLive = true;
  isReady = true;
  /** Thrown by the next generations before their first response (a Triton refusal). */
  refuseWith: ApiError | undefined;
  /** Thrown by the next generations after their first token. */
  failMidStreamWith: Error | undefined;
  /** Thrown by the next generations after their last response (a failed final status). */
  failAtEndWith: Error | undefined;
  /** Every generation's inputs, in call order. */
  readonly calls: Tensor[][] = [];
  /** Every generation's requested outputs (undefined: all), in call order. */
  readonly outputsAsked: Array<readonly string[] | undefined> = [];
  /** The inputs given to prepare(), in call order (the gateway builds them while admission decides). */
  readonly prepared: Tensor[][] = [];
  /** Thrown by prepare(), as a request the client cannot serialize. */
  prepareFailsWith: Error | undefined;
  private gate: Promise<void> | undefined;
  private openGate: (() => void) | undefined;
  /** Tokens after which every generation ends (an end of text before max_tokens); undefined: max_tokens. */
  endAfter: number | undefined;
  /** Generations that have sent their last response and wait at the end gate. */
  atEnd = 0;
  private endGate: Promise<void> | undefined;
  private openEndGate: (() => void) | undefined;

  /** Hold every generation before its first response until `release()`. */
  hold(): void {
    this.gate = new Promise((resolve) => (this.openGate = resolve));
  }

  release(): void {
    this.openGate?.();
    this.gate = undefined;
  }

  /** Hold every generation after its last response, before its stream ends (Triton's final status), until `releaseEnd()`. */
  holdEnd(): void {
    this.endGate = new Promise((resolve) => (this.openEndGate = resolve));
  }

  releaseEnd(): void {
    this.openEndGate?.();
    this.endGate = undefined;
  }

  async live(): Promise<boolean> {
    return this.isLive;
  }

  async ready(): Promise<boolean> {
    return this.isReady;
  }

  async metadata(): Promise<ModelMetadata> {
    return {
      name: this.ensemble,
      versions: ["1"],
      platform: "ensemble",
      inputs: [{ name: "text_input", datatype: "BYTES", shape: [-1, 1] }],
      outputs: [{ name: "text_output", datatype: "BYTES", shape: [-1, 1] }],
    };
  }

  prepare(inputs: Tensor[]): void {
    if (this.prepareFailsWith) throw this.prepareFailsWith;
    this.prepared.push(inputs);
  }

  async *stream(inputs: Tensor[], options: StreamOptions): AsyncGenerator<Map<string, Tensor>> {
    this.calls.push(inputs);
    this.outputsAsked.push(options.outputs);
    const byName = new Map(inputs.map((t) => [t.name, t]));
    const prompts = (byName.get("text_input")?.data ?? []).map(String);
    const maxTokens = (byName.get("max_tokens")?.data ?? []).map(Number);
    // A vLLM model's extra input (docs/vllm.md): the top alternatives per token, the same for every row.
    const topK = Number(byName.get("top_logprobs")?.data[0] ?? 0);
    if (this.gate) await Promise.race([this.gate, aborted(options.signal)]);
    if (options.signal.aborted) return;
    if (this.refuseWith) throw this.refuseWith;
    const steps = Math.min(Math.max(...maxTokens), this.endAfter ?? Number.MAX_SAFE_INTEGER);
    for (let step = 1; step <= steps; step++) {
      if (options.signal.aborted) return;
      if (step === 2 && this.failMidStreamWith) throw this.failMidStreamWith;
      yield outputs(prompts, maxTokens, step, topK);
      // A turn of the event loop between tokens, as a real stream has.
      await new Promise((resolve) => setImmediate(resolve));
    }
    if (this.endGate) {
      this.atEnd += 1;
      await Promise.race([this.endGate, aborted(options.signal)]);
    }
    if (this.failAtEndWith) throw this.failAtEndWith;
  }
}

function aborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }));
}

/** The ensemble's outputs after `step` tokens: one row per prompt, each capped at its own max_tokens. */
function outputs(prompts: string[], maxTokens: number[], step: number, topK: number): Map<string, Tensor> {
  const counts = prompts.map((_, row) => Math.min(step, maxTokens[row] ?? step));
  const pieces = counts.map((n, row) => Array.from({ length: n }, (_, i) => token(i + 1, row)));
  const probs = counts.map((n, row) => Array.from({ length: n }, (_, i) => logprob(i + 1, row)));
  const texts = pieces.map((p) => p.join(""));
  const rows = prompts.length;
  const width = Math.max(1, ...counts);
  const pad = <T>(values: T[][], fill: T): T[] =>
    values.flatMap((v) => [...v, ...Array<T>(width - v.length).fill(fill)]);
  const result = new Map<string, Tensor>([
    [
      "text_output",
      {
        name: "text_output",
        datatype: "BYTES",
        shape: [rows, 1],
        data: texts.map((t) => new Uint8Array(Buffer.from(t, "utf8"))),
      },
    ],
    [
      "input_token_count",
      {
        name: "input_token_count",
        datatype: "UINT32",
        shape: [rows, 1],
        data: prompts.map((p) => p.split(" ").length),
      },
    ],
    ["output_token_count", { name: "output_token_count", datatype: "UINT32", shape: [rows, 1], data: counts }],
    ["output_log_probs", { name: "output_log_probs", datatype: "FP32", shape: [rows, width], data: pad(probs, 0) }],
    [
      "cum_log_probs",
      {
        name: "cum_log_probs",
        datatype: "FP32",
        shape: [rows, 1],
        data: probs.map((p) => p.reduce((a, b) => a + b, 0)),
      },
    ],
    [
      "output_tokens",
      {
        name: "output_tokens",
        datatype: "BYTES",
        shape: [rows, width],
        data: pad(pieces, "").map((t) => new Uint8Array(Buffer.from(t, "utf8"))),
      },
    ],
  ]);
  if (topK > 0) {
    // [rows, tokens, k], padded as the vLLM model pads: "" with log probability -inf.
    const top = counts.map((n, row) =>
      Array.from({ length: width }, (_, i) => (i < n ? alternatives(i + 1, topK, row) : [])),
    );
    const cell = <T>(f: (a: { text: string; logprob: number } | undefined) => T): T[] =>
      top.flatMap((tokens) => tokens.flatMap((alts) => Array.from({ length: topK }, (_, k) => f(alts[k]))));
    result.set("output_top_tokens", {
      name: "output_top_tokens",
      datatype: "BYTES",
      shape: [rows, width, topK],
      data: cell((a) => new Uint8Array(Buffer.from(a?.text ?? "", "utf8"))),
    });
    result.set("output_top_log_probs", {
      name: "output_top_log_probs",
      datatype: "FP32",
      shape: [rows, width, topK],
      data: cell((a) => a?.logprob ?? Number.NEGATIVE_INFINITY),
    });
  }
  return result;
}

/** The in-memory Triton's address in those configs (never dialled: the fake replaces the client). */
export const TEST_TRITON = { grpc: "in-memory:8001" } as const;

/**
 * One entry of the in-process suites' gateway config (`models`): a small GPT-J-shaped model with a
 * chat template, served through the in-memory Triton above.
 */
export const TEST_MODEL = {
  id: "m",
  maxInputLen: 512,
  maxOutputLen: 256,
  maxBatchSize: 8,
  vocab: 50400,
  maxPromptBytes: 4096,
  chatTemplate: { user: "<user>: ", assistant: "<bot>: ", turnEnd: "\n", stop: ["<user>:"] },
  triton: TEST_TRITON,
  maxInflight: 64,
} as const;

/** TEST_MODEL served by vLLM (docs/vllm.md): up to 5 top alternatives per token. */
export const VLLM_MODEL = { ...TEST_MODEL, id: "v", engine: "vllm", maxLogprobs: 5 } as const;

/**
 * A second model for the routing cases: other limits, no chat template, its own Triton (so one can
 * be down while the other serves).
 */
export const OTHER_MODEL = {
  id: "other",
  maxInputLen: 64,
  maxOutputLen: 8,
  maxBatchSize: 2,
  vocab: 512,
  maxPromptBytes: 2048,
  triton: { grpc: "in-memory:8002" },
  maxInflight: 4,
} as const;
