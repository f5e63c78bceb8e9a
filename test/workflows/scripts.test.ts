/**
 * The workflows' `actions/github-script` steps, run as that action runs them
 * (the script as the body of an async function of require, github, context,
 * core) against a recording stand-in for the GitHub API: the drift report and
 * issue lifecycle, and the inventory comment that each push edits in place.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";

const ROOT = path.resolve(__dirname, "../..");

interface Step {
  name?: string;
  uses?: string;
  with?: { script?: string };
}
function script(workflow: string, job: string, name: string): string {
  const wf = parse(fs.readFileSync(path.join(ROOT, ".github/workflows", workflow), "utf8")) as {
    jobs: Record<string, { steps: Step[] }>;
  };
  const s = wf.jobs[job].steps.find((x) => x.name === name);
  if (!s?.uses?.startsWith("actions/github-script@") || !s.with?.script)
    throw new Error(`${workflow}: ${job} has no github-script step ${name}`);
  return s.with.script;
}

interface Issue {
  number: number;
  title: string;
  user?: { type: string };
  body?: string;
}
type Call = [string, Record<string, unknown>];

/** Just enough of octokit for these scripts; every mutating call is recorded. */
function fakeGithub(existing: { issues?: Issue[]; comments?: Issue[] }) {
  const calls: Call[] = [];
  const record = (name: string) => async (args: Record<string, unknown>) => {
    calls.push([name, args]);
    return { data: {} };
  };
  const list = (items: Issue[]) => Object.assign(async () => ({ data: items }), { items });
  const github = {
    paginate: async (fn: { items: Issue[] }) => fn.items,
    rest: {
      issues: {
        listForRepo: list(existing.issues ?? []),
        listComments: list(existing.comments ?? []),
        create: record("issues.create"),
        createComment: record("issues.createComment"),
        updateComment: record("issues.updateComment"),
        update: record("issues.update"),
      },
    },
  };
  return { github, calls };
}

async function runScript(source: string, env: Record<string, string>, existing: Parameters<typeof fakeGithub>[0]) {
  const { github, calls } = fakeGithub(existing);
  const summary: string[] = [];
  const failed: string[] = [];
  const core = {
    summary: {
      addRaw(text: string) {
        summary.push(text);
        return { write: async () => undefined };
      },
    },
    setFailed: (msg: string) => failed.push(msg),
  };
  const context = {
    repo: { owner: "acme", repo: "triton-ft" },
    serverUrl: "https://github.com",
    runId: 42,
    payload: { pull_request: { number: 7 } },
  };
  const saved = { ...process.env };
  Object.assign(process.env, env);
  try {
    const AsyncFunction = Object.getPrototypeOf(async () => undefined).constructor as new (
      ...args: string[]
    ) => (...a: unknown[]) => Promise<unknown>;
    await new AsyncFunction("require", "github", "context", "core", source)(require, github, context, core);
  } finally {
    process.env = saved;
  }
  return { calls, summary: summary.join(""), failed };
}

describe("drift report (drift.yml)", () => {
  const source = script("drift.yml", "drift", "drift report");
  const env = (refresh: string, preview: string) => ({
    STACK: "prod",
    REFRESH: refresh,
    PREVIEW: preview,
    REFRESH_OUT: "~ aws:ec2/securityGroup:SecurityGroup builder: ingress changed",
    PREVIEW_OUT: "",
  });
  const openIssue = { number: 12, title: "Drift detected in stack prod" };

  it("drift with no open issue: a summary table, a new `drift` issue, and a failed job", async () => {
    const r = await runScript(source, env("failure", "success"), {});
    expect(r.summary).toContain("### Drift report: stack `prod`");
    expect(r.summary).toContain("| `pulumi refresh --expect-no-changes` | **yes**: the cloud differs");
    expect(r.summary).toContain("| `pulumi preview --expect-no-changes` | no (code, config and cloud agree) |");
    expect(r.summary).toContain("ingress changed");
    expect(r.calls.map((c) => c[0])).toEqual(["issues.create"]);
    expect(r.calls[0][1]).toMatchObject({ title: "Drift detected in stack prod", labels: ["drift"] });
    expect(r.failed).toEqual(["stack prod has drifted: https://github.com/acme/triton-ft/actions/runs/42"]);
  });

  it("drift again: the open issue gets a comment, no duplicate", async () => {
    const r = await runScript(source, env("success", "failure"), { issues: [openIssue] });
    expect(r.calls.map((c) => [c[0], c[1].issue_number])).toEqual([["issues.createComment", 12]]);
    expect(r.failed).toHaveLength(1);
  });

  it("clean again: the open issue is told and closed, the job passes", async () => {
    const r = await runScript(source, env("success", "success"), { issues: [openIssue] });
    expect(r.calls.map((c) => [c[0], c[1].issue_number, c[1].state])).toEqual([
      ["issues.createComment", 12, undefined],
      ["issues.update", 12, "closed"],
    ]);
    expect(r.failed).toEqual([]);
  });

  it("clean with no issue: nothing to file", async () => {
    const r = await runScript(source, env("success", "success"), {});
    expect(r.calls).toEqual([]);
    expect(r.failed).toEqual([]);
  });
});

describe("inventory comment (preview.yml)", () => {
  const source = script("preview.yml", "inventory", "comment on the pull request");
  const md = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "inventory-md-")), "diff.md");
  fs.writeFileSync(md, "### Offline inventory diff\n```diff\nstack dev: 0 to add\n```\n");
  const marker = "<!-- triton-ft:inventory-diff -->";

  it("the first push creates the comment", async () => {
    const r = await runScript(source, { DIFF_MD: md }, { comments: [] });
    expect(r.calls).toEqual([
      [
        "issues.createComment",
        expect.objectContaining({
          issue_number: 7,
          body: expect.stringMatching(/^<!-- triton-ft:inventory-diff -->\n### Offline/),
        }),
      ],
    ]);
  });

  it("later pushes edit the same comment", async () => {
    const comments = [
      { number: 1, id: 99, title: "", user: { type: "User" }, body: `${marker} quoted by a person` },
      { number: 2, id: 100, title: "", user: { type: "Bot" }, body: `${marker}\nold` },
    ];
    const r = await runScript(source, { DIFF_MD: md }, { comments: comments as Issue[] });
    expect(r.calls.map((c) => [c[0], c[1].comment_id])).toEqual([["issues.updateComment", 100]]);
  });
});
