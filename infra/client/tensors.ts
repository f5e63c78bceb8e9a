/**
 * KServe v2 tensors and their two HTTP encodings: JSON `data` arrays and the
 * binary tensor extension (raw little-endian bytes after the JSON header).
 * Binary is needed for BYTES elements that are not valid UTF-8 (JSON strings
 * cannot carry them) and for UINT64/INT64 values beyond 2^53.
 */

export type Datatype =
  "BOOL" | "UINT8" | "UINT16" | "UINT32" | "UINT64" | "INT8" | "INT16" | "INT32" | "INT64" | "FP32" | "FP64" | "BYTES";

export type TensorValue = number | bigint | boolean | string | Uint8Array;

export interface Tensor {
  name: string;
  datatype: Datatype;
  shape: number[];
  data: TensorValue[];
}

interface FixedWidth {
  bytes: number;
  write(view: DataView, offset: number, value: TensorValue): void;
  read(view: DataView, offset: number): number | bigint | boolean;
}

function asNumber(value: TensorValue, datatype: Datatype): number {
  if (typeof value === "number") return value;
  if (typeof value === "bigint") return Number(value);
  if (typeof value === "boolean") return value ? 1 : 0;
  throw new TypeError(`a ${datatype} tensor cannot hold a ${typeof value === "string" ? "string" : "byte array"}`);
}

function asBigInt(value: TensorValue, datatype: Datatype): bigint {
  if (typeof value === "bigint") return value;
  const n = asNumber(value, datatype);
  if (!Number.isInteger(n)) throw new TypeError(`a ${datatype} tensor needs integers, got ${n}`);
  return BigInt(n);
}

const FIXED: Record<Exclude<Datatype, "BYTES">, FixedWidth> = {
  BOOL: {
    bytes: 1,
    write: (v, o, x) => v.setUint8(o, asNumber(x, "BOOL") ? 1 : 0),
    read: (v, o) => v.getUint8(o) !== 0,
  },
  UINT8: { bytes: 1, write: (v, o, x) => v.setUint8(o, asNumber(x, "UINT8")), read: (v, o) => v.getUint8(o) },
  UINT16: {
    bytes: 2,
    write: (v, o, x) => v.setUint16(o, asNumber(x, "UINT16"), true),
    read: (v, o) => v.getUint16(o, true),
  },
  UINT32: {
    bytes: 4,
    write: (v, o, x) => v.setUint32(o, asNumber(x, "UINT32"), true),
    read: (v, o) => v.getUint32(o, true),
  },
  UINT64: {
    bytes: 8,
    write: (v, o, x) => v.setBigUint64(o, asBigInt(x, "UINT64"), true),
    read: (v, o) => v.getBigUint64(o, true),
  },
  INT8: { bytes: 1, write: (v, o, x) => v.setInt8(o, asNumber(x, "INT8")), read: (v, o) => v.getInt8(o) },
  INT16: {
    bytes: 2,
    write: (v, o, x) => v.setInt16(o, asNumber(x, "INT16"), true),
    read: (v, o) => v.getInt16(o, true),
  },
  INT32: {
    bytes: 4,
    write: (v, o, x) => v.setInt32(o, asNumber(x, "INT32"), true),
    read: (v, o) => v.getInt32(o, true),
  },
  INT64: {
    bytes: 8,
    write: (v, o, x) => v.setBigInt64(o, asBigInt(x, "INT64"), true),
    read: (v, o) => v.getBigInt64(o, true),
  },
  FP32: {
    bytes: 4,
    write: (v, o, x) => v.setFloat32(o, asNumber(x, "FP32"), true),
    read: (v, o) => v.getFloat32(o, true),
  },
  FP64: {
    bytes: 8,
    write: (v, o, x) => v.setFloat64(o, asNumber(x, "FP64"), true),
    read: (v, o) => v.getFloat64(o, true),
  },
};

export function elementCount(shape: readonly number[]): number {
  return shape.reduce((n, d) => n * d, 1);
}

