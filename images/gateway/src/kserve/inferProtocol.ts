/**
 * The KServe v2 HTTP API of each served model's ensemble, for existing
 * tritonclient users, behind the same keys and limits as the OpenAI API. The
 * model name on the path is the OpenAI model id (`/v2/models/<id>/infer` goes
 * to that model's ensemble). Only the ensembles are reachable: their metadata,
 * readiness and `infer`, plus server health. The
 * internal models, the repository, logging, tracing and shared-memory
 * endpoints are not served (404). `infer` is translated to one
 * ModelStreamInfer call, so it also works while FT runs decoupled (Triton's
 * own HTTP endpoint refuses decoupled models). Errors use the KServe body
 * `{"error": "<message>"}`, which tritonclient reads.
 *
 * Tensors come as JSON or with Triton's binary tensor data extension
 * (tritonclient's default): the body is a JSON header of
 * `Inference-Header-Content-Length` bytes followed by the raw inputs that
 * declare `parameters.binary_data_size`, in input order; outputs requested
 * with `binary_data` (or all, with the request's `binary_data_output`) come
 * back the same way. Every length is checked against the body before a byte
 * is read, so a bad body is a 400.
 */
import { ApiError, invalid, tooLarge } from "../server/apiError";
import type { ServedModel } from "../models/modelRouter";
import { type Datatype, type Element, type Tensor, decode, elementCount, encode } from "../triton/tensors";
import { type ModelRules, REPETITION_PENALTY_MAX, TEMPERATURE_MAX } from "../openai/validate";

/** The ensemble's inputs as the contract defines them (docs/architecture.md "Ensemble contract"); dims after the batch dimension. */
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

function element(name: string, datatype: Datatype, v: unknown): Element {
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
  return v;
}

const UTF8 = new TextDecoder("utf-8", { fatal: true });

/** One input's raw bytes (binary extension) as elements, with the same type rules as JSON data. */
function binaryElements(name: string, datatype: Datatype, shape: number[], raw: Buffer): Element[] {
  let t: Tensor;
  try {
    t = decode(name, datatype, shape, raw);
  } catch (error) {
    throw invalid(`input '${name}': ${(error as Error).message}`, name, "invalid_binary_data");
  }
  return t.data.map((v, i): Element => {
    if (v instanceof Uint8Array) {
      try {
        return UTF8.decode(v);
      } catch {
        throw invalid(`input '${name}'[${i}]: BYTES element is not valid UTF-8 text`, name, "invalid_binary_data");
      }
    }
    if (typeof v === "number" && !Number.isFinite(v))
      throw invalid(`input '${name}': elements must be finite numbers`, name, "invalid_value");
    return v as Element;
  });
}

