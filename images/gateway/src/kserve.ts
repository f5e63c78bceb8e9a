/**
 * The KServe v2 HTTP API of the ensemble, for existing tritonclient users,
 * behind the same keys and limits as the OpenAI API. Only the ensemble is
 * reachable: its metadata, readiness and `infer` (JSON tensors), plus server
 * health. The internal models, the repository, logging, tracing and
 * shared-memory endpoints are not served (404). `infer` is translated to one
 * ModelStreamInfer call, so it also works while FT runs decoupled (Triton's
 * own HTTP endpoint refuses decoupled models). Errors use the KServe body
 * `{"error": "<message>"}`, which tritonclient reads.
 */
import type { GatewayConfig } from "./config";
import { ApiError, invalid, notFound, tooLarge } from "./errors";
import { type Datatype, type Element, type Tensor, elementCount } from "./tensors";
import type { TritonGateway } from "./triton";
import { REPETITION_PENALTY_MAX, TEMPERATURE_MAX } from "./validate";

/** The ensemble's inputs as the contract defines them (README "Ensemble contract"); dims after the batch dimension. */
const INPUTS: Record<string, { datatype: Datatype; dims: number[]; required: boolean }> = {
  text_input: { datatype: "BYTES", dims: [1], required: true },
  max_tokens: { datatype: "UINT32", dims: [1], required: true },
  bad_words: { datatype: "BYTES", dims: [-1], required: false },
  stop_words: { datatype: "BYTES", dims: [-1], required: false },
  top_k: { datatype: "UINT32", dims: [1], required: false },
  top_p: { datatype: "FP32", dims: [1], required: false },
  temperature: { datatype: "FP32", dims: [1], required: false },
  repetition_penalty: { datatype: "FP32", dims: [1], required: false },
  random_seed: { datatype: "UINT64", dims: [1], required: false },
};
const OUTPUTS = ["text_output", "input_token_count", "output_token_count"];

type Body = Record<string, unknown>;
const isObject = (v: unknown): v is Body => typeof v === "object" && v !== null && !Array.isArray(v);

function flatten(data: unknown): unknown[] {
  return Array.isArray(data) ? data.flatMap(flatten) : [data];
}

function element(name: string, datatype: Datatype, v: unknown, config: GatewayConfig): Element {
  const where = `input '${name}'`;
  if (datatype === "BYTES") {
    if (typeof v !== "string") throw invalid(`${where}: BYTES elements must be JSON strings`, name, "invalid_type");
    return v;
  }
  if (typeof v !== "number" || !Number.isFinite(v))
    throw invalid(`${where}: elements must be finite numbers`, name, "invalid_type");
  if (datatype === "FP32") return v;
  if (!Number.isInteger(v) || v < 0)
    throw invalid(`${where}: elements must be non-negative integers`, name, "invalid_type");
  if (datatype === "UINT32" && v > 0xffffffff) throw invalid(`${where}: ${v} does not fit UINT32`, name);
  if (datatype === "UINT64") {
    if (!Number.isSafeInteger(v)) throw invalid(`${where}: ${v} is beyond 2^53-1 and cannot be exact in JSON`, name);
    return BigInt(v);
  }
  void config;
  return v;
}

/** Range checks of the contract's values, the same as /v1 and preprocessing apply. */
function checkValues(t: Tensor, config: GatewayConfig): void {
  const { maxOutputLen, maxPromptBytes, vocab } = config.model;
  const { maxStop, maxStopBytes } = config.limits;
  const nums = t.data as number[];
  const each = (ok: (v: number) => boolean, rule: string): void => {
    nums.forEach((v, i) => {
      if (!ok(v)) throw invalid(`${t.name}[${i}] is ${v}: ${rule}`, t.name);
    });
  };
  switch (t.name) {
    case "text_input":
      (t.data as string[]).forEach((s, i) => {
        if (s === "") throw invalid(`text_input[${i}]: prompt is empty`, t.name);
        if (Buffer.byteLength(s, "utf8") > maxPromptBytes) {
          throw tooLarge(
            `text_input[${i}] is ${Buffer.byteLength(s, "utf8")} bytes: at most ${maxPromptBytes}`,
            t.name,
            "prompt_too_large",
          );
        }
      });
      return;
    case "max_tokens":
      return each((v) => v >= 1 && v <= maxOutputLen, `must be between 1 and ${maxOutputLen}`);
    case "top_k":
      return each((v) => v <= vocab, `must be between 0 and ${vocab}`);
    case "top_p":
      return each((v) => v > 0 && v <= 1, "must be > 0 and <= 1");
    case "temperature":
      return each((v) => v > 0 && v <= TEMPERATURE_MAX, `must be > 0 and <= ${TEMPERATURE_MAX}`);
    case "repetition_penalty":
      return each((v) => v > 0 && v <= REPETITION_PENALTY_MAX, `must be > 0 and <= ${REPETITION_PENALTY_MAX}`);
    case "stop_words":
    case "bad_words": {
      const perItem = t.shape.slice(1).reduce((n, d) => n * d, 1);
      if (perItem > maxStop) throw invalid(`${t.name}: at most ${maxStop} words per prompt`, t.name);
      (t.data as string[]).forEach((s, i) => {
        if (Buffer.byteLength(s, "utf8") > maxStopBytes)
          throw invalid(`${t.name}[${i}]: at most ${maxStopBytes} bytes`, t.name);
      });
      return;
    }
  }
}

