/**
 * A small writer for Protocol Buffers text format, the syntax of Triton's
 * config.pbtxt. Configs are built as a typed tree and serialised here, so no
 * value is ever spliced into a text template: strings are escaped, enum names
 * and field names are checked, and numbers are checked for range.
 */

export type PbScalar =
  | { kind: "string"; value: string }
  | { kind: "int"; value: number }
  | { kind: "float"; value: number }
  | { kind: "bool"; value: boolean }
  | { kind: "enum"; value: string };

export interface PbMessage {
  kind: "message";
  fields: PbField[];
}

/** One field; repeated fields hold a list (of scalars or of messages, never mixed). */
export interface PbField {
  name: string;
  value: PbScalar | PbMessage | PbScalar[] | PbMessage[];
}

const IDENT = /^[A-Za-z_][A-Za-z0-9_]*$/;

export const str = (value: string): PbScalar => ({ kind: "string", value });
export const int = (value: number): PbScalar => ({ kind: "int", value });
export const float = (value: number): PbScalar => ({ kind: "float", value });
export const bool = (value: boolean): PbScalar => ({ kind: "bool", value });
export const enumValue = (value: string): PbScalar => ({ kind: "enum", value });

/** Build a message from [name, value] pairs; `undefined` values are left out. */
export function msg(...fields: Array<[string, PbField["value"] | undefined]>): PbMessage {
  const out: PbField[] = [];
  for (const [name, value] of fields) if (value !== undefined) out.push({ name, value });
  return { kind: "message", fields: out };
}

/**
 * Escape a string for a double-quoted text-format literal. Printable ASCII stays
 * as is; everything else is written as octal escapes of its UTF-8 bytes, which
 * both protobuf's C++ parser (Triton) and its Python parser decode back to the
 * same bytes.
 */
export function escapeString(value: string): string {
  let out = "";
  for (const byte of Buffer.from(value, "utf8")) {
    if (byte === 0x5c) out += "\\\\";
    else if (byte === 0x22) out += '\\"';
    else if (byte === 0x0a) out += "\\n";
    else if (byte === 0x0d) out += "\\r";
    else if (byte === 0x09) out += "\\t";
    else if (byte >= 0x20 && byte < 0x7f) out += String.fromCharCode(byte);
    else out += "\\" + byte.toString(8).padStart(3, "0");
  }
  return `"${out}"`;
}

function scalar(s: PbScalar, path: string): string {
  switch (s.kind) {
    case "string":
      return escapeString(s.value);
    case "int":
      if (!Number.isSafeInteger(s.value)) throw new Error(`pbtxt: ${path} must be a safe integer, got ${s.value}`);
      return String(s.value);
    case "float": {
      if (!Number.isFinite(s.value)) throw new Error(`pbtxt: ${path} must be a finite number, got ${s.value}`);
      const text = String(s.value);
      return /[.eE]/.test(text) ? text : `${text}.0`;
    }
    case "bool":
      return s.value ? "true" : "false";
    case "enum":
      if (!IDENT.test(s.value))
        throw new Error(`pbtxt: ${path} enum value ${JSON.stringify(s.value)} is not an identifier`);
      return s.value;
  }
}

function isMessage(v: PbScalar | PbMessage): v is PbMessage {
  return v.kind === "message";
}

function body(m: PbMessage, indent: string, path: string): string[] {
  const lines: string[] = [];
  for (const f of m.fields) {
    if (!IDENT.test(f.name))
      throw new Error(`pbtxt: field name ${JSON.stringify(f.name)} at ${path} is not an identifier`);
    const at = path ? `${path}.${f.name}` : f.name;
    const v = f.value;
    if (Array.isArray(v)) {
      const items = v as Array<PbScalar | PbMessage>;
      if (items.length > 0 && items.some(isMessage) && !items.every(isMessage)) {
        throw new Error(`pbtxt: ${at} mixes messages and scalars`);
      }
      if (items.length > 0 && items.every(isMessage)) {
        lines.push(`${indent}${f.name} [`);
        items.forEach((item, i) => {
          lines.push(`${indent}  {`);
          lines.push(...body(item as PbMessage, `${indent}    `, `${at}[${i}]`));
          lines.push(`${indent}  }${i < items.length - 1 ? "," : ""}`);
        });
        lines.push(`${indent}]`);
      } else {
        const parts = (items as PbScalar[]).map((s, i) => scalar(s, `${at}[${i}]`));
        lines.push(`${indent}${f.name}: [ ${parts.join(", ")}${parts.length ? " " : ""}]`);
      }
    } else if (isMessage(v)) {
      lines.push(`${indent}${f.name} {`);
      lines.push(...body(v, `${indent}  `, at));
      lines.push(`${indent}}`);
    } else {
      lines.push(`${indent}${f.name}: ${scalar(v, at)}`);
    }
  }
  return lines;
}

/** Serialise a top-level message; `header` lines become `#` comments. */
export function toPbtxt(root: PbMessage, header: string[] = []): string {
  const comments = header.map((line) => {
    if (/[\r\n]/.test(line)) throw new Error("pbtxt: a header comment line must not contain a line break");
    return `# ${line}`.trimEnd();
  });
  return [...comments, ...body(root, "", "")].join("\n") + "\n";
}
