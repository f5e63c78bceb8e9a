/**
 * The gateway's only way into Triton: gRPC on @grpc/grpc-js, with every
 * inference over ModelStreamInfer. That call serves the ensemble whether FT
 * runs decoupled (one message per generated token) or not (one message), on
 * Triton 23.05 and on newer servers alike: the gateway writes one request per
 * stream and half-closes, and Triton ends the stream with OK once the request
 * is complete.
 */
import path from "node:path";
import {
  type ChannelOptions,
  Client,
  Metadata,
  credentials,
  status as GrpcStatus,
  type ServiceError,
} from "@grpc/grpc-js";
import { loadSync } from "@grpc/proto-loader";
import { ApiError, overloaded, timedOut, upstream } from "../server/apiError";
import { type Tensor, decode, encode, isDatatype } from "./tensors";

const SERVICE = "inference.GRPCInferenceService";
export const PROTO_PATH = path.join(__dirname, "kserve_v2_stream.proto");

interface Codec<T> {
  path: string;
  requestSerialize(value: T): Buffer;
  responseDeserialize(bytes: Buffer): unknown;
}

interface TensorSpecMessage {
  name: string;
  datatype: string;
  shape: string[];
}
interface InferResponseMessage {
  model_name: string;
  model_version: string;
  outputs: TensorSpecMessage[];
  raw_output_contents: Buffer[];
}
interface StreamResponseMessage {
  error_message: string;
  infer_response: InferResponseMessage | null;
}
interface InferRequestMessage {
  model_name: string;
  id?: string;
  inputs: { name: string; datatype: string; shape: number[] }[];
  outputs: { name: string }[];
  raw_input_contents: Buffer[];
}

export interface TensorSpec {
  name: string;
  datatype: string;
  shape: number[];
}
export interface ModelMetadata {
  name: string;
  versions: string[];
  platform: string;
  inputs: TensorSpec[];
  outputs: TensorSpec[];
}

type Methods = Record<
  "ServerLive" | "ServerReady" | "ModelReady" | "ModelMetadata" | "ModelStreamInfer",
  Codec<unknown>
>;

let methods: Methods | undefined;
function kserve(): Methods {
  if (methods) return methods;
  const definition = loadSync(PROTO_PATH, { keepCase: true, longs: String, enums: String, defaults: true });
  methods = definition[SERVICE] as unknown as Methods;
  return methods;
}

/** Where a Triton error comes from decides what the client sees. */
export function classifyTritonMessage(message: string): ApiError {
  const text = message.replace(/^in ensemble '[^']*', /, "");
  if (/exceeds maximum queue size|queue is full|maximum queue/i.test(text)) {
    return overloaded(`the inference server is at capacity: ${text}`, 1);
  }
  // The model is loading or unloading (Triton starting, or stopping: it unloads its models before
  // it closes its ports). Transient, as an unreachable Triton is: the same 503, the text only logged
  // (it names the ensemble inside Triton).
  if (/Request for unknown model: .* (has no available versions|is not at ready state)/.test(text)) {
    return overloaded("the inference server is unavailable", 2, "upstream_unavailable", text);
  }
  if (/max_prompt_bytes/.test(text)) {
    return new ApiError(413, "invalid_request_error", text, "prompt_too_large", "prompt");
  }
  if (/tokens, more than max_input_len/.test(text)) {
    return new ApiError(400, "invalid_request_error", text, "context_length_exceeded", "prompt");
  }
  if (
    /\b(text_input|max_tokens|stop_words|bad_words|top_k|top_p|temperature|repetition_penalty|presence_penalty|random_seed|top_logprobs)\[\d+\]/.test(
      text,
    )
  ) {
    return new ApiError(400, "invalid_request_error", text, "invalid_value");
  }
  return upstream(text);
}

export function classifyGrpcError(error: ServiceError, timeoutSeconds: number): ApiError {
  switch (error.code) {
    case GrpcStatus.UNAVAILABLE:
      // The details name Triton's address (e.g. "connect ECONNREFUSED 10.0.0.5:8001"): logged, not sent.
      return overloaded("the inference server is unavailable", 2, "upstream_unavailable", error.details);
    case GrpcStatus.RESOURCE_EXHAUSTED:
      return overloaded(`the inference server is at capacity: ${error.details}`, 1);
    case GrpcStatus.DEADLINE_EXCEEDED:
      return timedOut(timeoutSeconds);
    default:
      return classifyTritonMessage(error.details || error.message);
  }
}

export interface StreamOptions {
  signal: AbortSignal;
  /** Absolute deadline, ms since the epoch. */
  deadline: number;
  timeoutSeconds: number;
  requestId?: string;
  /** Only these outputs: Triton serializes and sends nothing else, at every streamed step. Absent: all of them. */
  outputs?: readonly string[];
}

