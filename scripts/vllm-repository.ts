/**
 * The vLLM model repository on disk, from the plan's renderer (infra/plan/vllmRepository.ts):
 * what test/vllm (repository.py) and `npm run try` serve, so the CPU tritonserver proves the
 * stack's own rendering.
 *
 *   tsx scripts/vllm-repository.ts --out DIR --settings JSON [--name ensemble]
 *   tsx scripts/vllm-repository.ts --print-config --settings JSON [--name ensemble]
 *
 * JSON is a VllmModelSettings object. Writes DIR/<name>/config.pbtxt and the shipped model and
 * packages under DIR/<name>/1/ (without __pycache__), and prints {"repository", "model"}.
 */
import { cpSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { renderVllmConfig, renderVllmRepository, type VllmModelSettings } from "../infra/plan/vllmRepository";

const ROOT = path.resolve(__dirname, "..");

/** Writes the model `name` of a vLLM repository under `out` (replacing it); returns its folder. */
export function writeVllmRepository(out: string, settings: VllmModelSettings, name = "ensemble"): string {
  const rendered = renderVllmRepository(settings, name);
  const model = path.join(out, name);
  rmSync(model, { recursive: true, force: true });
  for (const dir of rendered.directories) mkdirSync(path.join(out, dir), { recursive: true });
  for (const f of rendered.files) writeFileSync(path.join(out, f.path), f.content);
  for (const t of rendered.shipped)
    cpSync(path.join(ROOT, t.from), path.join(out, t.to), {
      recursive: true,
      filter: (src) => !src.split(path.sep).includes("__pycache__"),
    });
  return model;
}

function main(argv: string[]): void {
  const args = new Map<string, string>();
  let print = false;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] ?? "";
    if (a === "--print-config") print = true;
    else if (a.startsWith("--") && argv[i + 1] !== undefined) args.set(a.slice(2), argv[++i] ?? "");
    else throw new Error(`unknown argument ${a}`);
  }
  const settings = JSON.parse(args.get("settings") ?? "null") as VllmModelSettings | null;
  if (!settings) throw new Error("--settings JSON is required");
  const name = args.get("name") ?? "ensemble";
  if (print) {
    process.stdout.write(renderVllmConfig(settings, name));
    return;
  }
  const out = args.get("out");
  if (!out) throw new Error("--out DIR is required");
  const model = writeVllmRepository(path.resolve(out), settings, name);
  process.stdout.write(JSON.stringify({ repository: path.resolve(out), model }) + "\n");
}

if (require.main === module) main(process.argv.slice(2));
