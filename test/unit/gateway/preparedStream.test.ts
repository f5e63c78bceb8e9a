/**
 * TritonGateway.prepare(): the request serialized ahead (while admission
 * decides) reaches Triton as the request serialized in stream() would, and is
 * used only for the very inputs and outputs it was built for. Against a
 * gRPC server of the same proto on loopback that records what it receives.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Server, ServerCredentials, type ServerDuplexStream, type UntypedServiceImplementation } from "@grpc/grpc-js";
import { loadSync } from "@grpc/proto-loader";
import { PROTO_PATH, TritonGateway } from "../../../images/gateway/src/triton/tritonClient";
import type { Tensor } from "../../../images/gateway/src/triton/tensors";

const definition = loadSync(PROTO_PATH, { keepCase: true, longs: String, enums: String, defaults: true });
const service = definition["inference.GRPCInferenceService"] as Parameters<Server["addService"]>[0];

/** What the server received, one decoded request per stream. */
const received: unknown[] = [];
const server = new Server();
let client: TritonGateway;

beforeAll(async () => {
  const implementation: UntypedServiceImplementation = {
    ModelStreamInfer: (call: ServerDuplexStream<unknown, unknown>) => {
      call.on("data", (request: unknown) => {
        received.push(request);
        call.write({ error_message: "", infer_response: null });
        call.end();
      });
    },
  };
  server.addService(service, implementation);
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync("127.0.0.1:0", ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))),
  );
  client = new TritonGateway(`127.0.0.1:${port}`, "ensemble");
});

afterAll(() => {
  client.close();
  server.forceShutdown();
});

const inputs = (prompt: string): Tensor[] => [
  { name: "text_input", datatype: "BYTES", shape: [1, 1], data: [prompt] },
  { name: "max_tokens", datatype: "UINT32", shape: [1, 1], data: [16] },
];

async function send(tensors: Tensor[], outputs: string[]): Promise<unknown> {
  const signal = new AbortController().signal;
  const responses = client.stream(tensors, { outputs, signal, deadline: Date.now() + 5000, timeoutSeconds: 5 });
  while (!(await responses.next()).done) {
    // drained: the request is what is checked
  }
  return received.at(-1);
}

describe("TritonGateway.prepare", () => {
  it("sends the prepared bytes: the request Triton receives is the one stream() would build", async () => {
    const fresh = await send(inputs("hello é"), ["text_output"]);
    const prepared = inputs("hello é");
    client.prepare(prepared, ["text_output"]);
    expect(await send(prepared, ["text_output"])).toEqual(fresh);
  });

  it("uses them for those inputs and outputs only", async () => {
    const prepared = inputs("prepared");
    client.prepare(prepared, ["text_output"]);
    // Other outputs asked: built again, not the prepared bytes.
    const other = (await send(prepared, ["text_output", "output_token_count"])) as { outputs: { name: string }[] };
    expect(other.outputs.map((o) => o.name)).toEqual(["text_output", "output_token_count"]);
    // Other inputs: their own request.
    client.prepare(inputs("prepared"), ["text_output"]);
    const another = (await send(inputs("another"), ["text_output"])) as { raw_input_contents: Buffer[] };
    expect(another.raw_input_contents[0].subarray(4).toString()).toBe("another");
  });
});
