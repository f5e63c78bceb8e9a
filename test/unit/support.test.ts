import { describe, expect, it } from "vitest";
import {
  daysUntil,
  refuses,
  supportFindings,
  supportRows,
  supportState,
  WARN_DAYS,
  type SupportInput,
} from "../../infra/catalog/support";

/** A stack on what this branch pins: Node 26 everywhere, Triton 23.05, EKS 1.35. */
const current = (): SupportInput => ({
  programNode: "26.11.1",
  gatewayNode: "26.11.1",
  tritonVersion: "23.05",
  kubernetesVersion: "1.35",
});

describe("supportState", () => {
  it("counts whole days to the last supported day", () => {
    expect(daysUntil("2026-04-30", "2026-04-30")).toBe(0);
    expect(daysUntil("2026-04-30", "2026-05-01")).toBe(-1);
    expect(daysUntil("2029-04-30", "2029-01-30")).toBe(90);
  });

  it("is supported beyond the window, ending inside it (the end day included), ended the day after", () => {
    expect(supportState("2029-04-30", "2029-01-29")).toBe("supported");
    expect(supportState("2029-04-30", "2029-01-30")).toBe("ending");
    expect(supportState("2029-04-30", "2029-04-30")).toBe("ending");
    expect(supportState("2029-04-30", "2029-05-01")).toBe("ended");
    expect(WARN_DAYS).toBe(90);
  });
});

describe("support findings", () => {
  it("fine: Node 26, EKS 1.35 and every chart range on 2026-07-01 (over 90 days before Python 3.10's end)", () => {
    expect(supportFindings(current(), "2026-07-01")).toEqual({ errors: [], warnings: [] });
  });

  it("within 90 days of Python 3.10's end: a warning that names the date and the source", () => {
    const f = supportFindings(current(), "2026-08-15");
    expect(f.errors).toEqual([]);
    expect(f.warnings).toEqual([
      expect.objectContaining({
        key: "build.tritonVersion",
        message: expect.stringMatching(/^Python 3\.10 .* ends on 2026-10-31, in 77 days.*devguide\.python\.org/),
      }),
    ]);
  });

  it("Python 3.10 past its end in the Triton 23.05 image: an acknowledged warning, not a refusal, with the reason", () => {
    const f = supportFindings(current(), "2026-11-25");
    expect(f.errors).toEqual([]);
    expect(f.warnings).toHaveLength(1);
    expect(f.warnings[0]?.message).toMatch(
      /ended on 2026-10-31; acknowledged, not refused: FasterTransformer's Triton backend/,
    );
  });

  it("the gateway image on Node 20 after 2026-04-30: refused, with the fix", () => {
    const f = supportFindings({ ...current(), gatewayNode: "20.20.2" }, "2026-11-25");
    expect(f.errors).toEqual([
      {
        key: "images/gateway/Dockerfile",
        value: "20.20.2",
        message: expect.stringContaining("Node (gateway image) ended on 2026-04-30") as string,
        fix: expect.stringContaining("node:26.x.y-bookworm-slim") as string,
      },
    ]);
  });

  it("the program on Node 22 within 90 days of 2027-04-30: a warning", () => {
    const f = supportFindings({ ...current(), programNode: "22.23.0" }, "2027-02-15");
    expect(f.errors).toEqual([]);
    expect(f.warnings.map((w) => w.message)).toContainEqual(
      expect.stringMatching(/^Node \(Pulumi program\) ends on 2027-04-30, in 74 days/),
    );
  });

  it("EKS 1.34 within 90 days of its standard support end warns (extended support follows); 1.31 the day before its extended end warns", () => {
    const std = supportFindings({ ...current(), kubernetesVersion: "1.34" }, "2026-11-25");
    expect(std.errors).toEqual([]);
    expect(std.warnings.map((w) => w.message)).toContainEqual(
      expect.stringMatching(
        /^EKS 1\.34 standard support ends on 2026-12-02, in 7 days; after it a warning, not a refusal: extended support/,
      ),
    );
    const ext = supportFindings({ ...current(), kubernetesVersion: "1.31" }, "2026-11-25");
    expect(ext.errors).toEqual([]);
    expect(ext.warnings.map((w) => w.message)).toContainEqual(
      expect.stringMatching(/^EKS 1\.31 extended support ends on 2026-11-26, in 1 days/),
    );
  });

  it("an EKS version past extended support is left to kubernetesVersionFinding (no double report)", () => {
    const f = supportFindings({ ...current(), kubernetesVersion: "1.29" }, "2026-11-25");
    expect(f.errors.filter((e) => e.message.startsWith("EKS"))).toEqual([]);
  });

  it("a Kubernetes version outside a chart's range is refused", () => {
    const f = supportFindings({ ...current(), kubernetesVersion: "1.37" }, "2026-11-25");
    expect(f.errors.map((e) => e.message)).toContainEqual(
      expect.stringMatching(/^karpenter 1\.14\.1 on Kubernetes 1\.37: outside the chart's supported Kubernetes range/),
    );
  });

  it("an existing cluster (no kubernetesVersion) is judged on Node and Python only", () => {
    const existing: SupportInput = { programNode: "26.11.1", tritonVersion: "23.05" };
    expect(supportRows(existing, "2026-11-25").map((r) => r.key)).toEqual([
      "runtime",
      "images/gateway/Dockerfile",
      "build.tritonVersion",
    ]);
  });
});

describe("support table of the committed stacks (scripts/ci/support-table.ts)", () => {
  const rowsOf = async (stack: string, today: string) => {
    const { stackRows } = await import("../../scripts/ci/support-table");
    const { readFileSync } = await import("node:fs");
    const file = `Pulumi.${stack}.yaml`;
    return stackRows(readFileSync(`${__dirname}/../../${file}`, "utf8"), file, today);
  };

  it("dev and prod pass on 2026-11-25 (Python 3.10 acknowledged) and are refused once Node 26 ends", async () => {
    for (const stack of ["dev", "prod"]) {
      expect((await rowsOf(stack, "2026-11-25")).filter(refuses)).toEqual([]);
      expect((await rowsOf(stack, "2029-05-01")).filter(refuses).map((r) => r.what)).toContain("Node (gateway image)");
    }
  });
});
