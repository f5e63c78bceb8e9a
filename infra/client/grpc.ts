/**
 * KServe v2 (Triton) gRPC client over Node's own HTTP/2: unary calls of
 * inference.GRPCInferenceService with hand-encoded protobuf messages, tensors
 * as raw_input_contents / raw_output_contents. One HTTP/2 session per client;
 * call close() when done or the process stays alive.
 */
import http2 from "node:http2";
import {
  type ClientOptions,
  type InferRequest,
  type InferResponse,
  type ModelMetadata,
  type TensorMetadata,
  type TritonClient,
  TritonClientError,
} from "./api";
import { ProtoMessage, ProtoWriter } from "./protobuf";
import { type Tensor, checkShape, decodeBinary, encodeBinary, isDatatype } from "./tensors";

const SERVICE = "inference.GRPCInferenceService";
const GRPC_UNAVAILABLE = 14;
const GRPC_DEADLINE_EXCEEDED = 4;

/** "host:port", "grpc://host:port" or "grpcs://host:port" (TLS) to an HTTP/2 origin. */
export function grpcOrigin(endpoint: string): string {
  const trimmed = endpoint.trim().replace(/\/+$/, "");
  if (trimmed === "") throw new TypeError("endpoint is empty");
  const match = /^([a-z][a-z0-9+.-]*):\/\/(.*)$/i.exec(trimmed);
  const scheme = match ? match[1].toLowerCase() : "grpc";
  const rest = match ? match[2] : trimmed;
  if (scheme !== "grpc" && scheme !== "grpcs") throw new TypeError(`endpoint ${endpoint}: a gRPC endpoint is grpc://host:port or grpcs://host:port`);
  const url = new URL(`${scheme === "grpcs" ? "https" : "http"}://${rest}`);
  if (url.pathname !== "/" && url.pathname !== "") throw new TypeError(`endpoint ${endpoint}: a gRPC endpoint has no path`);
  return url.origin;
}

function frame(message: Uint8Array): Uint8Array {
  const out = new Uint8Array(5 + message.length);
  new DataView(out.buffer).setUint32(1, message.length, false);
  out.set(message, 5);
  return out;
}

function unframe(body: Uint8Array, method: string): Uint8Array {
  if (body.length < 5) throw new TypeError(`${method}: empty gRPC response`);
  if (body[0] !== 0) throw new TypeError(`${method}: compressed gRPC responses are not supported`);
  const length = new DataView(body.buffer, body.byteOffset, body.byteLength).getUint32(1, false);
  if (5 + length > body.length) throw new TypeError(`${method}: truncated gRPC response`);
  return body.subarray(5, 5 + length);
}

