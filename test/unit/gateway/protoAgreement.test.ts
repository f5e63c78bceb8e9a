/**
 * The gateway (images/gateway/src/triton/kserve_v2_stream.proto) and the client
 * (infra/client/kserve_v2.proto) each carry the slice of Triton's KServe v2
 * proto they use. Each leaves out fields it never touches, so the files
 * differ; but wherever both describe the same message or call, they must
 * describe the same wire format: one of them drifting (a field number, a
 * type, repeated or not) would decode Triton's bytes as something else.
 */
import { join } from "node:path";
import { loadSync, type MessageTypeDefinition, type PackageDefinition } from "@grpc/proto-loader";
import { describe, expect, it } from "vitest";

const ROOT = join(__dirname, "../../..");
const GATEWAY = join(ROOT, "images/gateway/src/triton/kserve_v2_stream.proto");
const CLIENT = join(ROOT, "infra/client/kserve_v2.proto");

/** What decides a field's wire format (its name is the key it is filed under). */
interface Field {
  number: number;
  label: string;
  type: string;
  typeName: string;
}

interface Descriptor {
  name: string;
  field: (Field & { name: string })[];
  nestedType: Descriptor[];
}

/** Each message's fields by name (nested messages too, by full name), and each rpc's wire shape, of one proto. */
interface Shape {
  messages: Map<string, Map<string, Field>>;
  methods: Map<string, string>;
}

function shapeOf(file: string): Shape {
  const definition: PackageDefinition = loadSync(file, { keepCase: true });
  const messages = new Map<string, Map<string, Field>>();
  const methods = new Map<string, string>();
  const addMessage = (name: string, d: Descriptor): void => {
    messages.set(
      name,
      new Map(
        d.field.map((f) => [f.name, { number: f.number, label: f.label, type: f.type, typeName: f.typeName }] as const),
      ),
    );
    for (const nested of d.nestedType) addMessage(`${name}.${nested.name}`, nested);
  };
  for (const [name, entry] of Object.entries(definition)) {
    if ("format" in entry) {
      if (entry.format === "Protocol Buffer 3 DescriptorProto") {
        addMessage(name, (entry as MessageTypeDefinition<unknown, unknown>).type as Descriptor);
      }
      continue;
    }
    for (const [rpc, m] of Object.entries(entry)) {
      const stream = (s: boolean): string => (s ? "stream " : "");
      const request = (m.requestType.type as Descriptor).name;
      const response = (m.responseType.type as Descriptor).name;
      methods.set(
        `${name}.${rpc}`,
        `${m.path} (${stream(m.requestStream)}${request}) -> ${stream(m.responseStream)}${response}`,
      );
    }
  }
  return { messages, methods };
}

/** Where two shapes disagree on what they both describe. */
function disagreements(a: Shape, b: Shape): string[] {
  const out: string[] = [];
  for (const [message, fieldsA] of a.messages) {
    const fieldsB = b.messages.get(message);
    if (!fieldsB) continue;
    for (const [name, fa] of fieldsA) {
      const fb = fieldsB.get(name);
      if (fb && JSON.stringify(fa) !== JSON.stringify(fb)) {
        out.push(`${message}.${name}: ${JSON.stringify(fa)} vs ${JSON.stringify(fb)}`);
      }
    }
    // A number one file leaves out may not carry another field in the other.
    const byNumber = new Map([...fieldsB].map(([name, f]) => [f.number, name]));
    for (const [name, fa] of fieldsA) {
      const other = byNumber.get(fa.number);
      if (other !== undefined && other !== name) out.push(`${message}: field ${fa.number} is ${name} vs ${other}`);
    }
  }
  for (const [rpc, wire] of a.methods) {
    const other = b.methods.get(rpc);
    if (other !== undefined && other !== wire) out.push(`${rpc}: ${wire} vs ${other}`);
  }
  return out;
}

describe("the gateway's and the client's KServe v2 protos", () => {
  const gateway = shapeOf(GATEWAY);
  const client = shapeOf(CLIENT);

  it("share the messages and calls both use", () => {
    const shared = [...gateway.messages.keys()].filter((m) => client.messages.has(m));
    expect(shared).toEqual(
      expect.arrayContaining([
        "inference.ModelMetadataResponse.TensorMetadata",
        "inference.ModelInferRequest",
        "inference.ModelInferRequest.InferInputTensor",
        "inference.ModelInferResponse",
        "inference.ModelInferResponse.InferOutputTensor",
      ]),
    );
    expect([...gateway.methods.keys()].filter((m) => client.methods.has(m)).length).toBe(4);
  });

  it("agree field by field (number, type, label) wherever both describe a message", () => {
    expect(disagreements(gateway, client)).toEqual([]);
    expect(disagreements(client, gateway)).toEqual([]);
  });

  it("catches a field number that moved (self-check of the comparison)", () => {
    const moved = shapeOf(GATEWAY);
    const shape = moved.messages.get("inference.ModelInferResponse")?.get("raw_output_contents");
    if (shape) shape.number = 7;
    expect(disagreements(moved, client)).toEqual([
      expect.stringContaining("inference.ModelInferResponse.raw_output_contents"),
    ]);
  });
});
