import { describe, expect, it } from "vitest";
import type { ConfigProblem, SecretPresence } from "../../infra/config";
import { generatedPages } from "../../scripts/docsGenerated";
import { formatProblems, resolveStack } from "../../infra/resolve";
import { BACKEND_COMMIT, FT_COMMIT, GPTJ_REVISION, gpt2Config, withOverrides, type RawConfig } from "../lib/fixtures";
import { runProgram } from "../lib/pulumi";

const noSecrets: SecretPresence = {};

function problemsOf(cfg: RawConfig, secrets = noSecrets): ConfigProblem[] {
  return resolveStack(cfg, secrets).problems;
}

/** The single problem a config yields; fails the test if there are others. */
function onlyProblem(cfg: RawConfig): ConfigProblem {
  const problems = problemsOf(cfg);
  expect(problems.map((p) => `${p.key}: ${p.message}`)).toHaveLength(1);
  return problems[0] as ConfigProblem;
}

function gptjConfig(): RawConfig {
  return {
    model: { preset: "gpt-j-6b", source: { huggingface: { repo: "EleutherAI/gpt-j-6b", revision: GPTJ_REVISION } } },
    build: {
      backendCommit: BACKEND_COMMIT,
      ftCommit: FT_COMMIT,
      builderInstanceType: "g5.4xlarge",
      sshAllowedCidrs: ["198.51.100.7/32"],
    },
    serving: { instanceType: "g5.12xlarge", tensorParallel: 2 },
  };
}

describe("defaults and overrides", () => {
  it("fills every default for a minimal valid config", () => {
    const { stack, problems } = resolveStack(gpt2Config(), noSecrets);
    expect(problems).toEqual([]);
    expect(stack?.config.build.tritonVersion).toBe("23.05");
    expect(stack?.config.serving).toMatchObject({
      tensorParallel: 1,
      replicas: 1,
      maxBatchSize: 8,
      maxInputLen: 512,
      maxOutputLen: 256,
      loadBalancerScheme: "internal",
      allowedCidrs: [],
      idleTimeoutSeconds: 1200,
      namespace: "triton",
    });
    expect(stack?.config.cluster.mode).toBe("create");
    expect(stack?.config.network.mode).toBe("create");
    expect(stack?.gemm).toEqual({ batchSize: 8, beamWidth: 1, maxInputLen: 512 });
    expect(stack?.model).toMatchObject({ name: "gpt2", family: "gpt", preset: "gpt2" });
    expect(stack?.model.arch).toMatchObject({ layers: 12, hidden: 768, heads: 12, vocab: 50257 });
  });

  it("takes overrides, and gemm defaults follow serving", () => {
    const cfg = withOverrides(gpt2Config(), {
      serving: { maxBatchSize: 4, maxInputLen: 256, replicas: 3 },
      gemm: { beamWidth: 2 },
    });
    const { stack } = resolveStack(cfg, noSecrets);
    expect(stack?.config.serving.replicas).toBe(3);
    expect(stack?.gemm).toEqual({ batchSize: 4, beamWidth: 2, maxInputLen: 256 });
  });

  it("resolves a model without a preset from explicit architecture numbers", () => {
    const cfg = gpt2Config();
    cfg.model = {
      family: "gptneox",
      source: { huggingface: { repo: "EleutherAI/pythia-160m", revision: "50f5173d932e8e61f858120bcb800b97af589f46" } },
      arch: {
        layers: 12,
        hidden: 768,
        heads: 12,
        ffn: 3072,
        vocab: 50304,
        rotaryDims: 16,
        maxPositions: 2048,
        startId: 0,
        endId: 0,
      },
    };
    const { stack, problems } = resolveStack(cfg, noSecrets);
    expect(problems).toEqual([]);
    expect(stack?.model).toMatchObject({ name: "pythia-160m", family: "gptneox", preset: undefined });
  });

  it("derives builder and node disks from the model", () => {
    const small = resolveStack(gpt2Config(), noSecrets).stack;
    const big = resolveStack(gptjConfig(), noSecrets).stack;
    expect(small && big && big.builderDiskGiB > small.builderDiskGiB).toBe(true);
    expect(big?.builderDiskGiB).toBeGreaterThan(200);
  });
});

