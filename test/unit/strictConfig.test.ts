import { describe, expect, it } from "vitest";
import { formatProblems, resolveStack } from "../../infra/resolve";
import { gpt2Config, withOverrides, type RawConfig } from "../lib/fixtures";
import { runProgram } from "../lib/pulumi";

const TODAY = "2026-11-23";
const realCidr = (cfg: RawConfig): RawConfig => withOverrides(cfg, { build: { sshAllowedCidrs: ["34.201.10.5/32"] } });

describe("the whole triton-ft namespace is read (mock runtime)", () => {
  it("refuses a misspelt top-level key at preview, with a did-you-mean, registering nothing", async () => {
    let registered = -1;
    const cfg = { ...gpt2Config(), servng: { replicas: 3 } };
    await expect(runProgram(cfg).then((r) => (registered = r.resources.length))).rejects.toThrow(
      /triton-ft:servng = \(value not shown\): is not a configuration key of this stack[\s\S]*did you mean triton-ft:serving\?/,
    );
    expect(registered).toBe(-1);
  });

  it("refuses a dotted key written without --path and prints the command that fixes it", async () => {
    const cfg = { ...gpt2Config(), "serving.replicas": 2 };
    await expect(runProgram(cfg)).rejects.toThrow(
      "pulumi config rm triton-ft:serving.replicas && pulumi config set --path 'triton-ft:serving.replicas' <value>",
    );
  });

  it("never prints the value of an unknown key (it may be a misspelt secret)", async () => {
    const cfg = { ...gpt2Config() } as Record<string, unknown>;
    await expect(runProgram(cfg, { secrets: { hftoken: "hf_s3cr3t_value" } })).rejects.toThrow(
      /did you mean triton-ft:hfToken\?/,
    );
    await runProgram(cfg, { secrets: { hftoken: "hf_s3cr3t_value" } }).catch((e: Error) => {
      expect(e.message).not.toContain("hf_s3cr3t_value");
    });
  });
});

describe("every problem at once", () => {
  it("schema problems (top-level and nested keys, types, ranges) and rule problems in one report", () => {
    const cfg = {
      ...withOverrides(gpt2Config(), {
        build: { ftCommit: "main", sshAllowedCidrs: ["0.0.0.0/1", "128.0.0.0/1"] },
        serving: { replcas: 2, idleTimeoutSeconds: 10, tensorParallel: 5, maxBatchSize: "8" },
        cluster: { kubernetesVersion: "1.30" },
      }),
      servng: {},
    };
    const { problems, stack } = resolveStack(cfg, {}, { today: TODAY });
    expect(stack).toBeUndefined();
    expect(problems.map((p) => p.key).sort()).toEqual(
      [
        "triton-ft:servng",
        "triton-ft:serving.replcas",
        "triton-ft:serving.idleTimeoutSeconds",
        "triton-ft:serving.maxBatchSize",
        "triton-ft:build.ftCommit",
        "triton-ft:build.sshAllowedCidrs[0]",
        "triton-ft:build.sshAllowedCidrs[1]",
        "triton-ft:cluster.kubernetesVersion",
        // rule problems, not hidden by the schema problems above
        "triton-ft:serving.tensorParallel",
        "triton-ft:serving.tensorParallel",
      ].sort(),
    );
    const text = formatProblems("dev", problems);
    expect(text).toContain(
      'triton-ft:serving.maxBatchSize = "8": is text but must be a number.\n     fix: give a whole number of at least 1',
    );
    expect(text).toContain(
      "triton-ft:serving.idleTimeoutSeconds = 10: is out of range: it must be a whole number from 60 to 6000",
    );
  });

  it("a malformed CIDR anywhere is refused with the reason", () => {
    const { problems } = resolveStack(
      withOverrides(realCidr(gpt2Config()), {
        serving: { allowedCidrs: ["10.300.0.0/16"] },
        network: { vpcCidr: "10.0.0.0/33" },
      }),
      {},
      { today: TODAY },
    );
    expect(problems.map((p) => [p.key, p.message])).toEqual([
      ["triton-ft:serving.allowedCidrs[0]", "has the number 300, but each part of an IPv4 address is 0 to 255"],
      ["triton-ft:network.vpcCidr", "has prefix /33, but an IPv4 prefix is /0 to /32"],
    ]);
  });
});

describe("warnings at preview", () => {
  it("the committed stacks' documentation-range SSH CIDR and an extended-support EKS version warn, but resolve", () => {
    const { stack, problems, warnings } = resolveStack(
      withOverrides(gpt2Config(), { cluster: { kubernetesVersion: "1.32" } }),
      {},
      { today: TODAY },
    );
    expect(problems).toEqual([]);
    expect(stack).toBeDefined();
    expect(warnings.map((w) => w.key)).toEqual([
      "triton-ft:cluster.kubernetesVersion",
      "triton-ft:build.sshAllowedCidrs[0]",
      "triton-ft:build.tritonVersion",
    ]);
    expect(warnings[1]?.fix).toContain("before the first pulumi up");
  });

  it("a stack with a real CIDR and the defaults has only the acknowledged Python 3.10 warning (Triton 23.05's image)", () => {
    const { warnings, problems } = resolveStack(realCidr(gpt2Config()), {}, { today: TODAY });
    expect(problems).toEqual([]);
    expect(warnings.map((w) => w.key)).toEqual(["triton-ft:build.tritonVersion"]);
    expect(warnings[0]?.message).toContain("acknowledged, not refused");
  });

  it("pins outside the known-good table warn and name the known-good set", () => {
    const { warnings } = resolveStack(
      withOverrides(realCidr(gpt2Config()), {
        build: {
          backendCommit: "b09b6352dc56e41cbd087eef195551df3d26f892",
          ftCommit: "fc6e53fee7674361475e06e003e263b768f50f77",
        },
      }),
      {},
      { today: TODAY },
    );
    expect(warnings.map((w) => w.key)).toEqual(["triton-ft:build", "triton-ft:build.tritonVersion"]);
    expect(warnings[0]?.message).toContain("c6936c39be6fc57c161db34cfe5c45d1bef81ee2");
  });
});
