/**
 * The KServe v2 gRPC service as grpc-js call descriptors, built by
 * @grpc/proto-loader from our kserve_v2.proto subset. Loaded on first use,
 * not at import, so callers that only speak HTTP never parse the .proto.
 */
import path from "node:path";
import { loadSync, type PackageDefinition } from "@grpc/proto-loader";

export const SERVICE = "inference.GRPCInferenceService";

/** Next to this module in the source tree, which is where both tsx and vitest run it from. */
export const PROTO_PATH = path.join(__dirname, "kserve_v2.proto");

/** Tensor name, datatype and shape as decoded: int64 dims arrive as decimal strings. */
export interface TensorSpecMessage {
  name: string;
  datatype: string;
  shape: string[];
}

/** Optional strings are left out rather than sent empty: proto3 reads both as unset. */
export interface ModelRefMessage {
  name: string;
  version?: string;
}

export interface ModelMetadataResponseMessage {
  name: string;
  versions: string[];
  platform: string;
  inputs: TensorSpecMessage[];
  outputs: TensorSpecMessage[];
}

export interface ModelInferRequestMessage {
  model_name: string;
  model_version?: string;
  id?: string;
  inputs: { name: string; datatype: string; shape: number[] }[];
  outputs: { name: string }[];
  raw_input_contents: Uint8Array[];
}

export interface ModelInferResponseMessage {
  model_name: string;
  model_version: string;
  id: string;
  outputs: TensorSpecMessage[];
  raw_output_contents: Buffer[];
}

/** What a unary call needs: its path and the message codecs proto-loader built. */
export interface UnaryMethod<Request, Response> {
  path: string;
  requestSerialize(value: Request): Buffer;
  responseDeserialize(bytes: Buffer): Response;
}

type Empty = Record<string, never>;

export interface KServeMethods {
  ServerLive: UnaryMethod<Empty, { live: boolean }>;
  ServerReady: UnaryMethod<Empty, { ready: boolean }>;
  ModelReady: UnaryMethod<ModelRefMessage, { ready: boolean }>;
  ModelMetadata: UnaryMethod<ModelRefMessage, ModelMetadataResponseMessage>;
  ModelInfer: UnaryMethod<ModelInferRequestMessage, ModelInferResponseMessage>;
}

const METHOD_NAMES: readonly (keyof KServeMethods)[] = [
  "ServerLive",
  "ServerReady",
  "ModelReady",
  "ModelMetadata",
  "ModelInfer",
];

let definition: PackageDefinition | undefined;
let methods: KServeMethods | undefined;

/** The parsed .proto. Decoding keeps the spec's snake_case names, turns int64 into exact decimal strings and fills absent fields with their defaults, so the interfaces above hold for every reply. */
export function kserveDefinition(): PackageDefinition {
  definition ??= loadSync(PROTO_PATH, { keepCase: true, longs: String, enums: String, defaults: true });
  return definition;
}

export function kserveMethods(): KServeMethods {
  if (methods) return methods;
  const service = kserveDefinition()[SERVICE];
  if (service === undefined || "format" in service) throw new TypeError(`${PROTO_PATH} declares no service ${SERVICE}`);
  for (const name of METHOD_NAMES) {
    const method = service[name];
    if (method === undefined || method.requestStream || method.responseStream) {
      throw new TypeError(`${PROTO_PATH}: ${SERVICE} has no unary method ${name}`);
    }
  }
  // The check above ties the names to the .proto; the message shapes are the interfaces above.
  methods = service as unknown as KServeMethods;
  return methods;
}
