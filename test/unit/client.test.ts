import { describe, expect, it } from "vitest";
import { completions, ensembleInputs } from "../../infra/client/ensemble";
import { decodeInferResponse, encodeInferRequest, normaliseEndpoint } from "../../infra/client/http";
import { createClient } from "../../infra/client/connect";
import { decodeGrpcInferResponse, encodeGrpcInferRequest, grpcOrigin } from "../../infra/client/grpc";
import { ProtoMessage, ProtoWriter } from "../../infra/client/protobuf";
import { decodeBinary, encodeBinary } from "../../infra/client/tensors";

const utf8 = new TextEncoder();

describe("tensor binary encoding", () => {
  it("writes BYTES as 4-byte little-endian length + raw bytes, invalid UTF-8 included", () => {
    const raw = encodeBinary({ name: "t", datatype: "BYTES", shape: [2], data: ["hé", new Uint8Array([0xff, 0xfe])] });
    expect([...raw]).toEqual([3, 0, 0, 0, 0x68, 0xc3, 0xa9, 2, 0, 0, 0, 0xff, 0xfe]);
    const back = decodeBinary("t", "BYTES", [2], raw);
    expect(back.map((b) => [...(b as Uint8Array)])).toEqual([[0x68, 0xc3, 0xa9], [0xff, 0xfe]]);
  });

  it("round-trips UINT64 beyond 2^53 and FP32", () => {
    const big = 2n ** 63n + 5n;
    const raw = encodeBinary({ name: "s", datatype: "UINT64", shape: [1, 1], data: [big] });
    expect(decodeBinary("s", "UINT64", [1, 1], raw)).toEqual([big]);
    const f = encodeBinary({ name: "f", datatype: "FP32", shape: [2], data: [0.5, -2] });
    expect(decodeBinary("f", "FP32", [2], f)).toEqual([0.5, -2]);
  });

  it("refuses data that does not fill the shape", () => {
    expect(() => encodeBinary({ name: "x", datatype: "UINT32", shape: [2, 2], data: [1, 2, 3] })).toThrow(/holds 4 elements, got 3/);
  });
});

describe("infer request/response encoding", () => {
  it("sends JSON when every value fits JSON, binary tail otherwise", () => {
    const plain = encodeInferRequest({ inputs: [{ name: "a", datatype: "UINT32", shape: [1, 1], data: [7] }] });
    expect(plain.headers["Content-Type"]).toBe("application/json");
    expect(JSON.parse(new TextDecoder().decode(plain.body))).toEqual({
      inputs: [{ name: "a", datatype: "UINT32", shape: [1, 1], data: [7] }],
    });

    const mixed = encodeInferRequest({
      inputs: [
        { name: "a", datatype: "UINT32", shape: [1, 1], data: [7] },
        { name: "b", datatype: "BYTES", shape: [1, 1], data: [new Uint8Array([0xc3])] },
      ],
      outputs: ["o"],
      binaryOutputs: true,
    });
    const headerLength = Number(mixed.headers["Inference-Header-Content-Length"]);
    const header = JSON.parse(new TextDecoder().decode(mixed.body.subarray(0, headerLength)));
    expect(header.inputs[1]).toEqual({ name: "b", datatype: "BYTES", shape: [1, 1], parameters: { binary_data_size: 5 } });
    expect(header.outputs).toEqual([{ name: "o", parameters: { binary_data: true } }]);
    expect([...mixed.body.subarray(headerLength)]).toEqual([1, 0, 0, 0, 0xc3]);
  });

  it("decodes a response mixing JSON and binary outputs", () => {
    const tail = encodeBinary({ name: "text_output", datatype: "BYTES", shape: [1, 1], data: ["ok"] });
    const header = utf8.encode(
      JSON.stringify({
        model_name: "ensemble",
        model_version: "1",
        outputs: [
          { name: "text_output", datatype: "BYTES", shape: [1, 1], parameters: { binary_data_size: tail.length } },
          { name: "input_token_count", datatype: "UINT32", shape: [1, 1], data: [3] },
          { name: "output_token_count", datatype: "UINT32", shape: [1, 1], data: [1] },
        ],
      }),
    );
    const body = new Uint8Array(header.length + tail.length);
    body.set(header);
    body.set(tail, header.length);
    const response = decodeInferResponse(body, header.length);
    expect(completions(response, 1)).toEqual([{ text: "ok", inputTokens: 3, outputTokens: 1 }]);
    expect(() => completions(response, 2)).toThrow(/for 2 prompts/);
  });
});