function grpcMessage(raw: string | string[] | undefined): string {
  const text = Array.isArray(raw) ? raw.join(", ") : (raw ?? "");
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

function tensorMetadata(m: ProtoMessage): TensorMetadata {
  return { name: m.string(1), datatype: m.string(2), shape: m.int64List(3).map(Number) };
}

export class TritonGrpcClient implements TritonClient {
  readonly protocol = "grpc" as const;
  /** grpc://host:port or grpcs://host:port, for messages. */
  readonly baseUrl: string;
  private readonly origin: string;
  private readonly timeoutMs: number;
  private session: http2.ClientHttp2Session | undefined;

  constructor(endpoint: string, options: ClientOptions = {}) {
    this.origin = grpcOrigin(endpoint);
    this.baseUrl = this.origin.replace(/^http/, "grpc");
    this.timeoutMs = options.timeoutMs ?? 60_000;
  }

  close(): void {
    this.session?.close();
    this.session = undefined;
  }

  private connect(): http2.ClientHttp2Session {
    if (this.session && !this.session.closed && !this.session.destroyed) return this.session;
    const session = http2.connect(this.origin);
    // Errors reach the pending streams; without a listener the session error would crash the process.
    session.on("error", () => undefined);
    session.on("close", () => {
      if (this.session === session) this.session = undefined;
    });
    this.session = session;
    return session;
  }

  private unary(method: string, request: Uint8Array): Promise<ProtoMessage> {
    const url = `${this.baseUrl}/${SERVICE}/${method}`;
    return new Promise((resolve, reject) => {
      const fail = (status: number | undefined, message: string) => reject(new TritonClientError(url, status, message, "grpc"));
      let stream: http2.ClientHttp2Stream;
      try {
        stream = this.connect().request({
          ":method": "POST",
          ":path": `/${SERVICE}/${method}`,
          "content-type": "application/grpc",
          te: "trailers",
          "grpc-timeout": `${this.timeoutMs}m`,
        });
      } catch (error) {
        fail(undefined, `cannot reach server (${error instanceof Error ? error.message : String(error)})`);
        return;
      }
      const chunks: Buffer[] = [];
      let status: number | undefined;
      let message = "";
      let httpStatus = 0;
      let settled = false;
      const readStatus = (headers: http2.IncomingHttpHeaders) => {
        const raw = headers["grpc-status"];
        if (raw !== undefined) {
          status = Number(Array.isArray(raw) ? raw[0] : raw);
          message = grpcMessage(headers["grpc-message"]);
        }
      };
      stream.setTimeout(this.timeoutMs, () => {
        settled = true;
        stream.close(http2.constants.NGHTTP2_CANCEL);
        fail(GRPC_DEADLINE_EXCEEDED, `no response within ${this.timeoutMs} ms`);
      });
      stream.on("response", (headers) => {
        httpStatus = Number(headers[":status"] ?? 0);
        readStatus(headers);
      });
      stream.on("trailers", readStatus);
      stream.on("data", (chunk: Buffer) => chunks.push(chunk));
      stream.on("error", (error: Error) => {
        if (settled) return;
        settled = true;
        const cause = error.message || error.name;
        fail(httpStatus === 0 ? undefined : GRPC_UNAVAILABLE, `cannot reach server (${cause})`);
      });
      stream.on("close", () => {
        if (settled) return;
        settled = true;
        if (httpStatus !== 200) {
          const what = httpStatus === 0 ? "connection closed without a response" : `HTTP/2 status ${httpStatus}`;
          fail(undefined, `${what} (is this Triton's gRPC port?)`);
          return;
        }
        if (status === undefined) {
          fail(undefined, "response ended without grpc-status");
          return;
        }
        if (status !== 0) {
          fail(status, message);
          return;
        }
        try {
          resolve(new ProtoMessage(unframe(new Uint8Array(Buffer.concat(chunks)), method)));
        } catch (error) {
          reject(error);
        }
      });
      stream.end(frame(request));
    });
  }

  async isLive(): Promise<boolean> {
    return (await this.unary("ServerLive", new Uint8Array(0))).bool(1);
  }

  async isReady(): Promise<boolean> {
    return (await this.unary("ServerReady", new Uint8Array(0))).bool(1);
  }

  async isModelReady(model: string, version?: string): Promise<boolean> {
    const request = new ProtoWriter().string(1, model).string(2, version ?? "");
    return (await this.unary("ModelReady", request.finish())).bool(1);
  }

  async modelMetadata(model: string, version?: string): Promise<ModelMetadata> {
    const request = new ProtoWriter().string(1, model).string(2, version ?? "");
    const m = await this.unary("ModelMetadata", request.finish());
    return {
      name: m.string(1),
      versions: m.stringList(2),
      platform: m.string(3),
      inputs: m.messages(4).map(tensorMetadata),
      outputs: m.messages(5).map(tensorMetadata),
    };
  }

  async infer(model: string, request: InferRequest, version?: string): Promise<InferResponse> {
    const m = await this.unary("ModelInfer", encodeGrpcInferRequest(model, request, version));
    return decodeGrpcInferResponse(m);
  }
}

/** ModelInferRequest with every input as raw_input_contents (same bytes as the HTTP binary extension). */
export function encodeGrpcInferRequest(model: string, request: InferRequest, version?: string): Uint8Array {
  const w = new ProtoWriter().string(1, model).string(2, version ?? "").string(3, request.id ?? "");
  const raws: Uint8Array[] = [];
  for (const tensor of request.inputs) {
    checkShape(tensor);
    w.message(5, new ProtoWriter().string(1, tensor.name).string(2, tensor.datatype).packedInt64(3, tensor.shape));
    raws.push(encodeBinary(tensor));
  }
  for (const name of request.outputs ?? []) w.message(6, new ProtoWriter().string(1, name));
  for (const raw of raws) w.bytes(7, raw);
  return w.finish();
}

export function decodeGrpcInferResponse(m: ProtoMessage): InferResponse {
  const outputs = new Map<string, Tensor>();
  const specs = m.messages(5);
  const raws = m.bytesList(6);
  if (raws.length !== specs.length) {
    throw new TypeError(`ModelInfer response: ${specs.length} outputs but ${raws.length} raw_output_contents`);
  }
  specs.forEach((spec, i) => {
    const name = spec.string(1);
    const datatype = spec.string(2);
    if (!isDatatype(datatype)) throw new TypeError(`ModelInfer response output ${name}: unsupported datatype ${datatype}`);
    const shape = spec.int64List(3).map(Number);
    outputs.set(name, { name, datatype, shape, data: decodeBinary(name, datatype, shape, raws[i]) });
  });
  const id = m.string(3);
  return { modelName: m.string(1), modelVersion: m.string(2), id: id === "" ? undefined : id, outputs };
}
