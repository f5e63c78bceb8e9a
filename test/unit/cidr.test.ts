import { describe, expect, it } from "vitest";
import { cidrListFindings, parseCidr, sshCidrFindings } from "../../infra/config/cidr";

describe("parseCidr", () => {
  it.each([
    ["999.1.1.1/32", /number 999/],
    ["10.0.0.0/33", /prefix \/33/],
    ["10.300.0.0/16", /number 300/],
    ["10.0.0/16", /not an IPv4 CIDR/],
    ["10.0.0.0", /not an IPv4 CIDR/],
    [" 10.0.0.0/16", /not an IPv4 CIDR/],
    ["010.0.0.0/8", /leading zeros/],
    ["10.0.0.1/16", /host bits/],
  ])("refuses %s", (text, reason) => {
    const p = parseCidr(text);
    expect(p.ok).toBe(false);
    if (!p.ok) expect(p.reason).toMatch(reason);
  });

  it("names both meanings of a CIDR with host bits", () => {
    const p = parseCidr("10.0.0.1/16");
    expect(!p.ok && p.fix).toBe("use 10.0.0.0/16 for the whole range, or 10.0.0.1/32 for that one address");
  });

  it.each([
    ["203.0.113.7/32", 1],
    ["10.0.0.0/16", 65536],
    ["0.0.0.0/0", 2 ** 32],
  ])("accepts %s (%d addresses)", (text, size) => {
    const p = parseCidr(text);
    expect(p).toMatchObject({ ok: true, cidr: { text, size } });
  });
});

describe("SSH ingress CIDRs", () => {
  it("refuses anything broader than a /16, including the two halves of the internet", () => {
    const f = sshCidrFindings(["0.0.0.0/1", "128.0.0.0/1", "10.0.0.0/15", "0.0.0.0/0"]);
    expect(f.map((x) => [x.index, x.level])).toEqual([
      [0, "error"],
      [1, "error"],
      [2, "error"],
      [3, "error"],
    ]);
    expect(f[0]?.message).toContain("2,147,483,648 addresses");
    expect(f[0]?.message).toContain("/16");
  });

  it("accepts a /16 and a single address", () => {
    expect(sshCidrFindings(["10.1.0.0/16", "34.201.10.5/32"])).toEqual([]);
  });

  it("warns about documentation ranges, telling to replace them", () => {
    const f = sshCidrFindings(["198.51.100.7/32", "198.51.100.0/28", "203.0.113.0/24", "192.0.2.0/25", "192.0.3.0/24"]);
    expect(f.map((x) => x.index)).toEqual([0, 1, 2, 3]);
    expect(f.every((x) => x.level === "warning")).toBe(true);
    expect(f[0]?.fix).toMatch(/replace it .* before the first pulumi up/);
  });

  it("reports parse errors with their index", () => {
    expect(sshCidrFindings(["10.0.0.0/16", "999.1.1.1/32"])).toMatchObject([
      { index: 1, level: "error", value: "999.1.1.1/32" },
    ]);
    expect(cidrListFindings(["10.300.0.0/16"])).toMatchObject([{ index: 0, level: "error" }]);
  });
});
