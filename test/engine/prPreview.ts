/**
 * A real `pulumi preview --diff` of the committed stacks in their promoted,
 * kubeconfig-mode form, for the pull request's comment (preview.yml, job
 * engine-preview): the Pulumi CLI and Kubernetes provider that
 * test/engine/build-engine.sh built, the policy pack in the real analyzer,
 * and the loopback control plane of the k8s suite as the cluster. It needs no
 * cloud credentials, so forks get it too.
 *
 * Usage: tsx test/engine/prPreview.ts --k8s-bin <dir> --engine-bin <dir> --out <file.md> [stack...]
 * (default stacks: every committed Pulumi.<stack>.yaml). Exits non-zero when a preview fails
 * (a refusal or a mandatory policy violation), after writing the report.
 */
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { program } from "../../infra/program";
import { REPO_ROOT } from "../../infra/repoFiles";
import { LocalCluster } from "../k8s/cluster";
import { POLICY_PACK, engineStack, setStackConfig, startEngine } from "./engine";
import { buildOutputs, committedConfig, promotedForm } from "./stacks";

function arg(argv: string[], name: string): string {
  const i = argv.indexOf(name);
  const v = i >= 0 ? argv[i + 1] : undefined;
  if (!v) throw new Error(`${name} is required`);
  return v;
}

function committedStacks(): string[] {
  return fs
    .readdirSync(REPO_ROOT)
    .map((f) => /^Pulumi\.([A-Za-z0-9_-]+)\.yaml$/.exec(f)?.[1])
    .filter((s): s is string => s !== undefined)
    .sort();
}

async function main(argv: string[]): Promise<number> {
  const k8sBin = arg(argv, "--k8s-bin");
  process.env.ENGINE_BIN_DIR = arg(argv, "--engine-bin");
  const out = arg(argv, "--out");
  const named = argv.filter((a, i) => !a.startsWith("--") && !argv[i - 1]?.startsWith("--"));
  const stacks = named.length > 0 ? named : committedStacks();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "triton-ft-engine-preview-"));
  const cluster = new LocalCluster(path.join(dir, "cluster"), k8sBin, path.join(k8sBin, "etcd"));
  const sections: string[] = [];
  let failed = 0;
  try {
    const version = execFileSync(path.join(k8sBin, "kube-apiserver"), ["--version"], { encoding: "utf8" }).split(
      " ",
    )[1];
    await cluster.up((version ?? "unknown").trim());
    const kubeconfig = fs.readFileSync(cluster.kubeconfig, "utf8");
    const engine = await startEngine(path.join(dir, "engine"));
    for (const name of stacks) {
      const committed = committedConfig(name);
      const building = `${name}-build`;
      const publisher = await engineStack(engine, building, async () => buildOutputs(committed, building, "head"));
      await publisher.up();
      const stack = await engineStack(engine, `${name}-promoted`, async () => program());
      await setStackConfig(stack, promotedForm(committed, building), { kubeconfig });
      const text: string[] = [];
      let ok = true;
      try {
        await stack.preview({
          diff: true,
          policyPacks: [POLICY_PACK],
          onOutput: (s) => text.push(s),
        });
      } catch (err) {
        ok = false;
        failed++;
        text.push(`\n${err instanceof Error ? err.message : String(err)}`);
      }
      sections.push(
        [
          `#### ${name} (promoted, kubeconfig mode): ${ok ? "preview succeeded" : "**preview failed**"}`,
          "```diff",
          text.join("").slice(-30000),
          "```",
        ].join("\n"),
      );
    }
  } finally {
    await cluster.down();
    fs.rmSync(dir, { recursive: true, force: true });
  }
  const header = [
    "### Real-engine preview",
    "`pulumi preview --diff` with the policy pack, by the Pulumi CLI and Kubernetes provider built from the Go module proxy, " +
      "of each committed stack in its promoted form (`build.promoteFrom`, `cluster.mode: kubeconfig`) against a loopback " +
      "Kubernetes control plane: the engine's own create/update/replace decisions and the provider's checks for the Kubernetes side. " +
      "The AWS side is in the credentialed `pulumi preview` and the offline inventory diff (docs/development.md, The real engine suite).",
  ].join("\n");
  fs.writeFileSync(out, `${header}\n\n${sections.join("\n\n")}\n`);
  return failed === 0 ? 0 : 1;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err);
    process.exit(2);
  },
);
