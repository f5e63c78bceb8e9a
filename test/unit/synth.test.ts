import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { modelRepositoryWriter, synthesize } from "../../infra/synth/artifacts";
import { parseStackFile } from "../../infra/synth/stackFile";
import { main, parseArgs, runCli } from "../../scripts/synth";
import { gpt2Config, withOverrides, type RawConfig } from "../lib/fixtures";

import type { ArtifactWriter } from "../../infra/synth/types";
const REPO_ROOT = path.resolve(__dirname, "../..");
const CIPHERTEXT = "v1:c2VjcmV0LWNpcGhlcnRleHQtdGhhdC1tdXN0LW5vdC1sZWFr";

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "synth-"));
});
afterEach(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

function writeStack(name: string, config: RawConfig, extra: Record<string, unknown> = {}): void {
  const doc: Record<string, unknown> = { "aws:region": "us-east-1", ...extra };
  for (const [k, v] of Object.entries(config)) doc[`triton-ft:${k}`] = v;
  fs.writeFileSync(path.join(dir, `Pulumi.${name}.yaml`), stringify({ config: doc }));
}

function run(argv: string[], writers?: readonly ArtifactWriter[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = main(
    argv,
    { cwd: dir, repoRoot: REPO_ROOT, stdout: (l) => out.push(l), stderr: (l) => err.push(l) },
    writers,
  );
  return { code, stdout: out.join("\n"), stderr: err.join("\n") };
}

describe("synth", () => {
  it("writes every config.pbtxt and plan.json, and prints secrets as [secret]", () => {
    writeStack("t", gpt2Config(), { "triton-ft:hfToken": { secure: CIPHERTEXT } });
    const r = run(["--stack", "t"]);
    // Two warnings, nothing else: the fixture's SSH CIDR is a documentation range, and Triton
    // 23.05's Python is past its end of life (acknowledged: FT's backend pins that Triton).
    const lines = r.stderr.split("\n");
    expect(lines[0]).toBe('triton-ft: 2 configuration warnings in stack "t":');
    expect(lines[1]).toBe(
      '  1. triton-ft:build.sshAllowedCidrs[0] = "198.51.100.7/32": is a documentation range (RFC 5737) that no real machine uses, so pulumi up could not reach the builder.',
    );
    expect(lines[2]).toBe(
      "     fix: replace it with the public IP/32 of the machine that runs pulumi up (curl -s https://checkip.amazonaws.com) before the first pulumi up",
    );
    expect(lines[3]).toMatch(
      /^ {2}2\. triton-ft:build\.tritonVersion = "23\.05": Python 3\.10 .* acknowledged, not refused/,
    );
    expect(lines).toHaveLength(5);
    expect(r.code).toBe(0);
    const out = path.join(dir, "out", "t");
    for (const m of ["ensemble", "preprocessing", "fastertransformer", "postprocessing"]) {
      expect(fs.readFileSync(path.join(out, "model-repository", m, "config.pbtxt"), "utf8")).toContain(`name: "${m}"`);
      expect(fs.statSync(path.join(out, "model-repository", m, "1")).isDirectory()).toBe(true);
    }
    expect(fs.existsSync(path.join(out, "model-repository", "preprocessing", "1", "model.py"))).toBe(true);
    const plan = JSON.parse(fs.readFileSync(path.join(out, "plan.json"), "utf8"));
    expect(plan).toMatchObject({
      stack: "t",
      schemaVersion: 1,
      model: { name: "gpt2", family: "gpt" },
      serving: { tensorParallel: 1 },
    });
    expect(plan.gemm.argv.slice(1)).toEqual(["8", "1", "512", "12", "64", "3072", "50257", "1", "1"]);
    expect(plan.expectedWeights.files).toHaveLength(148);
    expect(plan.launch.env).toEqual({ CUDA_VISIBLE_DEVICES: "0" });
    expect(r.stdout).toContain("triton-ft:hfToken = [secret]");
    expect(r.stdout).toMatch(/^gpt_gemm: \S+gpt_gemm 8 1 512 12 64 3072 50257 1 1$/m);
    expect(r.stdout).toContain(`wrote ${out}`);
    const everything = r.stdout + JSON.stringify(plan);
    expect(everything).not.toContain(CIPHERTEXT);
  });

  it("rejects a model whose heads the TP size does not divide, and writes nothing", () => {
    writeStack(
      "bad",
      withOverrides(gpt2Config(), {
        build: { builderInstanceType: "g5.4xlarge" },
        serving: { instanceType: "g5.48xlarge", tensorParallel: 8 },
      }),
    );
    const r = run(["--stack", "bad"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('configuration problem in stack "bad"');
    expect(r.stderr).toContain("triton-ft:serving.tensorParallel = 8: does not divide the model's 12 attention heads.");
    expect(r.stderr).toContain("fix: use one of: 1, 2, 3, 4, 6");
    expect(fs.existsSync(path.join(dir, "out"))).toBe(false);
  });

  it("honours --out, replaces only what it owns on a re-run", () => {
    writeStack("t", gpt2Config());
    const out = path.join(dir, "custom");
    expect(run(["--stack", "t", "--out", "custom"]).code).toBe(0);
    fs.writeFileSync(path.join(out, "model-repository", "stale.txt"), "old");
    fs.mkdirSync(path.join(out, "notes"));
    fs.writeFileSync(path.join(out, "notes", "not-synth.txt"), "kept");
    expect(run(["--stack=t", "--out=custom"]).code).toBe(0);
    expect(fs.existsSync(path.join(out, "model-repository", "stale.txt"))).toBe(false);
    expect(fs.readFileSync(path.join(out, "notes", "not-synth.txt"), "utf8")).toBe("kept");
  });

  it("explains usage errors and a missing stack file", () => {
    expect(run([]).code).toBe(2);
    expect(run(["--stack"]).stderr).toContain("--stack needs a value");
    expect(run(["--stak", "x"]).stderr).toContain('unknown argument "--stak"');
    const missing = run(["--stack", "nope"]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("Pulumi.nope.yaml");
    expect(() => parseArgs(["--stack", "../x"])).toThrow(/not a stack name/);
  });

  it("lets later writers add folders and plan sections, and refuses clashes", () => {
    writeStack("t", gpt2Config());
    const k8s: ArtifactWriter = {
      name: "k8s",
      owns: ["k8s"],
      write: (ctx) => ({
        files: [{ path: "k8s/ns.yaml", content: `name: ${ctx.plan.model.name}\n` }],
        plan: { k8s: { files: 1 } },
        summary: ["k8s: 1 manifest"],
      }),
    };
    const r = run(["--stack", "t"], [modelRepositoryWriter, k8s]);
    expect(r.code).toBe(0);
    expect(fs.readFileSync(path.join(dir, "out", "t", "k8s", "ns.yaml"), "utf8")).toBe("name: gpt2\n");
    expect(JSON.parse(fs.readFileSync(path.join(dir, "out", "t", "plan.json"), "utf8")).k8s).toEqual({ files: 1 });
    expect(r.stdout).toContain("k8s: 1 manifest");

    const ctxOf = () => {
      let captured: Parameters<ArtifactWriter["write"]>[0] | undefined;
      run(["--stack", "t"], [{ name: "spy", owns: ["spy"], write: (c) => ((captured = c), { files: [] }) }]);
      if (!captured) throw new Error("writer not called");
      return captured;
    };
    const ctx = ctxOf();
    const outside: ArtifactWriter = {
      name: "outside",
      owns: ["a"],
      write: () => ({ files: [{ path: "b/x", content: "" }] }),
    };
    expect(() => synthesize(ctx, [outside])).toThrow(/outside the paths it owns/);
    const shadow: ArtifactWriter = { name: "shadow", owns: ["s"], write: () => ({ files: [], plan: { gemm: {} } }) };
    expect(() => synthesize(ctx, [shadow])).toThrow(/plan.json key gemm/);
    expect(() => synthesize(ctx, [modelRepositoryWriter, modelRepositoryWriter])).toThrow(/claims model-repository/);
    const escape: ArtifactWriter = {
      name: "escape",
      owns: ["e"],
      write: () => ({ files: [{ path: "e/../../x", content: "" }] }),
    };
    expect(() => synthesize(ctx, [escape])).toThrow(/unsafe path/);
  });
});

describe("stack file reading", () => {
  it("takes the triton-ft namespace, secret presence only, and JSON-string objects like getObject", () => {
    const text = stringify({
      config: {
        "aws:region": "us-east-1",
        "triton-ft:serving": '{"tensorParallel": 2}',
        "triton-ft:kubeconfig": { secure: CIPHERTEXT },
        "triton-ft:hfToken": "hf_plain",
        "triton-ft:tags": { a: "b" },
      },
    });
    const f = parseStackFile(text, "Pulumi.x.yaml");
    expect(f.raw).toEqual({ serving: { tensorParallel: 2 }, tags: { a: "b" } });
    expect(f.secrets).toEqual({ hfToken: true, kubeconfig: true });
    expect(f.secureKeys).toEqual(["kubeconfig"]);
    expect(f.plaintextSecretKeys).toEqual(["hfToken"]);
    expect(JSON.stringify(f)).not.toContain(CIPHERTEXT);
    expect(JSON.stringify(f)).not.toContain("hf_plain");
  });

  it("reports malformed files", () => {
    expect(() => parseStackFile("config: [1, 2]", "Pulumi.x.yaml")).toThrow(/'config' must be a mapping/);
    expect(() => parseStackFile("config: {a: [}", "Pulumi.x.yaml")).toThrow(/not valid YAML/);
    expect(parseStackFile("", "Pulumi.x.yaml").raw).toEqual({});
  });
});

describe("synth CLI", () => {
  const tsx = path.join(REPO_ROOT, "node_modules", ".bin", "tsx");
  const cli = path.join(REPO_ROOT, "scripts", "synth.ts");

  it("works offline for the repository's dev stack", () => {
    const out = path.join(dir, "dev");
    const r = spawnSync(tsx, [cli, "--stack", "dev", "--out", out], { cwd: REPO_ROOT, encoding: "utf8" });
    // The committed stack's documentation-range SSH CIDR and the acknowledged Python 3.10 of
    // Triton 23.05 are the only things to warn about.
    // (printed by synth, and again by the program the inventory runs under the mock runtime)
    const items = r.stderr.split("\n").filter((l) => /^ {2}\d+\. /.test(l));
    expect(new Set(items).size).toBe(2);
    expect(r.stderr).toContain('triton-ft:build.sshAllowedCidrs[0] = "198.51.100.7/32": is a documentation range');
    expect(r.stderr).toContain('triton-ft:build.tritonVersion = "23.05": Python 3.10');
    expect(r.status).toBe(0);
    expect(fs.readFileSync(path.join(out, "model-repository", "fastertransformer", "config.pbtxt"), "utf8")).toContain(
      'string_value: "GPT"',
    );
  }, 120_000);

  it("exits 1 with the problem for heads not divisible by TP", () => {
    writeStack(
      "odd",
      withOverrides(gpt2Config(), {
        model: {
          preset: "gpt2-xl",
          source: {
            huggingface: { repo: "openai-community/gpt2-xl", revision: "15ea56dee5df4983c59b2538573817e1667135e2" },
          },
        },
        build: { builderInstanceType: "g5.8xlarge" },
        serving: { instanceType: "g5.12xlarge", tensorParallel: 2 },
      }),
    );
    const r = spawnSync(tsx, [cli, "--stack", "odd"], { cwd: dir, encoding: "utf8" });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain("triton-ft:serving.tensorParallel = 2: does not divide the model's 25 attention heads.");
    expect(r.stderr).toContain("fix: use one of: 1");
    expect(fs.existsSync(path.join(dir, "out"))).toBe(false);
  });

  it("validates the names built from the stack's own name (an ECR repository name AWS would refuse)", () => {
    // `dev_` becomes the prefix `triton-ft-dev-` with a trailing `-` before `/`, which ECR's
    // CreateRepository refuses: only the stack name passed into validation can catch it.
    writeStack("dev_", gpt2Config());
    const r = run(["--stack", "dev_"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/stack name = "dev_"/);
  });
});

describe("the command's exit", () => {
  it("reports an exception with its message and status 1 (an --out that is a file), never a silent 1", async () => {
    writeStack("x", gpt2Config());
    fs.writeFileSync(path.join(dir, "a-file"), "");
    const err: string[] = [];
    const code = await runCli(["--stack", "x", "--out", "a-file"], {
      cwd: dir,
      repoRoot: REPO_ROOT,
      stdout: () => undefined,
      stderr: (l) => err.push(l),
    });
    expect(code).toBe(1);
    expect(err.join("\n")).toMatch(/synth failed: .*a-file/);
  });
});
