/**
 * The few Protocol Buffers wire-format pieces the KServe v2 gRPC messages need:
 * varints, length-delimited fields (strings, bytes, nested messages, packed
 * int64) and a reader that collects fields by number. Hand-written so the
 * client needs no protobuf or gRPC package.
 */

const WIRE_VARINT = 0;
const WIRE_FIXED64 = 1;
const WIRE_LENGTH = 2;
const WIRE_FIXED32 = 5;

const utf8Encoder = new TextEncoder();
const utf8Decoder = new TextDecoder("utf-8");

export class ProtoWriter {
  private readonly chunks: Uint8Array[] = [];
  private length = 0;

  private push(bytes: Uint8Array): void {
    this.chunks.push(bytes);
    this.length += bytes.length;
  }

  private varint(value: bigint): void {
    // Negative int64 values take ten bytes of two's complement, as protobuf does.
    let v = BigInt.asUintN(64, value);
    const out: number[] = [];
    do {
      let byte = Number(v & 0x7fn);
      v >>= 7n;
      if (v !== 0n) byte |= 0x80;
      out.push(byte);
    } while (v !== 0n);
    this.push(Uint8Array.from(out));
  }

  private tag(field: number, wire: number): void {
    this.varint(BigInt((field << 3) | wire));
  }

  bool(field: number, value: boolean): this {
    if (value) {
      this.tag(field, WIRE_VARINT);
      this.varint(1n);
    }
    return this;
  }

  int64(field: number, value: number | bigint): this {
    this.tag(field, WIRE_VARINT);
    this.varint(BigInt(value));
    return this;
  }

  bytes(field: number, value: Uint8Array): this {
    this.tag(field, WIRE_LENGTH);
    this.varint(BigInt(value.length));
    this.push(value);
    return this;
  }

  string(field: number, value: string): this {
    return value === "" ? this : this.bytes(field, utf8Encoder.encode(value));
  }

  message(field: number, value: ProtoWriter): this {
    return this.bytes(field, value.finish());
  }

  packedInt64(field: number, values: readonly (number | bigint)[]): this {
    if (values.length === 0) return this;
    const inner = new ProtoWriter();
    for (const v of values) inner.varint(BigInt(v));
    return this.bytes(field, inner.finish());
  }

  finish(): Uint8Array {
    const out = new Uint8Array(this.length);
    let offset = 0;
    for (const chunk of this.chunks) {
      out.set(chunk, offset);
      offset += chunk.length;
    }
    return out;
  }
}

export type ProtoValue = { wire: 0; value: bigint } | { wire: 2; value: Uint8Array } | { wire: 1 | 5; value: Uint8Array };

/** Fields of one message by number, in wire order. Unknown fields are kept and ignored by callers. */
export class ProtoMessage {
  private readonly fields = new Map<number, ProtoValue[]>();

  constructor(bytes: Uint8Array) {
    let offset = 0;
    const readVarint = (): bigint => {
      let result = 0n;
      let shift = 0n;
      for (;;) {
        if (offset >= bytes.length) throw new TypeError("protobuf: truncated varint");
        const byte = bytes[offset++];
        result |= BigInt(byte & 0x7f) << shift;
        if ((byte & 0x80) === 0) return result;
        shift += 7n;
        if (shift > 63n) throw new TypeError("protobuf: varint too long");
      }
    };
    while (offset < bytes.length) {
      const key = Number(readVarint());
      const field = key >>> 3;
      const wire = key & 7;
      let value: ProtoValue;
      if (wire === WIRE_VARINT) {
        value = { wire: 0, value: readVarint() };
      } else if (wire === WIRE_LENGTH) {
        const length = Number(readVarint());
        if (offset + length > bytes.length) throw new TypeError("protobuf: truncated length-delimited field");
        value = { wire: 2, value: bytes.subarray(offset, offset + length) };
        offset += length;
      } else if (wire === WIRE_FIXED64 || wire === WIRE_FIXED32) {
        const size = wire === WIRE_FIXED64 ? 8 : 4;
        if (offset + size > bytes.length) throw new TypeError("protobuf: truncated fixed field");
        value = { wire, value: bytes.subarray(offset, offset + size) };
        offset += size;
      } else {
        throw new TypeError(`protobuf: unsupported wire type ${wire} for field ${field}`);
      }
      const list = this.fields.get(field);
      if (list) list.push(value);
      else this.fields.set(field, [value]);
    }
  }

  private all(field: number): ProtoValue[] {
    return this.fields.get(field) ?? [];
  }

  bool(field: number): boolean {
    const last = this.all(field).at(-1);
    return last !== undefined && last.wire === 0 && last.value !== 0n;
  }

  bytesList(field: number): Uint8Array[] {
    return this.all(field).flatMap((v) => (v.wire === 2 ? [v.value] : []));
  }

  string(field: number): string {
    const last = this.bytesList(field).at(-1);
    return last === undefined ? "" : utf8Decoder.decode(last);
  }

  stringList(field: number): string[] {
    return this.bytesList(field).map((b) => utf8Decoder.decode(b));
  }

  messages(field: number): ProtoMessage[] {
    return this.bytesList(field).map((b) => new ProtoMessage(b));
  }

  /** Repeated int64, packed or not. */
  int64List(field: number): bigint[] {
    const out: bigint[] = [];
    for (const v of this.all(field)) {
      if (v.wire === 0) out.push(BigInt.asIntN(64, v.value));
      else if (v.wire === 2) out.push(...decodePacked(v.value));
    }
    return out;
  }
}

function decodePacked(bytes: Uint8Array): bigint[] {
  const out: bigint[] = [];
  let offset = 0;
  while (offset < bytes.length) {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      if (offset >= bytes.length) throw new TypeError("protobuf: truncated packed varint");
      const byte = bytes[offset++];
      result |= BigInt(byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) break;
      shift += 7n;
      if (shift > 63n) throw new TypeError("protobuf: varint too long");
    }
    out.push(BigInt.asIntN(64, result));
  }
  return out;
}