/** Range checks of the contract's values, the same as /v1 and preprocessing apply. */
function checkValues(t: Tensor, rules: ModelRules): void {
  const { maxOutputLen, maxPromptBytes, vocab } = rules.model;
  const { maxStop, maxStopBytes } = rules.limits;
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

/** An output the client asked for, and whether it wants it as binary data. */
export interface RequestedOutput {
  name: string;
  binary: boolean;
}

export interface InferRequest {
  id?: string;
  inputs: Tensor[];
  outputs: RequestedOutput[];
}

const isCount = (v: unknown): v is number => typeof v === "number" && Number.isSafeInteger(v) && v >= 0;

/** Only the named parameters, each of the given type; anything else is a clear 400 (shared memory, sequences...). */
function checkParameters(
  where: string,
  param: string,
  value: unknown,
  allowed: Record<string, (v: unknown) => boolean>,
): Body {
  if (value === undefined) return {};
  if (!isObject(value)) throw invalid(`${where}: parameters must be an object`, param, "invalid_type");
  for (const [key, v] of Object.entries(value)) {
    const ok = allowed[key];
    if (!ok) {
      throw invalid(
        `${where}: parameter '${key}' is not supported through the gateway (shared memory, sequences, ` +
          `priorities and classification are not served)`,
        param,
        "unsupported_parameter",
      );
    }
    if (!ok(v)) throw invalid(`${where}: parameter '${key}' has an invalid value ${JSON.stringify(v)}`, param);
  }
  return value;
}

/**
 * Split an infer body: all JSON, or (binary extension) a JSON header of
 * `headerLength` bytes and the raw tensor bytes after it.
 */
export function splitInferBody(
  body: Buffer,
  headerLength: string | string[] | undefined,
): { header: unknown; binary?: Buffer } {
  const parse = (bytes: Buffer, what: string): unknown => {
    if (bytes.length === 0) throw invalid(`the ${what} is empty`, null, "invalid_body");
    try {
      return JSON.parse(bytes.toString("utf8"));
    } catch (error) {
      throw invalid(`the ${what} is not valid JSON: ${(error as Error).message}`, null, "invalid_json");
    }
  };
  if (headerLength === undefined) return { header: parse(body, "request body") };
  if (typeof headerLength !== "string" || !/^\d{1,15}$/.test(headerLength.trim())) {
    throw invalid(
      `Inference-Header-Content-Length must be one decimal byte count, got ${JSON.stringify(headerLength)}`,
      null,
      "invalid_binary_data",
    );
  }
  const length = Number(headerLength.trim());
  if (length === 0 || length > body.length) {
    throw invalid(
      `Inference-Header-Content-Length is ${length} but the body has ${body.length} bytes: the JSON header must fit in the body`,
      null,
      "invalid_binary_data",
    );
  }
  return { header: parse(body.subarray(0, length), "JSON header"), binary: body.subarray(length) };
}

export function parseInferRequest(body: unknown, rules: ModelRules, binary?: Buffer): InferRequest {
  if (!isObject(body)) throw invalid("the request body must be a JSON object");
  for (const key of Object.keys(body)) {
    if (!["id", "inputs", "outputs", "parameters"].includes(key))
      throw invalid(`unknown field '${key}'`, key, "unknown_parameter");
  }
  const requestParams = checkParameters("request", "parameters", body.parameters, {
    binary_data_output: (v) => typeof v === "boolean",
  });
  const binaryDefault = requestParams.binary_data_output === true;
  if (body.id !== undefined && typeof body.id !== "string") throw invalid("id must be a string", "id", "invalid_type");
  if (!Array.isArray(body.inputs) || body.inputs.length === 0)
    throw invalid("inputs must be a non-empty array", "inputs");
  let batch: number | undefined;
  let offset = 0;
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
    const params = checkParameters(`input '${name}'`, name, raw.parameters, { binary_data_size: isCount });
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
    let elements: Element[];
    if (params.binary_data_size !== undefined) {
      const size = params.binary_data_size as number;
      if (binary === undefined) {
        throw invalid(
          `input '${name}': binary_data_size needs the binary body format (Inference-Header-Content-Length header)`,
          name,
          "invalid_binary_data",
        );
      }
      if (data !== undefined) throw invalid(`input '${name}': give either data or binary_data_size`, name);
      if (offset + size > binary.length) {
        throw invalid(
          `input '${name}': binary_data_size ${size} runs past the end of the body (${binary.length - offset} bytes left)`,
          name,
          "invalid_binary_data",
        );
      }
      elements = binaryElements(name, spec.datatype, shape as number[], binary.subarray(offset, offset + size));
      offset += size;
    } else {
      const flat = flatten(data);
      if (data === undefined || flat.length !== elementCount(shape as number[])) {
        throw invalid(
          `input '${name}': shape [${shape.join(", ")}] needs ${elementCount(shape as number[])} elements, got ${data === undefined ? 0 : flat.length}`,
          name,
        );
      }
      elements = flat.map((v) => element(name, spec.datatype, v));
    }
    const tensor: Tensor = { name, datatype: spec.datatype, shape: shape as number[], data: elements };
    checkValues(tensor, rules);
    return tensor;
  });
  if (binary !== undefined && offset !== binary.length) {
    throw invalid(
      `the body has ${binary.length - offset} bytes after the last input's binary data (binary_data_size of the inputs adds up to ${offset})`,
      null,
      "invalid_binary_data",
    );
  }
  for (const [name, spec] of Object.entries(INPUTS)) {
    if (spec.required && !seen.has(name))
      throw invalid(`missing required input '${name}'`, name, "missing_required_parameter");
  }
  if ((batch ?? 0) > rules.model.maxBatchSize)
    throw invalid(`batch size ${batch} is above the model's ${rules.model.maxBatchSize}`, "inputs");
  let outputs: RequestedOutput[] = OUTPUTS.map((name) => ({ name, binary: binaryDefault }));
  if (body.outputs !== undefined) {
    if (!Array.isArray(body.outputs)) throw invalid("outputs must be an array", "outputs", "invalid_type");
    outputs = body.outputs.map((o, i) => {
      if (!isObject(o) || typeof o.name !== "string" || !OUTPUTS.includes(o.name)) {
        throw invalid(`outputs[${i}] must name one of ${OUTPUTS.join(", ")}`, "outputs");
      }
      const params = checkParameters(`output '${o.name}'`, "outputs", o.parameters, {
        binary_data: (v) => typeof v === "boolean",
      });
      return { name: o.name, binary: typeof params.binary_data === "boolean" ? params.binary_data : binaryDefault };
    });
  }
  return { id: body.id as string | undefined, inputs, outputs };
}

