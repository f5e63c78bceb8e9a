import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, describe, expect, it, vi } from "vitest";
import { parse, stringify } from "yaml";
import { SECRET_MARK, UNKNOWN_MARK, parseInventory, type Inventory } from "../../infra/synth/inventory";
import { diffInventories, formatDiff } from "../../infra/synth/inventoryDiff";
import { diffCommand, writeInventory, type LoadedProgram } from "../../scripts/synthInventory";

const ROOT = path.resolve(__dirname, "../..");
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "inventory-test-"));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** A fresh SDK and program for every run: the mock runtime's state is process-global. */
async function fresh(): Promise<LoadedProgram> {
  vi.resetModules();
  const pulumi = await import("@pulumi/pulumi");
  const { program } = await import("../../infra/program");
  return { pulumi, program };
}

/** Pulumi.dev.yaml with `edit` applied to its config, rendered into `<tmp>/<dir>`. */
async function inventoryOf(dir: string, edit: (config: Record<string, unknown>) => void = () => undefined) {
  const doc = parse(fs.readFileSync(path.join(ROOT, "Pulumi.dev.yaml"), "utf8")) as { config: Record<string, unknown> };
  edit(doc.config);
  const outDir = path.join(tmp, dir, "dev");
  await writeInventory({ stackName: "dev", stackFileText: stringify(doc), outDir, repoRoot: ROOT, load: fresh });
  const text = fs.readFileSync(path.join(outDir, "resources.json"), "utf8");
  return { outDir, text, inventory: parseInventory(text, outDir) };
}

function diffText(oldDir: string, newDir: string): { code: number; out: string } {
  const out: string[] = [];
  const code = diffCommand(oldDir, newDir, {
    cwd: tmp,
    stdout: (l) => out.push(l),
    stderr: (l) => out.push(`ERR ${l}`),
  });
  return { code, out: out.join("\n") };
}

describe("offline inventory (resources.json)", () => {
  let base: Awaited<ReturnType<typeof inventoryOf>>;

  it("records every registered resource with its parent, unknowns marked", async () => {
    base = await inventoryOf("base");
    const inv = base.inventory;
    const rule = inv.resources.find((r) => r.name === "builder-ssh-0");
    expect(rule).toMatchObject({
      type: "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule",
      parent: "triton-ft:builder:Builder::builder",
      kind: "custom",
    });
    expect(rule?.inputs.cidrIpv4).toBe("198.51.100.7/32");
    // The security group's id exists only after deploy.
    expect(rule?.inputs.securityGroupId).toBe(UNKNOWN_MARK);
    // Both the AWS and the Kubernetes side are there.
    const types = new Set(inv.resources.map((r) => r.type));
    expect(types).toContain("awsx:ec2:Vpc");
    expect(types).toContain("eks:index:Cluster");
    expect(types).toContain("kubernetes:apps/v1:Deployment");
    expect(fs.readFileSync(path.join(base.outDir, "resources.txt"), "utf8")).toMatch(
      /triton-ft:builder:Builder builder\n(│ {2}[├└]─ .*\n)*│ {2}[├└]─ aws:vpc\/securityGroupIngressRule:SecurityGroupIngressRule builder-ssh-0/,
    );
  });

  it("is deterministic: the same stack renders the same bytes", async () => {
    const again = await inventoryOf("again");
    expect(again.text).toBe(base.text);
    expect(diffText("base", "again").out).toMatch(/^stack dev: 0 to add, 0 to change, 0 to remove \(\d+ unchanged\)$/);
  });

  it("--diff names the security-group rule when sshAllowedCidrs changes", async () => {
    await inventoryOf("cidrs", (c) => {
      (c["triton-ft:build"] as { sshAllowedCidrs: string[] }).sshAllowedCidrs = ["203.0.113.0/28", "198.51.100.7/32"];
    });
    const { code, out } = diffText("base", "cidrs");
    expect(code).toBe(0);
    expect(out).toMatch(/^stack dev: 1 to add, 1 to change, 0 to remove/);
    expect(out).toContain(
      '~ aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule builder-ssh-0  (in triton-ft:builder:Builder::builder)\n    ~ cidrIpv4: "198.51.100.7/32" -> "203.0.113.0/28"',
    );
    expect(out).toContain("+ aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule builder-ssh-1");
    expect(out).toContain('      cidrIpv4: "198.51.100.7/32"');
  });

  it("--diff against a base without inventories lists the new stack's resources", () => {
    fs.mkdirSync(path.join(tmp, "empty"), { recursive: true });
    const { code, out } = diffText("empty", "base");
    expect(code).toBe(0);
    expect(out).toMatch(/^ERR .*no resources.json under empty/);
    expect(out).toContain("stack dev: only in base");
    expect(out).toContain("+ aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule builder-ssh-0");
    expect(out).not.toContain("cidrIpv4");
  });

  it("never contains a secret's value: the sentinel is masked where it flows", async () => {
    const SENTINEL = "hf_SENTINEL_7c1e0f3b9a";
    const KEY_SENTINEL = "-----BEGIN OPENSSH PRIVATE KEY-----\nSENTINEL_KEY_55aa\n-----END OPENSSH PRIVATE KEY-----";
    const run = await inventoryOf("secrets", (c) => {
      // Stored in plain text by mistake: still handled as the secrets they are.
      c["triton-ft:hfToken"] = SENTINEL;
      c["triton-ft:sshPrivateKey"] = KEY_SENTINEL;
      (c["triton-ft:build"] as Record<string, unknown>).sshPublicKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIH0 ci";
    });
    const all = run.text + fs.readFileSync(path.join(run.outDir, "resources.txt"), "utf8");
    expect(all).not.toContain("SENTINEL");
    // The token did reach the fetch step (so the test can fail), masked.
    const fetch = run.inventory.resources.find((r) => r.name === "build-fetch");
    expect(fetch?.inputs.environment).toBe(SECRET_MARK);
  });
});

