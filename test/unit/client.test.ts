import { createServer } from "node:net";
import { describe, expect, it } from "vitest";
import { completions, ensembleInputs } from "../../infra/client/ensemble";
import { decodeInferResponse, encodeInferRequest, normaliseEndpoint } from "../../infra/client/http";
import { createClient } from "../../infra/client/connect";
import { TritonGrpcClient, fromModelInferResponse, grpcTarget, toModelInferRequest } from "../../infra/client/grpc";
import { kserveMethods } from "../../infra/client/kserveProto";
import { TritonClientError } from "../../infra/client/api";
import { decodeBinary, encodeBinary } from "../../infra/client/tensors";

const utf8 = new TextEncoder();

describe("tensor binary encoding", () => {
  it("writes BYTES as 4-byte little-endian length + raw bytes, invalid UTF-8 included", () => {
    const raw = encodeBinary({ name: "t", datatype: "BYTES", shape: [2], data: ["hé", new Uint8Array([0xff, 0xfe])] });
    expect([...raw]).toEqual([3, 0, 0, 0, 0x68, 0xc3, 0xa9, 2, 0, 0, 0, 0xff, 0xfe]);
    const back = decodeBinary("t", "BYTES", [2], raw);
    expect(back.map((b) => [...(b as Uint8Array)])).toEqual([
      [0x68, 0xc3, 0xa9],
      [0xff, 0xfe],
    ]);
  });

  it("round-trips UINT64 beyond 2^53 and FP32", () => {
    const big = 2n ** 63n + 5n;
    const raw = encodeBinary({ name: "s", datatype: "UINT64", shape: [1, 1], data: [big] });
    expect(decodeBinary("s", "UINT64", [1, 1], raw)).toEqual([big]);
    const f = encodeBinary({ name: "f", datatype: "FP32", shape: [2], data: [0.5, -2] });
    expect(decodeBinary("f", "FP32", [2], f)).toEqual([0.5, -2]);
  });

  it("refuses data that does not fill the shape", () => {
    expect(() => encodeBinary({ name: "x", datatype: "UINT32", shape: [2, 2], data: [1, 2, 3] })).toThrow(
      /holds 4 elements, got 3/,
    );
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
    expect(header.inputs[1]).toEqual({
      name: "b",
      datatype: "BYTES",
      shape: [1, 1],
      parameters: { binary_data_size: 5 },
    });
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
    expect(byName.stop_words).toEqual({
      name: "stop_words",
      datatype: "BYTES",
      shape: [2, 2],
      data: ["x", "y", "z", ""],
    });
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

describe("gRPC messages (kserve_v2.proto via proto-loader)", () => {
  const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString("hex");
  const byte = (n: number) => n.toString(16).padStart(2, "0");
  /** A length-delimited field (wire type 2) as hex; test payloads stay under 128 bytes, so the length is one byte. */
  const field = (number: number, payloadHex: string) => {
    const length = payloadHex.length / 2;
    if (length >= 128) throw new RangeError("test payload needs a multi-byte length");
    return byte((number << 3) | 2) + byte(length) + payloadHex;
  };
  const text = (number: number, value: string) => field(number, Buffer.from(value, "latin1").toString("hex"));
  /** A tensor spec {name=1, datatype=2, shape=3 packed int64} with dims below 128. */
  const spec = (name: string, datatype: string, dims: number[]) =>
    text(1, name) + text(2, datatype) + field(3, dims.map(byte).join(""));

  it("serialises ModelInferRequest with the spec's field numbers, every input in raw_input_contents", () => {
    const bytes = kserveMethods().ModelInfer.requestSerialize(
      toModelInferRequest("m", {
        inputs: [{ name: "a", datatype: "UINT32", shape: [1, 1], data: [7] }],
        outputs: ["o"],
      }),
    );
    // KServe v2: model_name=1, inputs=5, outputs=6 {name=1}, raw_input_contents=7; an absent version and id are not sent.
    expect(hex(bytes)).toBe(
      text(1, "m") + field(5, spec("a", "UINT32", [1, 1])) + field(6, text(1, "o")) + field(7, "07000000"),
    );
  });

  it("sends the version and request id when given, and BYTES in the binary-extension layout", () => {
    const message = toModelInferRequest(
      "ensemble",
      {
        id: "r1",
        inputs: [
          { name: "text_input", datatype: "BYTES", shape: [1, 1], data: ["hi"] },
          { name: "max_tokens", datatype: "UINT32", shape: [1, 1], data: [4] },
        ],
      },
      "2",
    );
    expect(message.outputs).toEqual([]);
    expect(message.raw_input_contents.map((b) => [...b])).toEqual([
      [2, 0, 0, 0, 0x68, 0x69],
      [4, 0, 0, 0],
    ]);
    // model_version=2, id=3.
    expect(hex(kserveMethods().ModelInfer.requestSerialize(message))).toBe(
      text(1, "ensemble") +
        text(2, "2") +
        text(3, "r1") +
        field(5, spec("text_input", "BYTES", [1, 1])) +
        field(5, spec("max_tokens", "UINT32", [1, 1])) +
        field(7, "020000006869") +
        field(7, "04000000"),
    );
  });

  it("refuses an input whose data does not fill its shape before anything is sent", () => {
    expect(() =>
      toModelInferRequest("m", { inputs: [{ name: "x", datatype: "UINT32", shape: [2], data: [1] }] }),
    ).toThrow(/holds 2 elements, got 1/);
  });

  it("decodes ModelInferResponse wire bytes into tensors, UINT64 beyond 2^53 intact", () => {
    const big = 2n ** 63n + 5n;
    const seedRaw = Buffer.alloc(8);
    seedRaw.writeBigUInt64LE(big);
    // model_name=1, model_version=2, id=3, outputs=5, raw_output_contents=6 in the order of outputs.
    const wire =
      text(1, "ensemble") +
      text(2, "1") +
      text(3, "req-9") +
      field(5, spec("output_token_count", "UINT32", [1, 1])) +
      field(5, spec("seed", "UINT64", [1, 1])) +
      field(6, "07000000") +
      field(6, seedRaw.toString("hex"));
    const response = fromModelInferResponse(kserveMethods().ModelInfer.responseDeserialize(Buffer.from(wire, "hex")));
    expect(response.modelName).toBe("ensemble");
    expect(response.modelVersion).toBe("1");
    expect(response.id).toBe("req-9");
    expect(response.outputs.get("output_token_count")).toEqual({
      name: "output_token_count",
      datatype: "UINT32",
      shape: [1, 1],
      data: [7],
    });
    expect(response.outputs.get("seed")?.data).toEqual([big]);
  });

  it("refuses a response whose raw_output_contents do not match its outputs", () => {
    const message = kserveMethods().ModelInfer.responseDeserialize(
      Buffer.from(field(5, spec("o", "FP32", [1])), "hex"),
    );
    expect(message.id).toBe("");
    expect(() => fromModelInferResponse(message)).toThrow(/1 outputs but 0 raw_output_contents/);
  });

  it("decodes ModelMetadataResponse, a variable dim as -1 without loss", () => {
    // name=1, versions=2, platform=3, inputs=4, outputs=5; -1 is a ten-byte varint.
    const variable = "ff".repeat(9) + "01";
    const wire =
      text(1, "p") +
      text(2, "1") +
      text(3, "python") +
      field(4, text(1, "t") + text(2, "BYTES") + field(3, variable)) +
      field(5, spec("n", "UINT32", [1]));
    expect(kserveMethods().ModelMetadata.responseDeserialize(Buffer.from(wire, "hex"))).toEqual({
      name: "p",
      versions: ["1"],
      platform: "python",
      inputs: [{ name: "t", datatype: "BYTES", shape: ["-1"] }],
      outputs: [{ name: "n", datatype: "UINT32", shape: ["1"] }],
    });
  });
});

describe("gRPC client", () => {
  it("parses grpc:// and grpcs:// endpoints into a dial target", () => {
    expect(grpcTarget("grpc://host:8001")).toEqual({ target: "host:8001", tls: false, baseUrl: "grpc://host:8001" });
    expect(grpcTarget("grpcs://host:443/")).toEqual({ target: "host:443", tls: true, baseUrl: "grpcs://host:443" });
    expect(grpcTarget("grpcs://host").target).toBe("host:443");
    expect(grpcTarget("host:8001").baseUrl).toBe("grpc://host:8001");
    expect(grpcTarget("grpc://[::1]:8001").target).toBe("[::1]:8001");
    expect(() => grpcTarget("http://host:8001")).toThrow(/grpc:\/\//);
    expect(() => grpcTarget("grpc://host:8001/v2")).toThrow(/no path/);
  });

  it("chooses the protocol from the endpoint scheme", () => {
    expect(createClient("grpc://h:8001").protocol).toBe("grpc");
    expect(createClient("h:8000").protocol).toBe("http");
    expect(createClient("https://h/triton").protocol).toBe("http");
  });

  it("reports a closed port as gRPC UNAVAILABLE with the method's URL", async () => {
    const port = await new Promise<number>((resolve) => {
      const server = createServer().listen(0, "127.0.0.1", () => {
        const address = server.address();
        server.close(() => resolve(typeof address === "object" && address !== null ? address.port : 0));
      });
    });
    const client = new TritonGrpcClient(`grpc://127.0.0.1:${port}`, { timeoutMs: 5_000 });
    try {
      const error: unknown = await client.isLive().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(TritonClientError);
      const failure = error as TritonClientError;
      expect(failure.status).toBe(14);
      expect(failure.statusText).toBe("gRPC UNAVAILABLE (14)");
      expect(failure.url).toBe(`grpc://127.0.0.1:${port}/inference.GRPCInferenceService/ServerLive`);
    } finally {
      client.close();
    }
  });
});