/**
 * What the gateway needs from Triton. The gRPC client below is the real one;
 * the in-process route tests give the app an in-memory one instead.
 */
export interface TritonClient {
  /** The ensemble this client calls on its Triton (one client per served model). */
  readonly ensemble: string;
  live(timeoutMs?: number): Promise<boolean>;
  /** Server ready and the ensemble loaded. */
  ready(timeoutMs?: number): Promise<boolean>;
  metadata(timeoutMs?: number): Promise<ModelMetadata>;
  /** One request to the ensemble; every response's outputs as they arrive. */
  stream(inputs: Tensor[], options: StreamOptions): AsyncGenerator<Map<string, Tensor>>;
  /**
   * Serialize the request of a later `stream(inputs, { outputs })` (same `inputs` array, no request id)
   * ahead of it: CPU work the admission plugin does while the shared store decides (issue 33, item 7).
   * Optional: a client without it serializes in `stream`.
   */
  prepare?(inputs: Tensor[], outputs: readonly string[]): void;
}

/**
 * Reconnect backoff of the channel to Triton. @grpc/grpc-js's default starts
 * at 1 s and grows ×1.6 up to 120 s, so after a long Triton outage the
 * channel could wait up to two minutes before trying again: Triton back, the
 * gateway still unready (its /readyz asks Triton over this channel) and every
 * generation refused. grpc-js spreads each delay by up to ±20 %
 * (RECONNECT_JITTER), so the cap is 4 s: the longest wait is 4.8 s, and the
 * gateway is ready again within 5 s of Triton (a 5 s cap let one wait run to
 * 6 s, and the suite's restart test failed once on it). A reconnect attempt to
 * one address every 4 s costs nothing.
 * (Option names: @grpc/grpc-js README, "Supported Channel Options".)
 */
export const INITIAL_RECONNECT_BACKOFF_MS = 500;
export const MAX_RECONNECT_BACKOFF_MS = 4000;
/** grpc-js's fixed backoff jitter (BACKOFF_JITTER in its backoff-timeout.js): each delay ± this share. */
export const RECONNECT_JITTER = 0.2;
/** The longest the channel waits between two attempts: what the 5 s recovery promise rests on. */
export const LONGEST_RECONNECT_WAIT_MS = MAX_RECONNECT_BACKOFF_MS * (1 + RECONNECT_JITTER);

export class TritonGateway implements TritonClient {
  private channel: Client;
  /** Requests serialized by prepare(), by their inputs, with the outputs they ask for. */
  private readonly prepared = new WeakMap<Tensor[], { outputs: readonly string[]; bytes: Buffer }>();
  /** The channel's options, as given to @grpc/grpc-js. */
  readonly channelOptions: ChannelOptions = {
    // Unlimited receive size: a response carries a whole generated text.
    "grpc.max_receive_message_length": -1,
    "grpc.keepalive_time_ms": 30_000,
    "grpc.initial_reconnect_backoff_ms": INITIAL_RECONNECT_BACKOFF_MS,
    "grpc.max_reconnect_backoff_ms": MAX_RECONNECT_BACKOFF_MS,
    // No channelz: it timestamps and counts every call (a Date per call started, on the path of every
    // generation), for an admin service the gateway does not serve.
    "grpc.enable_channelz": 0,
  };

  constructor(
    readonly target: string,
    readonly ensemble: string,
  ) {
    this.channel = new Client(target, credentials.createInsecure(), this.channelOptions);
  }

  close(): void {
    this.channel.close();
  }

  private unary<T>(name: keyof Methods, request: unknown, timeoutMs: number): Promise<T> {
    const m = kserve()[name];
    return new Promise((resolve, reject) => {
      this.channel.makeUnaryRequest(
        m.path,
        m.requestSerialize,
        m.responseDeserialize,
        request,
        new Metadata(),
        { deadline: Date.now() + timeoutMs },
        (error, response) => (error ? reject(error) : resolve(response as T)),
      );
    });
  }

  async live(timeoutMs = 2000): Promise<boolean> {
    return (await this.unary<{ live: boolean }>("ServerLive", {}, timeoutMs)).live;
  }

  /** Server ready and the ensemble loaded. */
  async ready(timeoutMs = 2000): Promise<boolean> {
    const server = await this.unary<{ ready: boolean }>("ServerReady", {}, timeoutMs);
    if (!server.ready) return false;
    return (await this.unary<{ ready: boolean }>("ModelReady", { name: this.ensemble }, timeoutMs)).ready;
  }