export interface InferOutputJson {
  name: string;
  datatype: string;
  shape: number[];
  data?: (string | number)[];
  parameters?: { binary_data_size: number };
}

export interface InferResult {
  model_name: string;
  model_version: string;
  id?: string;
  outputs: InferOutputJson[];
}

/** The response: its JSON, and the raw bytes of the outputs asked for as binary, in output order. */
export interface InferReply {
  json: InferResult;
  binary: Buffer[];
  /** Token counts of the whole batch, for usage metrics, whichever outputs were asked for. */
  promptTokens: number;
  completionTokens: number;
}

export async function infer(
  model: Pick<ServedModel, "config" | "triton">,
  request: InferRequest,
  options: { signal: AbortSignal; deadline: number; timeoutSeconds: number },
): Promise<InferReply> {
  let last: Map<string, Tensor> | undefined;
  for await (const outputs of model.triton.stream(request.inputs, { ...options, requestId: request.id }))
    last = outputs;
  if (options.signal.aborted && options.signal.reason instanceof ApiError) throw options.signal.reason;
  if (!last) throw new ApiError(502, "server_error", "the inference server returned no response", "upstream_error");
  const final = last;
  const binary: Buffer[] = [];
  const outputs = request.outputs.map(({ name, binary: asBinary }): InferOutputJson => {
    const t = final.get(name);
    if (!t) throw new ApiError(502, "server_error", `the inference server returned no ${name}`, "upstream_error");
    if (asBinary) {
      // Triton's own bytes: BYTES keep their 4-byte length prefixes, numbers are little-endian.
      const raw = encode(t);
      binary.push(raw);
      return { name, datatype: t.datatype, shape: t.shape, parameters: { binary_data_size: raw.length } };
    }
    return {
      name,
      datatype: t.datatype,
      shape: t.shape,
      data: t.data.map((v) => (v instanceof Uint8Array ? Buffer.from(v).toString("utf8") : Number(v))),
    };
  });
  const total = (name: string): number =>
    ((final.get(name)?.data ?? []) as Element[]).reduce<number>((a, b) => a + Number(b), 0);
  return {
    promptTokens: total("input_token_count"),
    completionTokens: total("output_token_count"),
    json: {
      // The name the client addressed: the ensemble's own name is Triton's business.
      model_name: model.config.id,
      model_version: "1",
      ...(request.id ? { id: request.id } : {}),
      outputs,
    },
    binary,
  };
}