export function parseInferRequest(
  body: unknown,
  config: GatewayConfig,
): { id?: string; inputs: Tensor[]; outputs: string[] } {
  if (!isObject(body)) throw invalid("the request body must be a JSON object");
  for (const key of Object.keys(body)) {
    if (!["id", "inputs", "outputs", "parameters"].includes(key))
      throw invalid(`unknown field '${key}'`, key, "unknown_parameter");
  }
  if (body.parameters !== undefined && !(isObject(body.parameters) && Object.keys(body.parameters).length === 0)) {
    throw invalid("request parameters are not supported through the gateway", "parameters", "unsupported_parameter");
  }
  if (body.id !== undefined && typeof body.id !== "string") throw invalid("id must be a string", "id", "invalid_type");
  if (!Array.isArray(body.inputs) || body.inputs.length === 0)
    throw invalid("inputs must be a non-empty array", "inputs");
  let batch: number | undefined;
  const seen = new Set<string>();
  const inputs = body.inputs.map((raw, i): Tensor => {
    if (!isObject(raw)) throw invalid(`inputs[${i}] must be an object`, "inputs", "invalid_type");
    const { name, datatype, shape, data } = raw;
    if (typeof name !== "string" || !(name in INPUTS)) {
      throw invalid(
        `inputs[${i}]: '${String(name)}' is not an input of the ensemble (${Object.keys(INPUTS).join(", ")})`,
        "inputs",
      );
    }
    if (seen.has(name)) throw invalid(`input '${name}' is given twice`, name);
    seen.add(name);
    if (raw.parameters !== undefined && !(isObject(raw.parameters) && Object.keys(raw.parameters).length === 0)) {
      throw invalid(
        `input '${name}': tensor parameters (binary data, shared memory) are not supported through the gateway`,
        name,
        "unsupported_parameter",
      );
    }
    const spec = INPUTS[name];
    if (datatype !== spec.datatype)
      throw invalid(`input '${name}' has datatype ${String(datatype)}, expected ${spec.datatype}`, name);
    if (
      !Array.isArray(shape) ||
      shape.length !== spec.dims.length + 1 ||
      !shape.every((d) => Number.isInteger(d) && d >= 1)
    ) {
      throw invalid(
        `input '${name}' must have shape [batch, ${spec.dims.map((d) => (d < 0 ? "n" : d)).join(", ")}]`,
        name,
      );
    }
    spec.dims.forEach((d, j) => {
      if (d > 0 && shape[j + 1] !== d)
        throw invalid(`input '${name}' must have shape [batch, ${spec.dims.join(", ")}]`, name);
    });
    batch ??= shape[0] as number;
    if (shape[0] !== batch)
      throw invalid(`input '${name}' has batch size ${shape[0]}, other inputs have ${batch}`, name);
    const flat = flatten(data);
    if (flat.length !== elementCount(shape as number[])) {
      throw invalid(
        `input '${name}': shape [${shape.join(", ")}] needs ${elementCount(shape as number[])} elements, got ${flat.length}`,
        name,
      );
    }
    const tensor: Tensor = {
      name,
      datatype: spec.datatype,
      shape: shape as number[],
      data: flat.map((v) => element(name, spec.datatype, v, config)),
    };
    checkValues(tensor, config);
    return tensor;
  });
  for (const [name, spec] of Object.entries(INPUTS)) {
    if (spec.required && !seen.has(name))
      throw invalid(`missing required input '${name}'`, name, "missing_required_parameter");
  }
  if ((batch ?? 0) > config.model.maxBatchSize)
    throw invalid(`batch size ${batch} is above the model's ${config.model.maxBatchSize}`, "inputs");
  let outputs = OUTPUTS;
  if (body.outputs !== undefined) {
    if (!Array.isArray(body.outputs)) throw invalid("outputs must be an array", "outputs", "invalid_type");
    outputs = body.outputs.map((o, i) => {
      if (!isObject(o) || typeof o.name !== "string" || !OUTPUTS.includes(o.name)) {
        throw invalid(`outputs[${i}] must name one of ${OUTPUTS.join(", ")}`, "outputs");
      }
      if (o.parameters !== undefined && !(isObject(o.parameters) && Object.keys(o.parameters).length === 0)) {
        throw invalid(
          `output '${o.name}': binary data is not supported through the gateway; send binary_data=False`,
          "outputs",
          "unsupported_parameter",
        );
      }
      return o.name;
    });
  }
  return { id: body.id as string | undefined, inputs, outputs };
}

export interface InferResult {
  model_name: string;
  model_version: string;
  id?: string;
  outputs: { name: string; datatype: string; shape: number[]; data: (string | number)[] }[];
}

export async function infer(
  triton: TritonGateway,
  request: { id?: string; inputs: Tensor[]; outputs: string[] },
  options: { signal: AbortSignal; deadline: number; timeoutSeconds: number },
): Promise<InferResult> {
  let last: Map<string, Tensor> | undefined;
  for await (const outputs of triton.stream(request.inputs, { ...options, requestId: request.id })) last = outputs;
  if (options.signal.aborted && options.signal.reason instanceof ApiError) throw options.signal.reason;
  if (!last) throw new ApiError(502, "server_error", "the inference server returned no response", "upstream_error");
  const final = last;
  return {
    model_name: triton.ensemble,
    model_version: "1",
    ...(request.id ? { id: request.id } : {}),
    outputs: request.outputs.map((name) => {
      const t = final.get(name);
      if (!t) throw new ApiError(502, "server_error", `the inference server returned no ${name}`, "upstream_error");
      return {
        name,
        datatype: t.datatype,
        shape: t.shape,
        data: t.data.map((v) => (v instanceof Uint8Array ? Buffer.from(v).toString("utf8") : Number(v))),
      };
    }),
  };
}

export function checkEnsemble(model: string, triton: TritonGateway): void {
  if (model !== triton.ensemble) {
    throw notFound(
      `model '${model}' is not served here: only '${triton.ensemble}' is reachable through the gateway`,
      "model_not_found",
    );
  }
}