describe("inventory diff", () => {
  const inv = (resources: Inventory["resources"], outputs: Inventory["outputs"] = {}): Inventory => ({
    format: 1,
    project: "p",
    stack: "s",
    source: "",
    legend: {},
    lookups: [],
    resources,
    outputs,
  });
  const role = (policy: object, name = "r") => ({
    type: "aws:iam/role:Role",
    name,
    parent: null,
    kind: "custom" as const,
    inputs: { assumeRolePolicy: JSON.stringify(policy), tags: { a: "1" } },
  });

  it("compares JSON held in strings field by field", () => {
    const before = inv([role({ Statement: [{ Effect: "Allow", Principal: { Service: "ec2.amazonaws.com" } }] })]);
    const after = inv([role({ Statement: [{ Effect: "Allow", Principal: { Service: "eks.amazonaws.com" } }] })]);
    const text = formatDiff(diffInventories(before, after)).join("\n");
    expect(text).toContain(
      '    ~ assumeRolePolicy{json}.Statement[0].Principal.Service: "ec2.amazonaws.com" -> "eks.amazonaws.com"',
    );
  });

  it("shows multi-line text changes as lines, and removed resources and outputs", () => {
    const cmd = (stdin: string) => ({
      type: "command:remote:Command",
      name: "c",
      parent: "x:y:Z::p",
      kind: "custom" as const,
      inputs: { stdin },
    });
    const before = inv([cmd("A=1\nB=2\nC=3"), role({}, "gone")], { url: "a" });
    const after = inv([cmd("A=1\nB=5\nC=3")], { url: "b" });
    const text = formatDiff(diffInventories(before, after)).join("\n");
    expect(text).toContain("stack s: 0 to add, 1 to change, 1 to remove (0 unchanged); 1 output field(s) changed");
    expect(text).toContain("    ~ stdin: text changed (1 lines out, 1 in)\n        - B=2\n        + B=5");
    expect(text).toContain("- aws:iam/role:Role gone");
    expect(text).toContain('~ stack outputs\n    ~ url: "a" -> "b"');
  });
});
