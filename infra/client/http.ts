/**
 * KServe v2 (Triton) HTTP client: health, model readiness and metadata, and
 * inference with JSON or binary tensors. Uses Node's global fetch only.
 */
import {
  type ClientOptions,
  type InferRequest,
  type InferResponse,
  type ModelMetadata,
  type TensorMetadata,
  type TritonClient,
  TritonClientError,
} from "./api";
import {
  type Datatype,
  type Tensor,
  type TensorValue,
  checkShape,
  decodeBinary,
  encodeBinary,
  isDatatype,
  jsonData,
  needsBinary,
} from "./tensors";

export { TritonClientError, outputNumbers, outputStrings } from "./api";
export type { ClientOptions, InferRequest, InferResponse, ModelMetadata, TensorMetadata, TritonClient } from "./api";

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

function isObject(value: Json | undefined): value is { [key: string]: Json } {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function field(obj: { [key: string]: Json }, key: string, where: string): Json {
  const value = obj[key];
  if (value === undefined) throw new TypeError(`${where}: missing "${key}"`);
  return value;
}

function stringField(obj: { [key: string]: Json }, key: string, where: string): string {
  const value = field(obj, key, where);
  if (typeof value !== "string") throw new TypeError(`${where}: "${key}" is not a string`);
  return value;
}

function shapeField(obj: { [key: string]: Json }, where: string): number[] {
  const value = field(obj, "shape", where);
  if (!Array.isArray(value) || value.some((d) => typeof d !== "number")) {
    throw new TypeError(`${where}: "shape" is not a list of numbers`);
  }
  return value as number[];
}

function tensorMetadata(value: Json, where: string): TensorMetadata {
  if (!isObject(value)) throw new TypeError(`${where}: not an object`);
  return {
    name: stringField(value, "name", where),
    datatype: stringField(value, "datatype", where),
    shape: shapeField(value, where),
  };
}

/** Normalise "host:port" or a URL to an origin-plus-path base without a trailing slash. */
export function normaliseEndpoint(endpoint: string): string {
  const trimmed = endpoint.trim().replace(/\/+$/, "");
  if (trimmed === "") throw new TypeError("endpoint is empty");
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(trimmed) ? trimmed : `http://${trimmed}`;
  const url = new URL(withScheme);
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new TypeError(`endpoint ${endpoint}: only http:// and https:// are supported`);
  }
  return withScheme;
}

export class TritonHttpClient implements TritonClient {
  readonly protocol = "http" as const;
  readonly baseUrl: string;
  private readonly timeoutMs: number;

  constructor(endpoint: string, options: ClientOptions = {}) {
    this.baseUrl = normaliseEndpoint(endpoint);
    this.timeoutMs = options.timeoutMs ?? 60_000;
  }

