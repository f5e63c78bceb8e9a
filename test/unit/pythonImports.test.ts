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
