/**
 * Renders, through `synth` itself, the model repository of every catalog
 * preset FasterTransformer serves on every serving shape of a small matrix
 * that the stack validation accepts (single GPU, TP 2/4 on g5.12xlarge, TP 8
 * on p4d with custom all-reduce), plus the test stack with the Python
 * stand-in backend; and every preset on vLLM (issue 37) on the first shape
 * that validates (`vllm-<preset>-...`: its one decoupled `ensemble` model).
 * The schema test (test_pbtxt_schema.py) parses every config.pbtxt written here.
 *
 *   npx tsx test/triton/render-presets.ts <out-dir>
 *
 * Prints one line per rendered variant; exits 1 if a preset validates on no
 * serving shape at all (the catalog would hold a preset nobody can deploy).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { stringify } from "yaml";
import { PROJECT, SECRET_KEYS, type SecretPresence } from "../../infra/config";
import { MODEL_PRESETS, type ModelPreset } from "../../infra/model/catalog";
import { ENGINE_FAMILIES, type Engine } from "../../infra/model/types";
import { buildPlan } from "../../infra/plan";
import { REPO_ROOT, repoPathHasher } from "../../infra/repoFiles";
import { renderModelRepository } from "../../infra/plan/modelRepository";
import { resolveStack } from "../../infra/resolve";
import { main as synth } from "../../scripts/synth";
import { optionsFromPlan } from "./assemble";

interface Shape {
  serving: string;
  builder: string;
  tensorParallel: number;
}

const SHAPES: readonly Shape[] = [
  { serving: "g5.2xlarge", builder: "g5.48xlarge", tensorParallel: 1 },
  { serving: "g5.12xlarge", builder: "g5.48xlarge", tensorParallel: 2 },
  { serving: "g5.12xlarge", builder: "g5.48xlarge", tensorParallel: 4 },
  { serving: "p4de.24xlarge", builder: "p4de.24xlarge", tensorParallel: 1 },
  { serving: "p4d.24xlarge", builder: "p4d.24xlarge", tensorParallel: 8 },
];

// No secret is set: rendering never needs one.
const NO_SECRETS = Object.fromEntries(Object.keys(SECRET_KEYS).map((k) => [k, false])) as SecretPresence;

// Rendering never fetches anything: any well-formed pin will do.
const FAKE_COMMIT = "0123456789abcdef0123456789abcdef01234567";
const FAKE_SHA256 = "0123456789abcdef".repeat(4);

function stackConfig(preset: ModelPreset, shape: Shape, engine: Engine = "ft"): Record<string, unknown> {
  const source = preset.archive
    ? { archive: { url: preset.archive.url, sha256: FAKE_SHA256, tokenizerRevision: FAKE_COMMIT } }
    : { huggingface: { repo: preset.repo, revision: FAKE_COMMIT } };
  return {
    model: { preset: preset.name, source, ...(engine === "ft" ? {} : { engine }) },
    build: {
      backendCommit: FAKE_COMMIT,
      ftCommit: FAKE_COMMIT,
      // A vLLM-only stack builds on the CPU builder the plan sizes (a GPU builder type is refused there).
      ...(engine === "ft" ? { builderInstanceType: shape.builder } : {}),
      sshAllowedCidrs: ["198.51.100.7/32"],
    },
    serving: { instanceType: shape.serving, tensorParallel: shape.tensorParallel },
    cluster: { mode: "create" },
    network: { mode: "create" },
  };
}

function main(argv: string[]): number {
  const outRoot = argv[0];
  if (!outRoot) {
    console.error("usage: npx tsx test/triton/render-presets.ts <out-dir>");
    return 2;
  }
  const stacks = mkdtempSync(path.join(os.tmpdir(), "triton-ft-presets-"));
  let failed = false;
  // variant folder -> preset, so the schema test can tell that every preset was rendered;
  // variant -> synth's error for the ones that failed.
  const index: Record<string, string> = {};
  const vllmIndex: Record<string, string> = {};
  const failures: Record<string, string> = {};
  try {
    // Each engine that serves the preset's family; FT on every shape, vLLM on the first that validates.
    const renders = MODEL_PRESETS.flatMap((preset) =>
      (["ft", "vllm"] as const)
        // vLLM loads Hugging Face checkpoints only: an archive preset is FT's (refused on vLLM at preview).
        .filter((engine) => ENGINE_FAMILIES[engine].includes(preset.family) && !(engine === "vllm" && preset.archive))
        .map((engine) => ({ preset, engine })),
    );
    for (const { preset, engine } of renders) {
      let rendered = 0;
      const refusals: string[] = [];
      for (const shape of SHAPES) {
        if (engine === "vllm" && rendered > 0) break;
        const raw = stackConfig(preset, shape, engine);
        const resolved = resolveStack(raw, NO_SECRETS);
        if (!resolved.stack) {
          refusals.push(
            `  ${shape.serving} TP ${shape.tensorParallel}: ${resolved.problems.map((p) => `${p.key} ${p.message}`).join("; ")}`,
          );
          continue;
        }
        const prefix = engine === "ft" ? "" : `${engine}-`;
        const name = `${prefix}${preset.name}-${shape.serving.replace(/\./g, "-")}-tp${shape.tensorParallel}`;
        const config = Object.fromEntries(Object.entries(raw).map(([k, v]) => [`${PROJECT}:${k}`, v]));
        writeFileSync(
          path.join(stacks, `Pulumi.${name}.yaml`),
          stringify({ config: { "aws:region": "us-east-1", ...config } }),
        );
        const errors: string[] = [];
        let code: number;
        try {
          code = synth(["--stack", name, "--out", path.join(outRoot, name)], {
            cwd: stacks,
            repoRoot: path.resolve(__dirname, "../.."),
            stdout: () => undefined,
            stderr: (line) => errors.push(line),
          });
        } catch (error) {
          // A crash for one preset must not hide the others: name it and go on.
          errors.push(error instanceof Error ? (error.stack ?? error.message) : String(error));
          code = 1;
        }
        if (code !== 0) {
          console.error(`${name}: synth failed:\n${errors.join("\n")}`);
          failures[name] = errors.join("\n").split("\n")[0];
          failed = true;
          continue;
        }
        console.log(`rendered ${name}`);
        (engine === "ft" ? index : vllmIndex)[name] = preset.name;
        rendered++;
      }
      if (rendered === 0 && refusals.length > 0) {
        const key = engine === "ft" ? preset.name : `${engine}-${preset.name}`;
        console.error(`${key}: no serving shape of the matrix validates:\n${refusals.join("\n")}`);
        failures[key] = `no serving shape validates: ${refusals.join(" | ")}`;
        failed = true;
      }
    }
    // The stand-in variant the real-server suite serves: same renderer, python backend.
    const testStack = resolveStack(
      stackConfig(MODEL_PRESETS.find((p) => p.name === "gpt2") ?? MODEL_PRESETS[0], SHAPES[0]),
      NO_SECRETS,
    ).stack;
    if (!testStack) throw new Error("gpt2 stand-in variant does not validate");
    const standin = renderModelRepository(optionsFromPlan(buildPlan(testStack, "standin", repoPathHasher(REPO_ROOT))), {
      backend: "python",
    });
    for (const file of standin.files) {
      const target = path.join(outRoot, "standin-python-backend", "model-repository", file.path);
      mkdirSync(path.dirname(target), { recursive: true });
      writeFileSync(target, file.content);
    }
    console.log("rendered standin-python-backend");
    writeFileSync(
      path.join(outRoot, "variants.json"),
      JSON.stringify(
        { presets: MODEL_PRESETS.map((p) => p.name), variants: index, vllmVariants: vllmIndex, failures },
        null,
        2,
      ),
    );
  } finally {
    rmSync(stacks, { recursive: true, force: true });
  }
  return failed ? 1 : 0;
}

if (require.main === module) {
  process.exitCode = main(process.argv.slice(2));
}