  async metadata(timeoutMs = 5000): Promise<ModelMetadata> {
    const m = await this.unary<{
      name: string;
      versions: string[];
      platform: string;
      inputs: TensorSpecMessage[];
      outputs: TensorSpecMessage[];
    }>("ModelMetadata", { name: this.ensemble }, timeoutMs);
    const spec = (t: TensorSpecMessage): TensorSpec => ({
      name: t.name,
      datatype: t.datatype,
      shape: t.shape.map(Number),
    });
    return { ...m, inputs: m.inputs.map(spec), outputs: m.outputs.map(spec) };
  }

  /**
   * One request to the ensemble; yields every response's outputs as they
   * arrive. Aborting the signal (client gone, stop sequence seen, timeout) or
   * leaving the loop cancels the call, so nothing more is forwarded.
   */
  private request(inputs: Tensor[], outputs: readonly string[], requestId?: string): InferRequestMessage {
    return {
      model_name: this.ensemble,
      ...(requestId ? { id: requestId } : {}),
      inputs: inputs.map((t) => ({ name: t.name, datatype: t.datatype, shape: t.shape })),
      outputs: outputs.map((name) => ({ name })),
      raw_input_contents: inputs.map(encode),
    };
  }

  prepare(inputs: Tensor[], outputs: readonly string[]): void {
    const bytes = kserve().ModelStreamInfer.requestSerialize(this.request(inputs, outputs));
    this.prepared.set(inputs, { outputs, bytes });
  }

  async *stream(inputs: Tensor[], options: StreamOptions): AsyncGenerator<Map<string, Tensor>> {
    const m = kserve().ModelStreamInfer;
    const outputs = options.outputs ?? [];
    const ahead = this.prepared.get(inputs);
    this.prepared.delete(inputs);
    // Bytes serialized by prepare() for exactly this request, else serialized now.
    const bytes =
      ahead && !options.requestId && sameNames(ahead.outputs, outputs)
        ? ahead.bytes
        : m.requestSerialize(this.request(inputs, outputs, options.requestId));
    const call = this.channel.makeBidiStreamRequest(m.path, passThrough, m.responseDeserialize, new Metadata(), {
      deadline: options.deadline,
    });
    const queue: StreamResponseMessage[] = [];
    let done = false;
    let failure: ServiceError | undefined;
    let wake: (() => void) | undefined;
    const notify = (): void => {
      wake?.();
      wake = undefined;
    };
    call.on("data", (message: StreamResponseMessage) => {
      queue.push(message);
      notify();
    });
    call.on("error", (error: ServiceError) => {
      failure = error;
      done = true;
      notify();
    });
    call.on("end", () => {
      done = true;
      notify();
    });
    // Set when Triton itself ended the request with an error: it then closes the stream on its own,
    // and cancelling a call the server is finishing only races its gRPC frontend (no benefit, and
    // Triton 24.x builds have crashed on such races: server issues #7840, #8034).
    let answeredByServer = false;
    const onAbort = (): void => call.cancel();
    options.signal.addEventListener("abort", onAbort, { once: true });
    try {
      call.write(bytes);
      call.end();
      for (;;) {
        const message = queue.shift();
        if (message) {
          if (message.error_message) {
            answeredByServer = true;
            throw classifyTritonMessage(message.error_message);
          }
          if (message.infer_response) yield outputsOf(message.infer_response);
          continue;
        }
        if (done) break;
        await new Promise<void>((resolve) => (wake = resolve));
      }
      if (failure && failure.code !== GrpcStatus.OK) {
        if (failure.code === GrpcStatus.CANCELLED && options.signal.aborted) return;
        throw classifyGrpcError(failure, options.timeoutSeconds);
      }
    } finally {
      options.signal.removeEventListener("abort", onAbort);
      if (!done && !answeredByServer) call.cancel();
    }
  }
}

/** The stream's request is serialized before the call (stream, prepare): grpc-js sends the bytes as they are. */
function passThrough(bytes: Buffer): Buffer {
  return bytes;
}

function sameNames(a: readonly string[], b: readonly string[]): boolean {
  return a === b || (a.length === b.length && a.every((name, i) => name === b[i]));
}

function outputsOf(response: InferResponseMessage): Map<string, Tensor> {
  const out = new Map<string, Tensor>();
  response.outputs.forEach((spec, i) => {
    if (!isDatatype(spec.datatype)) throw upstream(`output ${spec.name} has unsupported datatype ${spec.datatype}`);
    const raw = response.raw_output_contents[i];
    if (raw === undefined) throw upstream(`output ${spec.name} has no raw contents`);
    try {
      out.set(spec.name, decode(spec.name, spec.datatype, spec.shape.map(Number), raw));
    } catch (error) {
      throw upstream(`output ${spec.name}: ${(error as Error).message}`);
    }
  });
  return out;
}
