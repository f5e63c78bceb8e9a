/**
 * What the HTTP and gRPC KServe v2 clients share: the client interface, the
 * response shapes and the error type.
 */
import type { Tensor } from "./tensors";

export type Protocol = "http" | "grpc";

/** gRPC status names, for messages a person can act on. */
const GRPC_CODES = [
  "OK",
  "CANCELLED",
  "UNKNOWN",
  "INVALID_ARGUMENT",
  "DEADLINE_EXCEEDED",
  "NOT_FOUND",
  "ALREADY_EXISTS",
  "PERMISSION_DENIED",
  "RESOURCE_EXHAUSTED",
  "FAILED_PRECONDITION",
  "ABORTED",
  "OUT_OF_RANGE",
  "UNIMPLEMENTED",
  "INTERNAL",
  "UNAVAILABLE",
  "DATA_LOSS",
  "UNAUTHENTICATED",
] as const;

export function grpcCodeName(code: number): string {
  return GRPC_CODES[code] ?? `CODE_${code}`;
}

/** A failed call: the status (HTTP status or gRPC code; absent when no response arrived) and Triton's own message. */
export class TritonClientError extends Error {
  readonly protocol: Protocol;
  readonly status: number | undefined;
  readonly url: string;
  readonly tritonMessage: string;

  constructor(url: string, status: number | undefined, tritonMessage: string, protocol: Protocol = "http") {
    super(`${url}: ${describeStatus(protocol, status)}${tritonMessage ? `: ${tritonMessage}` : ""}`);
    this.name = "TritonClientError";
    this.url = url;
    this.status = status;
    this.tritonMessage = tritonMessage;
    this.protocol = protocol;
  }

  /** "HTTP 400", "gRPC INVALID_ARGUMENT (3)" or "no HTTP response". */
  get statusText(): string {
    return describeStatus(this.protocol, this.status);
  }
}

function describeStatus(protocol: Protocol, status: number | undefined): string {
  if (status === undefined) return protocol === "http" ? "no HTTP response" : "no gRPC response";
  return protocol === "http" ? `HTTP ${status}` : `gRPC ${grpcCodeName(status)} (${status})`;
}

export interface TensorMetadata {
  name: string;
  datatype: string;
  shape: number[];
}

export interface ModelMetadata {
  name: string;
  versions: string[];
  platform: string;
  inputs: TensorMetadata[];
  outputs: TensorMetadata[];
}

export interface InferRequest {
  inputs: Tensor[];
  /** Outputs to return; all of the model's outputs when omitted. */
  outputs?: string[];
  /** HTTP only: ask for outputs in the binary encoding (gRPC always returns raw bytes). */
  binaryOutputs?: boolean;
  id?: string;
}

export interface InferResponse {
  modelName: string;
  modelVersion: string;
  id: string | undefined;
  outputs: Map<string, Tensor>;
}

export interface ClientOptions {
  /** Per-call timeout in milliseconds (default 60 s). */
  timeoutMs?: number;
}

/** The KServe v2 calls the project uses, over either protocol. */
export interface TritonClient {
  readonly protocol: Protocol;
  /** Where the client sends requests, for messages. */
  readonly baseUrl: string;
  isLive(): Promise<boolean>;
  isReady(): Promise<boolean>;
  isModelReady(model: string, version?: string): Promise<boolean>;
  modelMetadata(model: string, version?: string): Promise<ModelMetadata>;
  infer(model: string, request: InferRequest, version?: string): Promise<InferResponse>;
  /** Release connections (gRPC keeps an HTTP/2 session open). */
  close(): void;
}

/** Elements of one output as numbers (UINT64/INT64 values above 2^53 lose precision). */
export function outputNumbers(response: InferResponse, name: string): number[] {
  return requireOutput(response, name).data.map((v) => {
    if (typeof v === "number") return v;
    if (typeof v === "bigint") return Number(v);
    if (typeof v === "boolean") return v ? 1 : 0;
    throw new TypeError(`output ${name} holds bytes, not numbers`);
  });
}

/** Elements of one BYTES output decoded as UTF-8 text. */
export function outputStrings(response: InferResponse, name: string): string[] {
  const decoder = new TextDecoder("utf-8");
  return requireOutput(response, name).data.map((v) => {
    if (typeof v === "string") return v;
    if (v instanceof Uint8Array) return decoder.decode(v);
    throw new TypeError(`output ${name} holds numbers, not text`);
  });
}

function requireOutput(response: InferResponse, name: string): Tensor {
  const tensor = response.outputs.get(name);
  if (tensor === undefined) {
    throw new TypeError(
      `response of ${response.modelName} has no output ${name} (got: ${[...response.outputs.keys()].join(", ")})`,
    );
  }
  return tensor;
}
