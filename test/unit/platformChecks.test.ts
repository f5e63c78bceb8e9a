import { describe, expect, it } from "vitest";
import { DEFAULT_BUILD } from "../../infra/catalog/upstream";
import { platformFindings, type PlatformConfig } from "../../infra/config/platformChecks";

const TODAY = "2026-11-23";
const good = (): PlatformConfig => ({
  build: {
    tritonVersion: "23.05",
    backendCommit: DEFAULT_BUILD.backend.commit,
    ftCommit: DEFAULT_BUILD.ft.commit,
    sshAllowedCidrs: ["34.201.10.5/32"],
  },
  serving: { allowedCidrs: [] },
  cluster: { mode: "create", kubernetesVersion: "1.35" },
  network: { mode: "create", vpcCidr: "10.42.0.0/16" },
});

describe("platform findings", () => {
  it("a default stack with a real SSH CIDR has only the acknowledged Python 3.10 warning (Triton 23.05's image)", () => {
    const f = platformFindings(good(), TODAY);
    expect(f.errors).toEqual([]);
    expect(f.warnings.map((w) => w.key)).toEqual(["build.tritonVersion"]);
    expect(f.warnings[0]?.message).toContain("acknowledged, not refused");
  });

  it("the former defaults (PR test-merge FT, pre-23.05 backend, EKS 1.31) warn, naming the known-good set", () => {
    const c = good();
    c.build.backendCommit = "b09b6352dc56e41cbd087eef195551df3d26f892";
    c.build.ftCommit = "fc6e53fee7674361475e06e003e263b768f50f77";
    c.cluster.kubernetesVersion = "1.31";
    const f = platformFindings(c, TODAY);
    expect(f.errors).toEqual([]);
    expect(f.warnings.map((w) => w.key)).toEqual([
      "build",
      "cluster.kubernetesVersion",
      "build.tritonVersion",
      "cluster.kubernetesVersion",
    ]);
    expect(f.warnings[0]?.message).toContain(DEFAULT_BUILD.ft.commit);
  });

  it("everything wrong at once is reported at once", () => {
    const c = good();
    c.build.backendCommit = "main";
    c.build.ftCommit = undefined;
    c.build.sshAllowedCidrs = ["0.0.0.0/1", "128.0.0.0/1", "198.51.100.7/32", "999.1.1.1/32"];
    c.serving.allowedCidrs = ["10.0.0.0/33"];
    c.cluster.kubernetesVersion = "1.30";
    c.network.vpcCidr = "10.300.0.0/16";
    const f = platformFindings(c, TODAY);
    expect(f.errors.map((e) => e.key)).toEqual([
      "build.backendCommit",
      "build.ftCommit",
      "cluster.kubernetesVersion",
      "build.sshAllowedCidrs[0]",
      "build.sshAllowedCidrs[1]",
      "build.sshAllowedCidrs[3]",
      "serving.allowedCidrs[0]",
      "network.vpcCidr",
    ]);
    expect(f.warnings.map((w) => w.key)).toEqual(["build.sshAllowedCidrs[2]", "build.tritonVersion"]);
    expect(f.errors[0]?.fix).toContain(DEFAULT_BUILD.backend.commit);
  });

  it("checks the EKS version only when the stack creates the cluster", () => {
    const c = good();
    c.cluster = { mode: "kubeconfig", kubernetesVersion: "1.20" };
    expect(platformFindings(c, TODAY).errors).toEqual([]);
  });
});
