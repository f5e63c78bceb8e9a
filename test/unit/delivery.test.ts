import * as fs from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";

const ROOT = path.resolve(__dirname, "../..");

interface Step {
  uses?: string;
  run?: string;
  with?: Record<string, unknown>;
}
interface Job {
  needs?: string | string[];
  environment?: string;
  concurrency?: { group: string; "cancel-in-progress": boolean };
  permissions?: Record<string, string>;
  steps: Step[];
}
interface Workflow {
  on: Record<string, unknown>;
  permissions: Record<string, string>;
  jobs: Record<string, Job>;
}

function workflow(name: string): Workflow {
  return parse(fs.readFileSync(path.join(ROOT, ".github", "workflows", `${name}.yml`), "utf8")) as Workflow;
}

const pulumiSteps = (job: Job) => job.steps.filter((s) => s.uses?.startsWith("pulumi/actions@"));
const needs = (job: Job) => (Array.isArray(job.needs) ? job.needs : job.needs ? [job.needs] : []);

describe("delivery workflows", () => {
  const preview = workflow("preview");
  const deploy = workflow("deploy");
  const drift = workflow("drift");
  const all = { preview, deploy, drift };

  it("the workflows' Pulumi CLI (.pulumi.version) is the SDK version the lockfile pins", () => {
    const cli = fs.readFileSync(path.join(ROOT, ".pulumi.version"), "utf8").trim();
    const lock = JSON.parse(fs.readFileSync(path.join(ROOT, "package-lock.json"), "utf8")) as {
      packages: Record<string, { version?: string }>;
    };
    expect(cli).toMatch(/^\d+\.\d+\.\d+$/);
    expect(cli).toBe(lock.packages["node_modules/@pulumi/pulumi"]?.version);
    for (const wf of Object.values(all))
      for (const job of Object.values(wf.jobs))
        for (const s of pulumiSteps(job)) expect(s.with?.["pulumi-version-file"]).toBe(".pulumi.version");
  });

  it("no long-lived cloud keys: AWS access only through OIDC role assumption", () => {
    for (const [name, wf] of Object.entries(all)) {
      const text = JSON.stringify(wf);
      expect(text, name).not.toMatch(
        /aws-access-key-id|aws-secret-access-key|AWS_SECRET_ACCESS_KEY|PULUMI_ACCESS_TOKEN/,
      );
      expect(wf.permissions, name).toEqual({ contents: "read" });
      for (const job of Object.values(wf.jobs))
        for (const s of job.steps.filter((x) => x.uses?.startsWith("aws-actions/configure-aws-credentials@"))) {
          expect(String(s.with?.["role-to-assume"])).toMatch(/^\$\{\{ vars\.AWS_(PREVIEW|DEPLOY)_ROLE_ARN \}\}$/);
          expect(job.permissions?.["id-token"]).toBe("write");
        }
    }
  });

  it("pull requests preview every affected stack with diff, the policy pack and a PR comment", () => {
    expect(Object.keys(preview.on)).toEqual(["pull_request"]);
    const job = preview.jobs.preview;
    expect(needs(job)).toEqual(["test", "changes"]);
    const [step] = pulumiSteps(job);
    expect(step.with).toMatchObject({
      command: "preview",
      "stack-name": "${{ matrix.stack }}",
      diff: true,
      policyPacks: "policy",
      "comment-on-pr": true,
      "edit-pr-comment": true,
    });
    // The offline inventory diff needs no credentials (forks get it).
    const inventory = preview.jobs.inventory;
    expect(inventory.permissions?.["id-token"]).toBeUndefined();
    expect(inventory.steps.map((s) => s.run ?? "").join("\n")).toContain("npm run --silent synth -- --diff");
  });

  it("promotion: dev, then prod's preview, then prod behind its reviewed environment", () => {
    expect(Object.keys(deploy.on)).toEqual(["push", "workflow_dispatch"]);
    expect(deploy.on.push).toEqual({ branches: ["main"] });
    expect(needs(deploy.jobs.dev)).toEqual(["checks"]);
    expect(needs(deploy.jobs["prod-preview"])).toEqual(["dev"]);
    expect(needs(deploy.jobs.prod)).toEqual(["prod-preview"]);
    for (const stack of ["dev", "prod"]) {
      const job = deploy.jobs[stack];
      expect(job.environment).toBe(stack);
      expect(pulumiSteps(job).map((s) => [s.with?.command, s.with?.["stack-name"], s.with?.policyPacks])).toEqual([
        ["up", stack, "policy"],
      ]);
    }
  });

  it("one deployment per stack at a time, and a running up is never cancelled (drift queues behind it too)", () => {
    for (const stack of ["dev", "prod"])
      expect(deploy.jobs[stack].concurrency).toEqual({ group: `pulumi-${stack}`, "cancel-in-progress": false });
    expect(drift.jobs.drift.concurrency).toEqual({ group: "pulumi-${{ matrix.stack }}", "cancel-in-progress": false });
  });

  it("drift: scheduled refresh and preview, both --expect-no-changes, then a report", () => {
    expect(Object.keys(drift.on)).toEqual(["schedule", "workflow_dispatch"]);
    const steps = pulumiSteps(drift.jobs.drift).map((s) => [s.with?.command, s.with?.["expect-no-changes"]]);
    expect(steps).toEqual([
      ["refresh", true],
      ["preview", true],
    ]);
    const report = drift.jobs.drift.steps.at(-1) as Step;
    expect(String(report.with?.script)).toContain("core.setFailed");
  });

  it("drift: the support job prints the support dates and fails past an unacknowledged end (pipefail keeps the exit code)", () => {
    const step = drift.jobs.support?.steps.at(-1) as Step & { shell?: string };
    expect(step.run).toContain("npx tsx scripts/ci/support-table.ts --markdown");
    expect(step.shell).toBe("bash");
  });
});