describe("validation rules (one test each, exact messages)", () => {
  it("unknown serving instance type", () => {
    const p = onlyProblem(withOverrides(gpt2Config(), { serving: { instanceType: "g4dn.xlarge" } }));
    expect(p.key).toBe("triton-ft:serving.instanceType");
    expect(p.value).toBe("g4dn.xlarge");
    expect(p.message).toBe("is not a GPU instance type this stack knows");
    expect(p.fix).toMatch(/^use one of: g5\.xlarge, .*p4de\.24xlarge, g6\.xlarge, .*p5en\.48xlarge$/);
  });

  it("unknown builder instance type", () => {
    const p = onlyProblem(withOverrides(gpt2Config(), { build: { builderInstanceType: "p3.2xlarge" } }));
    expect(p.key).toBe("triton-ft:build.builderInstanceType");
    expect(p.message).toBe("is not a GPU instance type this stack knows");
  });

  it("tensor parallel size that does not divide the heads", () => {
    const p = onlyProblem(withOverrides(gptjConfig(), { serving: { tensorParallel: 3 } }));
    expect(p).toMatchObject({
      key: "triton-ft:serving.tensorParallel",
      value: 3,
      message: "does not divide the model's 16 attention heads",
      fix: "use one of: 1, 2, 4",
    });
  });

  it("tensor parallel size above the instance's GPUs", () => {
    const p = onlyProblem(withOverrides(gptjConfig(), { serving: { instanceType: "g5.12xlarge", tensorParallel: 8 } }));
    expect(p).toMatchObject({
      key: "triton-ft:serving.tensorParallel",
      value: 8,
      message: "exceeds the 4 GPU(s) of g5.12xlarge",
      fix: "use at most 4, or an instance type with at least 8 GPUs",
    });
  });

  it("weights that do not fit in GPU memory", () => {
    const cfg = withOverrides(gptjConfig(), {
      serving: {
        instanceType: "g5.2xlarge",
        tensorParallel: 1,
        maxBatchSize: 64,
        maxInputLen: 1024,
        maxOutputLen: 1024,
      },
    });
    const p = onlyProblem(cfg);
    expect(p.key).toBe("triton-ft:serving.tensorParallel");
    expect(p.message).toMatch(
      /^leaves \d+(\.\d)? GiB per GPU \(weights 11\.\d GiB \+ KV cache \d+(\.\d)? GiB \+ headroom \d+(\.\d)? GiB\) but g5\.2xlarge has 22\.1 GiB usable per GPU$/,
    );
    expect(p.fix).toBe(
      "raise serving.tensorParallel, lower serving.maxBatchSize / maxInputLen / maxOutputLen, or pick a GPU with more memory",
    );
  });

  it("the same model fits once split over more GPUs", () => {
    const cfg = withOverrides(gptjConfig(), {
      serving: {
        instanceType: "g5.12xlarge",
        tensorParallel: 4,
        maxBatchSize: 16,
        maxInputLen: 1024,
        maxOutputLen: 1024,
      },
    });
    expect(problemsOf(cfg)).toEqual([]);
  });

  it("builder GPU model differs from the serving GPU model", () => {
    const p = onlyProblem(
      withOverrides(gptjConfig(), { serving: { instanceType: "p4d.24xlarge", tensorParallel: 8 } }),
    );
    expect(p).toMatchObject({
      key: "triton-ft:build.builderInstanceType",
      value: "g5.4xlarge",
      message: "has A10G GPUs but serving uses A100-40GB; gpt_gemm tuning is only valid on the serving GPU model",
      fix: "use an instance type with A100-40GB GPUs (p4d.24xlarge)",
    });
  });

  it("builder RAM too small for the fp32 conversion", () => {
    const p = onlyProblem(withOverrides(gptjConfig(), { build: { builderInstanceType: "g5.2xlarge" } }));
    expect(p.key).toBe("triton-ft:build.builderInstanceType");
    expect(p.message).toMatch(/^has 32 GiB RAM but converting this model needs about 3\d\.\d GiB \(fp32 on the CPU\)$/);
    expect(p.fix).toMatch(/^use a A10G instance with at least 3\d GiB RAM$/);
  });

  it("a branch name where a pinned FT commit is required", () => {
    const p = onlyProblem(withOverrides(gpt2Config(), { build: { ftCommit: "main" } }));
    expect(p).toMatchObject({
      key: "triton-ft:build.ftCommit",
      value: "main",
      message: "is not a 40-hex commit: a branch, tag or short SHA moves or is ambiguous",
      fix: "use the full commit (git ls-remote https://github.com/NVIDIA/FasterTransformer.git <branch>); upstream's final, known-good one is df4a7534860137e060e18d2ebf019906120ea204",
    });
  });

  it("a missing backend pin", () => {
    const cfg = gpt2Config();
    delete cfg.build?.backendCommit;
    const p = onlyProblem(cfg);
    expect(p).toMatchObject({
      key: "triton-ft:build.backendCommit",
      value: undefined,
      message: "is required: the build must be reproducible",
    });
  });

  it("a branch name where a pinned Hugging Face revision is required (KoGPT's branch)", () => {
    const cfg = gpt2Config();
    cfg.model = {
      preset: "kogpt-6b",
      source: { huggingface: { repo: "kakaobrain/kogpt", revision: "KoGPT6B-ryan1.5b-float16" } },
    };
    cfg.build = { ...cfg.build, builderInstanceType: "g5.4xlarge" };
    cfg.serving = { instanceType: "g5.4xlarge" };
    const p = onlyProblem(cfg);
    expect(p).toMatchObject({
      key: "triton-ft:model.source.huggingface.revision",
      value: "KoGPT6B-ryan1.5b-float16",
      message: "looks like a branch or tag where a pinned commit is required",
      fix: "use the full 40-hex commit SHA (git ls-remote https://huggingface.co/kakaobrain/kogpt <branch>; the seeds used branch KoGPT6B-ryan1.5b-float16)",
    });
  });

  it("an internet-facing load balancer without allowed CIDRs", () => {
    const secured = {
      tlsCertificateArn: "arn:aws:acm:us-east-1:123456789012:certificate/abc-123",
      consumers: ["search"],
    };
    const p = onlyProblem(
      withOverrides(gpt2Config(), { serving: { loadBalancerScheme: "internet-facing", ...secured } }),
    );
    expect(p).toMatchObject({
      key: "triton-ft:serving.allowedCidrs",
      value: [],
      message:
        "is empty while serving.loadBalancerScheme is internet-facing, which would open the endpoint to the whole internet",
    });
    expect(
      problemsOf(
        withOverrides(gpt2Config(), {
          serving: { loadBalancerScheme: "internet-facing", allowedCidrs: ["203.0.113.0/24"], ...secured },
        }),
      ),
    ).toEqual([]);
  });

  it("an internet-facing load balancer without a TLS certificate or consumers", () => {
    const open = { loadBalancerScheme: "internet-facing", allowedCidrs: ["203.0.113.0/24"] };
    const problems = problemsOf(withOverrides(gpt2Config(), { serving: open }));
    expect(problems.map((p) => p.key)).toEqual(["triton-ft:serving.tlsCertificateArn", "triton-ft:serving.consumers"]);
    expect(problems[0].message).toMatch(/plain text/);
    expect(problems[1].message).toMatch(/no team would hold a key/);
    expect(
      problemsOf(
        withOverrides(gpt2Config(), {
          serving: { ...open, tlsCertificateArn: "arn:aws:acm:us-east-1:123456789012:certificate/x" },
        }),
      ).map((p) => p.key),
    ).toEqual(["triton-ft:serving.consumers"]);
  });

  it("malformed certificate ARNs and consumer names, duplicate consumers", () => {
    expect(
      problemsOf(withOverrides(gpt2Config(), { serving: { tlsCertificateArn: "arn:aws:iam::1:role/x" } })).map(
        (p) => p.key,
      ),
    ).toEqual(["triton-ft:serving.tlsCertificateArn"]);
    expect(problemsOf(withOverrides(gpt2Config(), { serving: { consumers: ["Team A"] } })).map((p) => p.key)).toEqual([
      "triton-ft:serving.consumers[0]",
    ]);
    const dup = onlyProblem(withOverrides(gpt2Config(), { serving: { consumers: ["search", "ads", "search"] } }));
    expect(dup).toMatchObject({ key: "triton-ft:serving.consumers", message: "lists search more than once" });
  });

  it("SSH open to the world, or not reachable at all", () => {
    expect(onlyProblem(withOverrides(gpt2Config(), { build: { sshAllowedCidrs: ["0.0.0.0/0"] } })).message).toBe(
      "opens SSH on a GPU host to the whole internet",
    );
    expect(onlyProblem(withOverrides(gpt2Config(), { build: { sshAllowedCidrs: [] } })).message).toBe(
      "is empty, so pulumi up could not reach the builder over SSH",
    );
  });

  it("EKS API endpoint open to the world", () => {
    const p = onlyProblem(withOverrides(gpt2Config(), { cluster: { endpointPublicAccessCidrs: ["0.0.0.0/0"] } }));
    expect(p).toMatchObject({ key: "triton-ft:cluster.endpointPublicAccessCidrs", value: "0.0.0.0/0" });
    expect(p.message).toBe("opens the EKS API endpoint to the whole internet");
    expect(
      problemsOf(
        withOverrides(gpt2Config(), { cluster: { endpointAccess: "private", endpointPublicAccessCidrs: [] } }),
      ),
    ).toEqual([]);
    expect(onlyProblem(withOverrides(gpt2Config(), { cluster: { endpointAccess: "open" } })).key).toBe(
      "triton-ft:cluster.endpointAccess",
    );
  });

  it("lengths beyond the model's positions", () => {
    const p = onlyProblem(withOverrides(gpt2Config(), { serving: { maxInputLen: 900, maxOutputLen: 200 } }));
    expect(p).toMatchObject({
      key: "triton-ft:serving.maxInputLen",
      value: 900,
      message: "plus serving.maxOutputLen (200) exceeds the model's 1024 positions",
    });
  });

  it("unknown preset, unknown key and schema errors", () => {
    const cfg: RawConfig = {
      ...gpt2Config(),
      model: { preset: "llama-7b", source: { huggingface: { repo: "x/y", revision: "main" } } },
    };
    const problems = problemsOf(cfg);
    expect(problems.map((p) => p.key)).toContain("triton-ft:model.preset");
    const schema = problemsOf({ ...gpt2Config(), servng: {}, serving: { replicas: 0, loadBalancerScheme: "public" } });
    expect(schema.map((p) => p.key).sort()).toEqual([
      "triton-ft:serving.loadBalancerScheme",
      "triton-ft:serving.replicas",
      "triton-ft:servng",
    ]);
    expect(schema.find((p) => p.key === "triton-ft:serving.loadBalancerScheme")?.fix).toBe(
      "use one of: internal, internet-facing",
    );
  });

  it("cluster and network mode prerequisites", () => {
    const cluster = problemsOf(withOverrides(gpt2Config(), { cluster: { mode: "kubeconfig" } }));
    expect(cluster.map((p) => p.key)).toEqual(["triton-ft:kubeconfig"]);
    expect(
      problemsOf(withOverrides(gpt2Config(), { cluster: { mode: "kubeconfig" } }), {
        hfToken: false,
        kubeconfig: true,
      }),
    ).toEqual([]);
    const network = problemsOf(
      withOverrides(gpt2Config(), { network: { mode: "existing", privateSubnetIds: ["subnet-0aaaaaaaaaaaaaaa1"] } }),
    );
    expect(network.map((p) => p.key)).toEqual([
      "triton-ft:network.vpcId",
      "triton-ft:network.publicSubnetIds",
      "triton-ft:network.privateSubnetIds",
    ]);
  });

  it("a provided SSH public key without its private key secret", () => {
    const cfg = withOverrides(gpt2Config(), { build: { sshPublicKey: "ssh-ed25519 AAAAC3Nza user@host" } });
    expect(onlyProblem(cfg)).toMatchObject({
      key: "triton-ft:sshPrivateKey",
      message: "is required with build.sshPublicKey: pulumi up runs the build steps over SSH with it",
    });
    expect(problemsOf(cfg, { sshPrivateKey: true })).toEqual([]);
  });

  it("a VPC CIDR too small for the subnets", () => {
    expect(onlyProblem(withOverrides(gpt2Config(), { network: { vpcCidr: "10.8.0.0/24" } }))).toMatchObject({
      key: "triton-ft:network.vpcCidr",
      value: "10.8.0.0/24",
      message: "has a /24 prefix; private (prefix+3) and public (prefix+8) subnets for every AZ need /16 to /20",
    });
  });

  it("reports every problem at once, readably", () => {
    const cfg = withOverrides(gptjConfig(), {
      build: { ftCommit: "v5.3", sshAllowedCidrs: [] },
      serving: { tensorParallel: 3, loadBalancerScheme: "internet-facing" },
    });
    const problems = problemsOf(cfg);
    expect(problems).toHaveLength(6);
    const text = formatProblems("prod", problems);
    expect(text.split("\n")[0]).toBe('triton-ft: 6 configuration problems in stack "prod" (nothing was created):');
    expect(text).toContain(
      '  1. triton-ft:build.ftCommit = "v5.3": is not a 40-hex commit: a branch, tag or short SHA moves or is ambiguous.\n     fix: use the full commit',
    );
  });
});

