/**
 * KServe v2 (Triton) gRPC client on @grpc/grpc-js: unary calls of
 * inference.GRPCInferenceService, tensors as raw_input_contents /
 * raw_output_contents (the same bytes as the HTTP binary extension). The
 * channel opens on the first call; call close() when done or the process
 * stays alive.
 */
import { Client, Metadata, credentials } from "@grpc/grpc-js";
import {
  type ClientOptions,
  type InferRequest,
  type InferResponse,
  type ModelMetadata,
  type TritonClient,
  TritonClientError,
} from "./api";
import {
  type ModelInferRequestMessage,
  type ModelInferResponseMessage,
  type ModelRefMessage,
  type TensorSpecMessage,
  type UnaryMethod,
  kserveMethods,
} from "./kserveProto";
import { type Tensor, checkShape, decodeBinary, encodeBinary, isDatatype } from "./tensors";

export interface GrpcTarget {
  /** host:port as grpc-js dials it. */
  target: string;
  tls: boolean;
  /** grpc://host:port or grpcs://host:port, for messages. */
  baseUrl: string;
}

/** "host:port", "grpc://host:port" or "grpcs://host:port" (TLS); without a port, 80 or 443 as for HTTP(S). */
export function grpcTarget(endpoint: string): GrpcTarget {
  const trimmed = endpoint.trim().replace(/\/+$/, "");
  if (trimmed === "") throw new TypeError("endpoint is empty");
  const match = /^([a-z][a-z0-9+.-]*):\/\/(.*)$/i.exec(trimmed);
  const scheme = match ? match[1].toLowerCase() : "grpc";
  if (scheme !== "grpc" && scheme !== "grpcs")
    throw new TypeError(`endpoint ${endpoint}: a gRPC endpoint is grpc://host:port or grpcs://host:port`);
  // A non-special scheme keeps the port as written (https:// would drop :443).
  const url = new URL(`${scheme}://${match ? match[2] : trimmed}`);
  if (url.pathname !== "" && url.pathname !== "/")
    throw new TypeError(`endpoint ${endpoint}: a gRPC endpoint has no path`);
  if (url.hostname === "") throw new TypeError(`endpoint ${endpoint}: no host`);
  const tls = scheme === "grpcs";
  const target = `${url.hostname}:${url.port || (tls ? "443" : "80")}`;
  return { target, tls, baseUrl: `${scheme}://${target}` };
}

function modelRef(name: string, version: string | undefined): ModelRefMessage {
  return version ? { name, version } : { name };
}

function tensorSpec(spec: TensorSpecMessage): { name: string; datatype: string; shape: number[] } {
  return { name: spec.name, datatype: spec.datatype, shape: spec.shape.map(Number) };
}

export class TritonGrpcClient implements TritonClient {
  readonly protocol = "grpc" as const;
  readonly baseUrl: string;
  private readonly target: GrpcTarget;
  private readonly timeoutMs: number;
  private channel: Client | undefined;

  constructor(endpoint: string, options: ClientOptions = {}) {
    this.target = grpcTarget(endpoint);
    this.baseUrl = this.target.baseUrl;
    this.timeoutMs = options.timeoutMs ?? 60_000;
  }

  close(): void {
    this.channel?.close();
    this.channel = undefined;
  }

  private client(): Client {
    // Responses carry whole generated batches; grpc-js would cap them at 4 MiB.
    this.channel ??= new Client(
      this.target.target,
      this.target.tls ? credentials.createSsl() : credentials.createInsecure(),
      {
        "grpc.max_receive_message_length": -1,
      },
    );
    return this.channel;
  }

  private unary<Request, Response>(method: UnaryMethod<Request, Response>, request: Request): Promise<Response> {
    const url = `${this.baseUrl}${method.path}`;
    return new Promise((resolve, reject) => {
      this.client().makeUnaryRequest(
        method.path,
        method.requestSerialize,
        method.responseDeserialize,
        request,
        new Metadata(),
        { deadline: Date.now() + this.timeoutMs },
        (error, response) => {
          if (error) reject(new TritonClientError(url, error.code, error.details, "grpc"));
          else if (response === undefined)
            reject(new TritonClientError(url, undefined, "call ended without a response message", "grpc"));
          else resolve(response);
        },
      );
    });
  }

  async isLive(): Promise<boolean> {
    return (await this.unary(kserveMethods().ServerLive, {})).live;
  }

  async isReady(): Promise<boolean> {
    return (await this.unary(kserveMethods().ServerReady, {})).ready;
  }

  async isModelReady(model: string, version?: string): Promise<boolean> {
    return (await this.unary(kserveMethods().ModelReady, modelRef(model, version))).ready;
  }

  async modelMetadata(model: string, version?: string): Promise<ModelMetadata> {
    const m = await this.unary(kserveMethods().ModelMetadata, modelRef(model, version));
    return {
      name: m.name,
      versions: m.versions,
      platform: m.platform,
      inputs: m.inputs.map(tensorSpec),
      outputs: m.outputs.map(tensorSpec),
    };
  }

  async infer(model: string, request: InferRequest, version?: string): Promise<InferResponse> {
    const m = await this.unary(kserveMethods().ModelInfer, toModelInferRequest(model, request, version));
    return fromModelInferResponse(m);
  }
}

/** ModelInferRequest with every input as raw_input_contents. */
export function toModelInferRequest(model: string, request: InferRequest, version?: string): ModelInferRequestMessage {
  for (const tensor of request.inputs) checkShape(tensor);
  return {
    model_name: model,
    ...(version ? { model_version: version } : {}),
    ...(request.id ? { id: request.id } : {}),
    inputs: request.inputs.map((t) => ({ name: t.name, datatype: t.datatype, shape: t.shape })),
    outputs: (request.outputs ?? []).map((name) => ({ name })),
    raw_input_contents: request.inputs.map(encodeBinary),
  };
}

export function fromModelInferResponse(m: ModelInferResponseMessage): InferResponse {
  if (m.raw_output_contents.length !== m.outputs.length) {
    throw new TypeError(
      `ModelInfer response: ${m.outputs.length} outputs but ${m.raw_output_contents.length} raw_output_contents`,
    );
  }
  const outputs = new Map<string, Tensor>();
  m.outputs.forEach((spec, i) => {
    const { name, datatype, shape } = tensorSpec(spec);
    if (!isDatatype(datatype))
      throw new TypeError(`ModelInfer response output ${name}: unsupported datatype ${datatype}`);
    // A plain view, so BYTES elements come out as copied Uint8Arrays (Buffer#slice would alias the message).
    const raw = m.raw_output_contents[i];
    const bytes = new Uint8Array(raw.buffer, raw.byteOffset, raw.byteLength);
    outputs.set(name, { name, datatype, shape, data: decodeBinary(name, datatype, shape, bytes) });
  });
  return { modelName: m.model_name, modelVersion: m.model_version, id: m.id === "" ? undefined : m.id, outputs };
}