describe("ensemble inputs", () => {
  it("sends only the required inputs when no option is set", () => {
    const tensors = ensembleInputs(["a", "bb"], { maxTokens: 4 });
    expect(tensors.map((t) => [t.name, t.datatype, t.shape])).toEqual([
      ["text_input", "BYTES", [2, 1]],
      ["max_tokens", "UINT32", [2, 1]],
    ]);
  });

  it("maps options to the contract's names and types, padding ragged word lists with empty strings", () => {
    const tensors = ensembleInputs(["a", "b"], {
      maxTokens: [1, 2],
      stopWords: [["x", "y"], ["z"]],
      badWords: ["q"],
      topK: 5,
      topP: 0.5,
      temperature: 0.7,
      repetitionPenalty: 1.1,
      randomSeed: 9n,
    });
    const byName = Object.fromEntries(tensors.map((t) => [t.name, t]));
    expect(byName.max_tokens.data).toEqual([1, 2]);
    expect(byName.stop_words).toEqual({ name: "stop_words", datatype: "BYTES", shape: [2, 2], data: ["x", "y", "z", ""] });
    expect(byName.bad_words.shape).toEqual([2, 1]);
    expect(byName.top_k.datatype).toBe("UINT32");
    expect(byName.top_p.datatype).toBe("FP32");
    expect(byName.random_seed).toEqual({ name: "random_seed", datatype: "UINT64", shape: [2, 1], data: [9n, 9n] });
  });

  it("rejects a per-prompt list of the wrong length", () => {
    expect(() => ensembleInputs(["a", "b"], { maxTokens: [1] })).toThrow(/1 values for 2 prompts/);
  });
});

describe("endpoint", () => {
  it("accepts host:port and strips trailing slashes", () => {
    expect(normaliseEndpoint("127.0.0.1:8000/")).toBe("http://127.0.0.1:8000");
    expect(normaliseEndpoint("https://x.example/triton/")).toBe("https://x.example/triton");
    expect(() => normaliseEndpoint("grpc://x:8001")).toThrow(/only http/);
  });
});

describe("protobuf wire format", () => {
  it("encodes varints, negative int64 as ten bytes, and packed repeated int64", () => {
    const bytes = new ProtoWriter().string(1, "ab").int64(2, 300).packedInt64(3, [-1, 2]).bool(4, true).finish();
    expect([...bytes.subarray(0, 7)]).toEqual([0x0a, 2, 0x61, 0x62, 0x10, 0xac, 0x02]);
    const m = new ProtoMessage(bytes);
    expect(m.string(1)).toBe("ab");
    expect(m.int64List(2)).toEqual([300n]);
    expect(m.int64List(3)).toEqual([-1n, 2n]);
    expect(m.bool(4)).toBe(true);
    expect(m.bool(5)).toBe(false);
  });

  it("refuses truncated input", () => {
    expect(() => new ProtoMessage(Uint8Array.from([0x0a, 5, 0x61]))).toThrow(/truncated/);
  });
});

describe("gRPC ModelInfer messages", () => {
  it("puts every input in raw_input_contents and reads raw_output_contents back", () => {
    const request = encodeGrpcInferRequest("ensemble", {
      inputs: [
        { name: "text_input", datatype: "BYTES", shape: [1, 1], data: ["hi"] },
        { name: "max_tokens", datatype: "UINT32", shape: [1, 1], data: [4] },
      ],
      outputs: ["text_output"],
    });
    const m = new ProtoMessage(request);
    expect(m.string(1)).toBe("ensemble");
    const inputs = m.messages(5);
    expect(inputs.map((i) => [i.string(1), i.string(2), i.int64List(3)])).toEqual([
      ["text_input", "BYTES", [1n, 1n]],
      ["max_tokens", "UINT32", [1n, 1n]],
    ]);
    expect(m.messages(6).map((o) => o.string(1))).toEqual(["text_output"]);
    expect(m.bytesList(7).map((b) => [...b])).toEqual([[2, 0, 0, 0, 0x68, 0x69], [4, 0, 0, 0]]);

    const response = new ProtoWriter()
      .string(1, "ensemble")
      .string(2, "1")
      .message(5, new ProtoWriter().string(1, "output_token_count").string(2, "UINT32").packedInt64(3, [1, 1]))
      .bytes(6, Uint8Array.from([7, 0, 0, 0]))
      .finish();
    const decoded = decodeGrpcInferResponse(new ProtoMessage(response));
    expect(decoded.outputs.get("output_token_count")).toEqual({ name: "output_token_count", datatype: "UINT32", shape: [1, 1], data: [7] });
  });

  it("chooses the protocol from the endpoint scheme", () => {
    expect(grpcOrigin("grpc://host:8001")).toBe("http://host:8001");
    expect(grpcOrigin("grpcs://host:443")).toBe("https://host");
    expect(grpcOrigin("host:8001")).toBe("http://host:8001");
    expect(() => grpcOrigin("http://host:8001")).toThrow(/grpc:\/\//);
    expect(createClient("grpc://h:8001").protocol).toBe("grpc");
    expect(createClient("h:8000").protocol).toBe("http");
    expect(createClient("https://h/triton").protocol).toBe("http");
  });
});
