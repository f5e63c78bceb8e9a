/**
 * The stacks the policy tests run the pack over: every committed stack file
 * (Pulumi.<stack>.yaml at the root) and every test stack (test/**\/Pulumi.*.yaml),
 * each as the resources the program registers under the mock runtime and as
 * the Kubernetes manifests `npm run synth` renders.
 */
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { parse } from "yaml";
import { parseStackFile } from "../../../infra/synth/stackFile";
import type { ResourceView } from "../../../policy/rules";
import { runProgram } from "../../lib/pulumi";

export const ROOT = path.resolve(__dirname, "../../..");

export interface StackFile {
  /** Stack name (`dev`, `triton-test`). */
  name: string;
  /** Folder holding Pulumi.<name>.yaml (synth reads it from there). */
  dir: string;
  file: string;
}

function walk(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return e.name === "node_modules" ? [] : walk(p);
    return [p];
  });
}

export function stackFiles(): StackFile[] {
  const re = /^Pulumi\.(.+)\.yaml$/;
  const files = [...fs.readdirSync(ROOT).map((f) => path.join(ROOT, f)), ...walk(path.join(ROOT, "test"))].filter((f) =>
    re.test(path.basename(f)),
  );
  return files
    .map((file) => ({ name: re.exec(path.basename(file))![1], dir: path.dirname(file), file }))
    .sort((a, b) => a.file.localeCompare(b.file));
}

/** Placeholder values for the secrets a stack file declares (their ciphertext is never decrypted here). */
const SECRET_PLACEHOLDERS: Record<string, string> = {
  hfToken: "hf_placeholder_token_for_policy_tests",
};

/** The resources the program registers for this stack under the mock runtime, as the pack sees them. */
export async function registeredResources(s: StackFile): Promise<ResourceView[]> {
  const f = parseStackFile(fs.readFileSync(s.file, "utf8"), path.basename(s.file));
  const secrets = Object.fromEntries(
    [...f.secureKeys, ...f.plaintextSecretKeys].map((k) => [k, SECRET_PLACEHOLDERS[k] ?? `placeholder-${k}`]),
  );
  const run = await runProgram(f.raw, { stack: s.name, secrets });
  return run.resources.map((r) => ({ type: r.type, name: r.name, props: r.inputs }));
}

/** Pulumi's type token for a manifest: `apps/v1` Deployment -> `kubernetes:apps/v1:Deployment`, `v1` -> `core/v1`. */
export function manifestType(apiVersion: string, kind: string): string {
  return `kubernetes:${apiVersion.includes("/") ? apiVersion : `core/${apiVersion}`}:${kind}`;
}

/** Runs `npm run synth` for the stack into a fresh folder and reads back every manifest under k8s/ (and models/<id>/k8s/). */
export function synthManifests(s: StackFile): { dir: string; resources: ResourceView[] } {
  const out = fs.mkdtempSync(path.join(os.tmpdir(), `policy-synth-${s.name}-`));
  execFileSync(
    process.execPath,
    [
      path.join(ROOT, "node_modules/tsx/dist/cli.mjs"),
      path.join(ROOT, "scripts/synth.ts"),
      "--stack",
      s.name,
      "--out",
      out,
    ],
    {
      cwd: s.dir,
      stdio: ["ignore", "ignore", "pipe"],
    },
  );
  // A stack of several models keeps each model's Triton workload under models/<id>/k8s/.
  const modelsDir = path.join(out, "models");
  const k8sDirs = [
    path.join(out, "k8s"),
    ...(fs.existsSync(modelsDir) ? fs.readdirSync(modelsDir).map((id) => path.join(modelsDir, id, "k8s")) : []),
  ];
  const resources: ResourceView[] = [];
  for (const file of k8sDirs
    .flatMap(walk)
    .filter((f) => /\.ya?ml$/.test(f))
    .sort()) {
    for (const doc of fs.readFileSync(file, "utf8").split(/^---$/m)) {
      const o = parse(doc) as Record<string, unknown> | null;
      if (!o || typeof o !== "object") continue;
      const meta = (o.metadata ?? {}) as Record<string, unknown>;
      resources.push({
        type: manifestType(String(o.apiVersion), String(o.kind)),
        name: String(meta.name ?? path.basename(file)),
        props: o,
      });
    }
  }
  return { dir: out, resources };
}
