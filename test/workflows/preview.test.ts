/**
 * Runs the preview workflow's own `run:` steps, as GitHub would (bash -eo
 * pipefail, the runner's environment variables), on a scratch repository whose
 * head commit changes one stack: the stacks-to-preview step and the offline
 * inventory job (synth of head and base, `--diff`, the markdown for the
 * comment and the job summary). Only `npm ci` is stood in for (a link to this
 * checkout's node_modules): the lockfile is the same on both sides.
 */
import { execFileSync, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";

const ROOT = path.resolve(__dirname, "../..");

interface Step {
  id?: string;
  name?: string;
  run?: string;
  env?: Record<string, string>;
}
interface Workflow {
  jobs: Record<string, { steps: Step[] }>;
}

const workflow = parse(fs.readFileSync(path.join(ROOT, ".github/workflows/preview.yml"), "utf8")) as Workflow;

function step(job: string, name: string): string {
  const s = workflow.jobs[job].steps.find((x) => x.name === name || x.id === name);
  if (!s?.run) throw new Error(`preview.yml: job ${job} has no run step ${name}`);
  return s.run;
}

let tmp: string;
let repo: string;
let env: NodeJS.ProcessEnv;
let base: string;
let head: string;
const git = (...args: string[]) => execFileSync("git", args, { cwd: repo, encoding: "utf8" }).trim();

function runStep(job: string, name: string): { status: number; out: string } {
  const r = spawnSync("bash", ["--noprofile", "--norc", "-eo", "pipefail", "-c", step(job, name)], {
    cwd: repo,
    env,
    encoding: "utf8",
  });
  return { status: r.status ?? -1, out: `${r.stdout}\n${r.stderr}` };
}

beforeAll(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), "preview-workflow-"));
  repo = path.join(tmp, "repo");
  // The working tree's tracked files (what CI's clean clone has), as the base commit.
  const files = execFileSync("git", ["ls-files", "-z"], { cwd: ROOT, encoding: "utf8" }).split("\0").filter(Boolean);
  for (const f of files) {
    const src = path.join(ROOT, f);
    if (!fs.existsSync(src)) continue;
    fs.mkdirSync(path.dirname(path.join(repo, f)), { recursive: true });
    fs.copyFileSync(src, path.join(repo, f));
  }
  git("init", "-q", "-b", "main");
  git("-c", "user.email=t@example.invalid", "-c", "user.name=t", "add", "-A");
  git("-c", "user.email=t@example.invalid", "-c", "user.name=t", "commit", "-qm", "base");
  base = git("rev-parse", "HEAD");
  // The pull request: prod's builder opens SSH to one more CIDR.
  const prod = path.join(repo, "Pulumi.prod.yaml");
  fs.writeFileSync(
    prod,
    fs
      .readFileSync(prod, "utf8")
      .replace("      - 198.51.100.0/28\n", "      - 198.51.100.0/28\n      - 203.0.113.9/32\n"),
  );
  git("-c", "user.email=t@example.invalid", "-c", "user.name=t", "commit", "-qam", "prod: one more SSH CIDR");
  head = git("rev-parse", "HEAD");
  fs.symlinkSync(path.join(ROOT, "node_modules"), path.join(repo, "node_modules"));

  // `npm ci` stands in as a link to this checkout's node_modules; every other npm command is real.
  const bin = path.join(tmp, "bin");
  fs.mkdirSync(bin);
  const npm = execFileSync("bash", ["-c", "command -v npm"], { encoding: "utf8" }).trim();
  fs.writeFileSync(
    path.join(bin, "npm"),
    `#!/usr/bin/env bash\nif [[ $1 == ci ]]; then ln -sfn ${JSON.stringify(path.join(ROOT, "node_modules"))} node_modules; exit 0; fi\nexec ${JSON.stringify(npm)} "$@"\n`,
    { mode: 0o755 },
  );
  const runnerTemp = path.join(tmp, "runner-temp");
  fs.mkdirSync(runnerTemp);
  env = {
    ...process.env,
    PATH: `${bin}:${process.env.PATH ?? ""}`,
    RUNNER_TEMP: runnerTemp,
    GITHUB_OUTPUT: path.join(tmp, "github-output"),
    GITHUB_STEP_SUMMARY: path.join(tmp, "step-summary.md"),
    GITHUB_SHA: head,
    BASE_SHA: base,
    HEAD_SHA: head,
  };
});

afterAll(() => {
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

describe("preview workflow steps, run for real", () => {
  it("stacks to preview: only the stack whose file changed", () => {
    const r = runStep("changes", "affected");
    expect(r.status, r.out).toBe(0);
    expect(fs.readFileSync(env.GITHUB_OUTPUT as string, "utf8")).toContain('stacks=["prod"]\n');
  });

  it("offline inventory job: synth of head and base, then the diff as markdown for the comment and the summary", () => {
    for (const name of [
      "synth every stack of the pull request",
      "synth every stack of the base branch",
      "npm run synth -- --diff",
    ]) {
      const r = runStep("inventory", name);
      expect(r.status, `${name}\n${r.out}`).toBe(0);
    }
    const temp = env.RUNNER_TEMP as string;
    for (const side of ["old", "new"])
      for (const stack of ["dev", "prod"])
        expect(fs.existsSync(path.join(temp, "inventory", side, stack, "resources.json")), `${side}/${stack}`).toBe(
          true,
        );
    const md = fs.readFileSync(path.join(temp, "inventory", "diff.md"), "utf8");
    expect(md).toContain(`base \`${base.slice(0, 12)}\` -> head \`${head.slice(0, 12)}\``);
    // Each stack's change list opens with its estimate's change: a new SSH range costs nothing and rebuilds nothing.
    // It opens the builder's and the compile host's firewall (one rule each) and the EKS endpoint.
    expect(md).toMatch(
      /```diff\nstack dev: 0 to add, 0 to change, 0 to remove \(\d+ unchanged\)\ncost: unchanged \(\$[\d,]+\/month\)\n {2}gpt2: [^\n]*this change: no build or rollout\n\nstack prod: 2 to add, 1 to change, 0 to remove \(\d+ unchanged\)\ncost: unchanged/,
    );
    // The comment's cost section: a bar per side, before and after.
    expect(md).toMatch(
      /### Cost and time to serve\n.*\n\*\*dev\*\*: unchanged[^\n]*\n```\nbefore █+░* *\$[\d,]+\/month\nafter {2}█+/,
    );
    // The EKS API endpoint admits the deployers' ranges too (resolve/clusterAccess.ts), so a new SSH range changes it.
    expect(md).toContain(
      '~ eks:index:Cluster cluster  (in triton-ft:cluster:Cluster::cluster)\n    + publicAccessCidrs[1]: (absent) -> "203.0.113.9/32"',
    );
    expect(md).toContain(
      '+ aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule builder-ssh-1  (in triton-ft:builder:Builder::builder)\n      cidrIpv4: "203.0.113.9/32"',
    );
    expect(md).toContain(
      '+ aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule compiler-ssh-1  (in triton-ft:builder:Builder::compiler)\n      cidrIpv4: "203.0.113.9/32"',
    );
    expect(fs.readFileSync(env.GITHUB_STEP_SUMMARY as string, "utf8")).toBe(md);
  });
});
