/**
 * One entry point for callers holding an endpoint string (a stack output, a
 * CLI flag): grpc:// and grpcs:// endpoints get the gRPC client, anything else
 * (http://, https://, bare host:port) the HTTP client.
 */
import type { ClientOptions, TritonClient } from "./api";
import { TritonGrpcClient } from "./grpc";
import { TritonHttpClient } from "./http";

export function isGrpcEndpoint(endpoint: string): boolean {
  return /^grpcs?:\/\//i.test(endpoint.trim());
}

export function createClient(endpoint: string, options: ClientOptions = {}): TritonClient {
  return isGrpcEndpoint(endpoint) ? new TritonGrpcClient(endpoint, options) : new TritonHttpClient(endpoint, options);
}
