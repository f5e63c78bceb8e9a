import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { importClosure, importedModules } from "../../infra/plan/pythonImports";

const ROOT = join(__dirname, "..", "..");
const read = (rel: string) => (existsSync(join(ROOT, rel)) ? readFileSync(join(ROOT, rel), "utf8") : undefined);

describe("Python helper imports", () => {
  it("parses import forms, skipping comments and relative imports", () => {
    const src = [
      "import os, sys as system",
      "from a.b import c",
      "  from hf_checkpoint import (x,",
      "# import nope",
      "from . import rel",
      "import numpy as np",
    ].join("\n");
    expect(importedModules(src)).toEqual(["a", "hf_checkpoint", "numpy", "os", "sys"]);
  });

  it("the consolidate and re-layout helpers pull in hf_checkpoint.py; the fp16 rewrite pulls in verify_weights.py", () => {
    expect(importClosure(["scripts/convert/consolidate_checkpoint.py"], read)).toEqual([
      "scripts/convert/consolidate_checkpoint.py",
      "scripts/convert/hf_checkpoint.py",
    ]);
    expect(importClosure(["scripts/convert/codegen_to_gptj.py"], read)).toContain("scripts/convert/hf_checkpoint.py");
    expect(importClosure(["scripts/convert/to_fp16.py"], read)).toEqual([
      "scripts/convert/to_fp16.py",
      "scripts/convert/verify_weights.py",
    ]);
  });

  it("follows imports transitively and refuses a missing entry", () => {
    const files: Record<string, string> = {
      "d/a.py": "import b",
      "d/b.py": "from c import x",
      "d/c.py": "import json",
    };
    expect(importClosure(["d/a.py"], (p) => files[p])).toEqual(["d/a.py", "d/b.py", "d/c.py"]);
    expect(() => importClosure(["d/zzz.py"], (p) => files[p])).toThrow(/does not exist/);
  });
});

describe("the plan's declared helper imports", () => {
  it("match the helpers' real imports, for every helper in scripts/convert", async () => {
    const { readdirSync } = await import("node:fs");
    const { HELPER_IMPORTS } = await import("../../infra/plan/conversion");
    const files = readdirSync(join(ROOT, "scripts", "convert"))
      .filter((f) => f.endsWith(".py"))
      .map((f) => `scripts/convert/${f}`)
      .sort();
    expect(Object.keys(HELPER_IMPORTS).sort()).toEqual(files);
    for (const f of files) {
      const closure = importClosure([f], read).filter((x) => x !== f);
      const declared = importClosure([...(HELPER_IMPORTS[f] ?? [])], read);
      expect(declared, f).toEqual(closure);
    }
  });
});

describe("the convert step hashes the helpers it imports", () => {
  it("GPT-J: consolidate pulls in hf_checkpoint.py, listed in CONVERT_HELPERS and the step inputs alike", async () => {
    const { resolveStack } = await import("../../infra/resolve");
    const { buildSteps } = await import("../lib/plan");
    const { gpt2Config, withOverrides, GPTJ_REVISION } = await import("../lib/fixtures");
    const cfg = withOverrides(gpt2Config(), {
      model: { preset: "gpt-j-6b", source: { huggingface: { repo: "EleutherAI/gpt-j-6b", revision: GPTJ_REVISION } } },
      build: { builderInstanceType: "g5.4xlarge" },
      serving: { instanceType: "g5.12xlarge", tensorParallel: 2 },
    });
    const { stack } = resolveStack(cfg, {});
    const convert = buildSteps(stack!).steps.find((s) => s.id === "convert")!;
    const listed = convert.config.find(([k]) => k === "CONVERT_HELPERS")?.[1];
    expect(listed).toEqual([
      "scripts/convert/consolidate_checkpoint.py",
      "scripts/convert/hf_checkpoint.py",
      "scripts/convert/to_fp16.py",
      "scripts/convert/verify_weights.py",
    ]);
    expect(convert.inputs).toEqual(listed);
    // Editing hf_checkpoint.py changes the convert hash (and only steps downstream of it).
    const { repoPathHasher, REPO_ROOT } = await import("../../infra/repoFiles");
    const real = repoPathHasher(REPO_ROOT);
    const edited = (p: string) => (p === "scripts/convert/hf_checkpoint.py" ? "edited" : real(p));
    const before = buildSteps(stack!).hashes;
    const after = buildSteps(stack!, edited).hashes;
    expect(after.convert).not.toBe(before.convert);
    expect(after.fetch).toBe(before.fetch);
    expect(after.gemm).toBe(before.gemm);
  });
});
