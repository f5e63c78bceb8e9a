import { describe, expect, it } from "vitest";
import {
  DEFAULT_KUBERNETES_VERSION,
  EKS_VERSIONS,
  eksSupport,
  kubernetesVersionFinding,
  offeredVersions,
  standardVersions,
} from "../../infra/catalog/eks";

const TODAY = "2026-11-23";

describe("EKS versions table", () => {
  it("keeps each version's 14-month standard and 12-month extended windows in order", () => {
    for (const v of EKS_VERSIONS) {
      expect(v.released < v.standardEnd && v.standardEnd < v.extendedEnd).toBe(true);
      const months = (a: string, b: string) =>
        (Number(b.slice(0, 4)) - Number(a.slice(0, 4))) * 12 + Number(b.slice(5, 7)) - Number(a.slice(5, 7));
      expect(months(v.standardEnd, v.extendedEnd)).toBe(12);
      expect(months(v.released, v.standardEnd)).toBeGreaterThanOrEqual(13);
      expect(months(v.released, v.standardEnd)).toBeLessThanOrEqual(14);
    }
  });

  it("has the facts sheet's dates for 1.31 and 1.34 to 1.36", () => {
    const end = (v: string) => EKS_VERSIONS.find((e) => e.version === v);
    expect(end("1.31")?.extendedEnd).toBe("2026-11-26");
    expect(end("1.34")?.standardEnd).toBe("2026-12-02");
    expect(end("1.35")?.standardEnd).toBe("2027-03-27");
    expect(end("1.36")?.standardEnd).toBe("2027-08-02");
  });

  it("defaults to a version in standard support today", () => {
    expect(DEFAULT_KUBERNETES_VERSION).toBe("1.35");
    expect(eksSupport(DEFAULT_KUBERNETES_VERSION, TODAY).status).toBe("standard");
    expect(kubernetesVersionFinding(DEFAULT_KUBERNETES_VERSION, TODAY)).toBeUndefined();
  });

  it("classifies versions by date", () => {
    expect(standardVersions(TODAY)).toEqual(["1.36", "1.35", "1.34"]);
    expect(offeredVersions(TODAY)).toEqual(["1.36", "1.35", "1.34", "1.33", "1.32", "1.31"]);
    expect(eksSupport("1.31", "2026-11-26").status).toBe("extended");
    expect(eksSupport("1.31", "2026-11-27").status).toBe("ended");
    expect(eksSupport("1.36", "2026-01-01").status).toBe("unreleased");
    expect(eksSupport("1.99", TODAY).status).toBe("unknown");
  });

  it("refuses versions EKS does not offer and warns about extended support", () => {
    expect(kubernetesVersionFinding("1.30", TODAY)).toMatchObject({
      level: "error",
      message: expect.stringContaining("2026-07-23"),
    });
    expect(kubernetesVersionFinding("1.4", TODAY)).toMatchObject({
      level: "error",
      message: expect.stringContaining("not a Kubernetes version EKS offers"),
    });
    expect(kubernetesVersionFinding("1.36", "2026-03-01")).toMatchObject({ level: "error" });
    const w = kubernetesVersionFinding("1.31", TODAY);
    expect(w).toMatchObject({ level: "warning", message: expect.stringContaining("extended support") });
    expect(w?.fix).toContain("1.35");
  });
});
