import { describe, expect, it } from "vitest";
import { endpointAccess, endpointAccessProblems, isPrivateCidr } from "../../infra/resolve/clusterAccess";

describe("EKS endpoint access", () => {
  it("recognises RFC 1918 ranges only", () => {
    expect(
      ["10.0.0.0/8", "10.42.3.7/32", "172.16.0.0/12", "172.31.255.0/24", "192.168.1.0/24"].map(isPrivateCidr),
    ).toEqual([true, true, true, true, true]);
    expect(
      ["0.0.0.0/0", "172.32.0.0/16", "172.0.0.0/8", "198.51.100.7/32", "10.0.0.0/7", "2001:db8::/32", "x"].map(
        isPrivateCidr,
      ),
    ).toEqual([false, false, false, false, false, false, false]);
  });

  it("is public from the deploying machine's CIDRs when pulumi up runs from a public address", () => {
    const a = endpointAccess({ deployerCidrs: ["198.51.100.7/32"] });
    expect(a).toMatchObject({
      endpointPublicAccess: true,
      endpointPrivateAccess: true,
      publicAccessCidrs: ["198.51.100.7/32"],
    });
    expect(endpointAccessProblems({ deployerCidrs: ["198.51.100.7/32"] })).toEqual([]);
  });

  it("is private when pulumi up runs from inside the VPC (private addresses)", () => {
    const a = endpointAccess({ deployerCidrs: ["10.42.0.0/24", "192.168.0.5/32"] });
    expect(a).toMatchObject({ endpointPublicAccess: false, endpointPrivateAccess: true });
    expect(a.publicAccessCidrs).toBeUndefined();
  });

  it("stays public when one deployer CIDR is public", () => {
    expect(endpointAccess({ deployerCidrs: ["10.0.0.0/24", "203.0.113.9/32"] }).endpointPublicAccess).toBe(true);
  });

  it("honours explicit settings", () => {
    expect(endpointAccess({ access: "private", deployerCidrs: ["198.51.100.7/32"] }).endpointPublicAccess).toBe(false);
    expect(
      endpointAccess({ access: "public", publicAccessCidrs: ["203.0.113.0/24"], deployerCidrs: ["10.0.0.0/24"] }),
    ).toMatchObject({ endpointPublicAccess: true, publicAccessCidrs: ["203.0.113.0/24"] });
  });

  it("refuses a public endpoint open to the internet or to nobody", () => {
    expect(endpointAccessProblems({ publicAccessCidrs: ["0.0.0.0/0"], deployerCidrs: ["198.51.100.7/32"] })).toEqual([
      expect.objectContaining({ key: "cluster.endpointPublicAccessCidrs", value: "0.0.0.0/0" }),
    ]);
    expect(endpointAccessProblems({ access: "public", deployerCidrs: [] })).toEqual([
      expect.objectContaining({ key: "build.sshAllowedCidrs", message: expect.stringMatching(/is empty/) }),
    ]);
    expect(endpointAccessProblems({ access: "private", publicAccessCidrs: ["0.0.0.0/0"], deployerCidrs: [] })).toEqual(
      [],
    );
  });
});