export function checkShape(tensor: Tensor): void {
  if (tensor.shape.some((d) => !Number.isInteger(d) || d < 0)) {
    throw new TypeError(`tensor ${tensor.name}: shape [${tensor.shape.join(",")}] must be non-negative integers`);
  }
  const expected = elementCount(tensor.shape);
  if (tensor.data.length !== expected) {
    throw new TypeError(
      `tensor ${tensor.name}: shape [${tensor.shape.join(",")}] holds ${expected} elements, got ${tensor.data.length}`,
    );
  }
}

const utf8 = new TextEncoder();

/** Little-endian raw bytes of a tensor, as the binary extension carries them. */
export function encodeBinary(tensor: Tensor): Uint8Array {
  checkShape(tensor);
  if (tensor.datatype === "BYTES") {
    const parts = tensor.data.map((value) => {
      if (typeof value === "string") return utf8.encode(value);
      if (value instanceof Uint8Array) return value;
      throw new TypeError(`tensor ${tensor.name}: BYTES elements must be strings or Uint8Array`);
    });
    const out = new Uint8Array(parts.reduce((n, p) => n + 4 + p.length, 0));
    const view = new DataView(out.buffer);
    let offset = 0;
    for (const part of parts) {
      view.setUint32(offset, part.length, true);
      out.set(part, offset + 4);
      offset += 4 + part.length;
    }
    return out;
  }
  const codec = FIXED[tensor.datatype];
  const out = new Uint8Array(tensor.data.length * codec.bytes);
  const view = new DataView(out.buffer);
  tensor.data.forEach((value, i) => codec.write(view, i * codec.bytes, value));
  return out;
}

/** Elements of a binary-encoded tensor: BYTES come back as Uint8Array. */
export function decodeBinary(
  name: string,
  datatype: Datatype,
  shape: readonly number[],
  bytes: Uint8Array,
): TensorValue[] {
  const count = elementCount(shape);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out: TensorValue[] = [];
  if (datatype === "BYTES") {
    let offset = 0;
    for (let i = 0; i < count; i++) {
      if (offset + 4 > bytes.length) throw new TypeError(`output ${name}: BYTES data truncated`);
      const length = view.getUint32(offset, true);
      if (offset + 4 + length > bytes.length) throw new TypeError(`output ${name}: BYTES data truncated`);
      out.push(bytes.slice(offset + 4, offset + 4 + length));
      offset += 4 + length;
    }
    return out;
  }
  const codec = FIXED[datatype];
  if (bytes.length !== count * codec.bytes) {
    throw new TypeError(`output ${name}: ${bytes.length} bytes for ${count} ${datatype} elements`);
  }
  for (let i = 0; i < count; i++) out.push(codec.read(view, i * codec.bytes));
  return out;
}

/** True when JSON cannot carry the tensor's values faithfully. */
export function needsBinary(tensor: Tensor): boolean {
  return tensor.data.some(
    (v) =>
      v instanceof Uint8Array ||
      (typeof v === "bigint" && (v > BigInt(Number.MAX_SAFE_INTEGER) || v < -BigInt(Number.MAX_SAFE_INTEGER))),
  );
}

/** JSON `data` array of a tensor that needsBinary() said JSON can carry. */
export function jsonData(tensor: Tensor): (number | boolean | string)[] {
  checkShape(tensor);
  return tensor.data.map((v) => {
    if (typeof v === "bigint") return Number(v);
    if (v instanceof Uint8Array) throw new TypeError(`tensor ${tensor.name}: byte arrays need the binary encoding`);
    return v;
  });
}

const DATATYPES: ReadonlySet<string> = new Set<Datatype>([
  "BOOL",
  "UINT8",
  "UINT16",
  "UINT32",
  "UINT64",
  "INT8",
  "INT16",
  "INT32",
  "INT64",
  "FP32",
  "FP64",
  "BYTES",
]);

export function isDatatype(value: string): value is Datatype {
  return DATATYPES.has(value);
}