  private async call(
    method: "GET" | "POST",
    path: string,
    body?: Uint8Array,
    headers?: Record<string, string>,
  ): Promise<Response> {
    const url = `${this.baseUrl}${path}`;
    try {
      return await fetch(url, {
        method,
        headers,
        body,
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (error) {
      const cause = error instanceof Error && error.cause instanceof Error ? `: ${error.cause.message}` : "";
      const message =
        error instanceof Error && error.name === "TimeoutError"
          ? `no response within ${this.timeoutMs} ms`
          : `cannot reach server (${error instanceof Error ? error.message : String(error)}${cause})`;
      throw new TritonClientError(url, undefined, message);
    }
  }

  private async failure(response: Response): Promise<TritonClientError> {
    const text = await response.text();
    let message = text.trim();
    try {
      const parsed = JSON.parse(text) as Json;
      if (isObject(parsed) && typeof parsed.error === "string") message = parsed.error;
    } catch {
      // Not JSON (a proxy's error page, say): keep the raw body as the message.
    }
    return new TritonClientError(response.url || this.baseUrl, response.status, message);
  }

  private async probe(path: string): Promise<boolean> {
    const response = await this.call("GET", path);
    await response.arrayBuffer();
    return response.status === 200;
  }

  /** Nothing to release: fetch pools its own connections. */
  close(): void {}

  /** GET /v2/health/live: the server process is up. */
  isLive(): Promise<boolean> {
    return this.probe("/v2/health/live");
  }

  /** GET /v2/health/ready: every model the server loads is ready. */
  isReady(): Promise<boolean> {
    return this.probe("/v2/health/ready");
  }

  isModelReady(model: string, version?: string): Promise<boolean> {
    return this.probe(`${modelPath(model, version)}/ready`);
  }

  async modelMetadata(model: string, version?: string): Promise<ModelMetadata> {
    const response = await this.call("GET", modelPath(model, version));
    if (!response.ok) throw await this.failure(response);
    const body = (await response.json()) as Json;
    const where = `metadata of ${model}`;
    if (!isObject(body)) throw new TypeError(`${where}: not an object`);
    const list = (key: string): TensorMetadata[] => {
      const value = body[key] ?? [];
      if (!Array.isArray(value)) throw new TypeError(`${where}: "${key}" is not a list`);
      return value.map((item, i) => tensorMetadata(item, `${where}.${key}[${i}]`));
    };
    const versions = body.versions ?? [];
    return {
      name: stringField(body, "name", where),
      versions: Array.isArray(versions) ? versions.map(String) : [],
      platform: typeof body.platform === "string" ? body.platform : "",
      inputs: list("inputs"),
      outputs: list("outputs"),
    };
  }

  /** POST /v2/models/<model>/infer. Throws TritonClientError with Triton's message on an error response. */
  async infer(model: string, request: InferRequest, version?: string): Promise<InferResponse> {
    const { body, headers } = encodeInferRequest(request);
    const response = await this.call("POST", `${modelPath(model, version)}/infer`, body, headers);
    if (!response.ok) throw await this.failure(response);
    const headerLength = response.headers.get("inference-header-content-length");
    const bytes = new Uint8Array(await response.arrayBuffer());
    return decodeInferResponse(bytes, headerLength === null ? undefined : Number(headerLength));
  }
}

function modelPath(model: string, version?: string): string {
  const base = `/v2/models/${encodeURIComponent(model)}`;
  return version === undefined ? base : `${base}/versions/${encodeURIComponent(version)}`;
}

const utf8 = new TextEncoder();

/** JSON header plus binary tail, per the binary tensor extension. */
export function encodeInferRequest(request: InferRequest): { body: Uint8Array; headers: Record<string, string> } {
  const binaries: Uint8Array[] = [];
  const inputs = request.inputs.map((tensor) => {
    checkShape(tensor);
    const base = { name: tensor.name, datatype: tensor.datatype, shape: tensor.shape };
    if (needsBinary(tensor)) {
      const raw = encodeBinary(tensor);
      binaries.push(raw);
      return { ...base, parameters: { binary_data_size: raw.length } };
    }
    return { ...base, data: jsonData(tensor) };
  });
  const header: Record<string, unknown> = { inputs };
  if (request.id !== undefined) header.id = request.id;
  if (request.outputs !== undefined) {
    header.outputs = request.outputs.map((name) => ({
      name,
      parameters: { binary_data: request.binaryOutputs === true },
    }));
  } else if (request.binaryOutputs === true) {
    header.parameters = { binary_data_output: true };
  }
  const json = utf8.encode(JSON.stringify(header));
  if (binaries.length === 0) {
    return { body: json, headers: { "Content-Type": "application/json" } };
  }
  const body = new Uint8Array(json.length + binaries.reduce((n, b) => n + b.length, 0));
  body.set(json, 0);
  let offset = json.length;
  for (const raw of binaries) {
    body.set(raw, offset);
    offset += raw.length;
  }
  return {
    body,
    headers: {
      "Content-Type": "application/octet-stream",
      "Inference-Header-Content-Length": String(json.length),
    },
  };
}

export function decodeInferResponse(bytes: Uint8Array, headerLength?: number): InferResponse {
  const jsonEnd = headerLength ?? bytes.length;
  if (!Number.isInteger(jsonEnd) || jsonEnd < 0 || jsonEnd > bytes.length) {
    throw new TypeError(`infer response: bad Inference-Header-Content-Length ${headerLength}`);
  }
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(0, jsonEnd))) as Json;
  if (!isObject(header)) throw new TypeError("infer response: not a JSON object");
  const rawOutputs = header.outputs ?? [];
  if (!Array.isArray(rawOutputs)) throw new TypeError('infer response: "outputs" is not a list');
  const outputs = new Map<string, Tensor>();
  let offset = jsonEnd;
  rawOutputs.forEach((raw, i) => {
    const where = `infer response output[${i}]`;
    if (!isObject(raw)) throw new TypeError(`${where}: not an object`);
    const name = stringField(raw, "name", where);
    const datatype = stringField(raw, "datatype", where);
    if (!isDatatype(datatype)) throw new TypeError(`${where} (${name}): unsupported datatype ${datatype}`);
    const shape = shapeField(raw, where);
    const params = raw.parameters;
    const size = isObject(params) && typeof params.binary_data_size === "number" ? params.binary_data_size : undefined;
    let data: TensorValue[];
    if (size !== undefined) {
      if (offset + size > bytes.length) throw new TypeError(`${where} (${name}): binary data truncated`);
      data = decodeBinary(name, datatype, shape, bytes.subarray(offset, offset + size));
      offset += size;
    } else {
      data = jsonValues(field(raw, "data", where), datatype, `${where} (${name})`);
    }
    outputs.set(name, { name, datatype, shape, data });
  });
  const modelName = typeof header.model_name === "string" ? header.model_name : "";
  const modelVersion = typeof header.model_version === "string" ? header.model_version : "";
  const id = typeof header.id === "string" ? header.id : undefined;
  return { modelName, modelVersion, id, outputs };
}

function jsonValues(data: Json, datatype: Datatype, where: string): TensorValue[] {
  if (!Array.isArray(data)) throw new TypeError(`${where}: "data" is not a list`);
  // Triton writes JSON data flat, but nested arrays are legal in the protocol.
  const flat = (data as Json[]).flat(Infinity as 1) as Json[];
  return flat.map((value) => {
    if (datatype === "BYTES") {
      if (typeof value !== "string") throw new TypeError(`${where}: BYTES element is not a string`);
      return value;
    }
    if (datatype === "BOOL") {
      if (typeof value !== "boolean") throw new TypeError(`${where}: BOOL element is not a boolean`);
      return value;
    }
    if (typeof value !== "number") throw new TypeError(`${where}: ${datatype} element is not a number`);
    return value;
  });
}
