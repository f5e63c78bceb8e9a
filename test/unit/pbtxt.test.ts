import { describe, expect, it } from "vitest";
import { bool, enumValue, escapeString, float, int, msg, str, toPbtxt } from "../../infra/plan/pbtxt";

describe("pbtxt string escaping", () => {
  it("escapes quotes, backslashes and control characters", () => {
    expect(escapeString('say "hi"')).toBe('"say \\"hi\\""');
    expect(escapeString("C:\\path")).toBe('"C:\\\\path"');
    expect(escapeString("a\nb\rc\td")).toBe('"a\\nb\\rc\\td"');
    expect(escapeString("\u0000\u0001\u007f")).toBe('"\\000\\001\\177"');
  });

  it("writes non-ASCII as octal escapes of its UTF-8 bytes", () => {
    expect(escapeString("é")).toBe('"\\303\\251"');
    expect(escapeString("日")).toBe('"\\346\\227\\245"');
    expect(escapeString("😀")).toBe('"\\360\\237\\230\\200"');
  });

  it("leaves printable ASCII, including single quotes and braces, alone", () => {
    expect(escapeString("it's {ok} [1] #x")).toBe(`"it's {ok} [1] #x"`);
  });

  it("cannot be broken out of by a crafted value", () => {
    const text = toPbtxt(msg(["name", str('x"\nbackend: "evil')]));
    expect(text).toBe('name: "x\\"\\nbackend: \\"evil"\n');
    expect(text.split("\n").filter(Boolean)).toHaveLength(1);
  });
});

describe("pbtxt layout", () => {
  it("renders scalars, nested messages, repeated scalars and repeated messages", () => {
    const text = toPbtxt(
      msg(
        ["name", str("m")],
        ["max_batch_size", int(8)],
        ["dims", [int(2), int(-1)]],
        ["shape", []],
        ["flag", bool(false)],
        ["rate", float(1)],
        ["kind", enumValue("KIND_CPU")],
        ["skipped", undefined],
        ["sub", msg(["x", int(1)])],
        ["item", [msg(["a", int(1)]), msg(["a", int(2)])]],
      ),
      ["header line"],
    );
    expect(text).toBe(
      [
        "# header line",
        'name: "m"',
        "max_batch_size: 8",
        "dims: [ 2, -1 ]",
        "shape: [ ]",
        "flag: false",
        "rate: 1.0",
        "kind: KIND_CPU",
        "sub {",
        "  x: 1",
        "}",
        "item [",
        "  {",
        "    a: 1",
        "  },",
        "  {",
        "    a: 2",
        "  }",
        "]",
        "",
      ].join("\n"),
    );
  });

  it("refuses values the text format cannot carry", () => {
    expect(() => toPbtxt(msg(["bad-name", int(1)]))).toThrow(/field name "bad-name"/);
    expect(() => toPbtxt(msg(["kind", enumValue("KIND CPU")]))).toThrow(/not an identifier/);
    expect(() => toPbtxt(msg(["n", int(1.5)]))).toThrow(/safe integer/);
    expect(() => toPbtxt(msg(["n", int(2 ** 60)]))).toThrow(/safe integer/);
    expect(() => toPbtxt(msg(["f", float(Number.NaN)]))).toThrow(/finite/);
    expect(() => toPbtxt(msg(["a", int(1)]), ["two\nlines"])).toThrow(/line break/);
  });
});
