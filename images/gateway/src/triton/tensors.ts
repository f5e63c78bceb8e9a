/**
 * KServe v2 tensors as raw little-endian bytes (raw_input_contents /
 * raw_output_contents), for the datatypes the ensemble contract uses.
 */

export type Datatype = "BYTES" | "UINT32" | "UINT64" | "FP32";
export type Element = string | number | bigint;

export interface Tensor {
  name: string;
  datatype: Datatype;
  shape: number[];
  /** Flat, row-major. BYTES elements as UTF-8 strings (inputs) or raw bytes (outputs). */
  data: Element[] | Uint8Array[];
}

export const DATATYPES: readonly Datatype[] = ["BYTES", "UINT32", "UINT64", "FP32"];

export function isDatatype(value: string): value is Datatype {
  return (DATATYPES as readonly string[]).includes(value);
}

export function elementCount(shape: readonly number[]): number {
  return shape.reduce((n, d) => n * d, 1);
}

export function encode(t: Tensor): Buffer {
  const n = elementCount(t.shape);
  if (t.data.length !== n) {
    throw new RangeError(`tensor ${t.name}: shape [${t.shape.join(", ")}] holds ${n} elements, got ${t.data.length}`);
  }
  switch (t.datatype) {
    case "BYTES": {
      const parts: Buffer[] = [];
      for (const v of t.data) {
        const bytes = typeof v === "string" ? Buffer.from(v, "utf8") : Buffer.from(v as Uint8Array);
        const len = Buffer.alloc(4);
        len.writeUInt32LE(bytes.length);
        parts.push(len, bytes);
      }
      return Buffer.concat(parts);
    }
    case "UINT32": {
      const out = Buffer.alloc(4 * n);
      t.data.forEach((v, i) => out.writeUInt32LE(Number(v), 4 * i));
      return out;
    }
    case "UINT64": {
      const out = Buffer.alloc(8 * n);
      t.data.forEach((v, i) => out.writeBigUInt64LE(BigInt(v as number | bigint), 8 * i));
      return out;
    }
    case "FP32": {
      const out = Buffer.alloc(4 * n);
      t.data.forEach((v, i) => out.writeFloatLE(Number(v), 4 * i));
      return out;
    }
  }
}

/**
 * Decode raw tensor bytes (Triton's outputs, or a client's binary inputs).
 * BYTES come back as Uint8Array elements. The bytes must hold exactly the
 * shape's elements: a short, long or truncated buffer is a RangeError.
 */
export function decode(name: string, datatype: Datatype, shape: number[], raw: Uint8Array): Tensor {
  const n = elementCount(shape);
  const buf = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
  const fixed = (size: number): void => {
    if (buf.length !== size * n)
      throw new RangeError(`${buf.length} bytes for ${n} ${datatype} elements (needs ${size * n})`);
  };
  switch (datatype) {
    case "BYTES": {
      const data: Uint8Array[] = [];
      let offset = 0;
      for (let i = 0; i < n; i++) {
        if (offset + 4 > buf.length) throw new RangeError(`BYTES element ${i} has no 4-byte length prefix`);
        const len = buf.readUInt32LE(offset);
        offset += 4;
        if (offset + len > buf.length)
          throw new RangeError(`BYTES element ${i} claims ${len} bytes, ${buf.length - offset} are left`);
        data.push(Uint8Array.prototype.slice.call(buf, offset, offset + len));
        offset += len;
      }
      if (offset !== buf.length)
        throw new RangeError(`${buf.length - offset} bytes after the last of ${n} BYTES elements`);
      return { name, datatype, shape, data };
    }
    case "UINT32":
      fixed(4);
      return { name, datatype, shape, data: Array.from({ length: n }, (_, i) => buf.readUInt32LE(4 * i)) };
    case "UINT64":
      fixed(8);
      return { name, datatype, shape, data: Array.from({ length: n }, (_, i) => buf.readBigUInt64LE(8 * i)) };
    case "FP32":
      fixed(4);
      return { name, datatype, shape, data: Array.from({ length: n }, (_, i) => buf.readFloatLE(4 * i)) };
  }
}