describe("the Pulumi program", () => {
  it("fails at preview with the aggregated report and registers nothing", async () => {
    const cfg = withOverrides(gpt2Config(), {
      serving: { instanceType: "g5.bogus", tensorParallel: 5 },
      build: { ftCommit: "main" },
    });
    let resources = -1;
    await expect(
      runProgram(cfg).then((r) => {
        resources = r.resources.length;
      }),
    ).rejects.toThrow(/3 configuration problems in stack "test"/);
    expect(resources).toBe(-1);
  });

  it("passes secrets through without exposing them to validation", async () => {
    const run = await runProgram(withOverrides(gpt2Config(), { cluster: { mode: "kubeconfig" } }), {
      secrets: { kubeconfig: "apiVersion: v1\ncontexts: [{name: c, context: {cluster: team}}]\ncurrent-context: c\n" },
    });
    expect(run.outputs.modelFamily).toBe("gpt");
  });
});

describe("docs", () => {
  it("configuration reference (docs/config-reference.md) and output contract (docs/outputs.md) match the code", () => {
    const pages = generatedPages();
    expect(pages.map((p) => p.page).sort()).toEqual(["docs/config-reference.md", "docs/outputs.md"]);
    for (const { page, current, next } of pages) expect(current, `${page}: run \`npm run docs:config\``).toBe(next);
  });
});
