import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { parse, stringify } from "yaml";
import { parseInventory, parseMask, type Inventory } from "../../infra/synth/inventory";
import { diffInventories, formatDiff } from "../../infra/synth/inventoryDiff";
import { cli } from "../../scripts/synth";
import { freshProgram } from "../lib/freshProgram";

const ROOT = path.resolve(__dirname, "../..");
type Cfg = Record<string, unknown>;
/** The object under `triton-ft:<key>` of a stack file's config, created when absent. */
const obj = (c: Cfg, key: string) => (c[`triton-ft:${key}`] ??= {}) as Record<string, unknown>;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "inventory-test-"));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** `npm run synth -- --stack dev` on Pulumi.dev.yaml with `edit` applied, in `<tmp>/<dir>`. */
async function inventoryOf(dir: string, edit: (config: Record<string, unknown>) => void = () => undefined) {
  const doc = parse(fs.readFileSync(path.join(ROOT, "Pulumi.dev.yaml"), "utf8")) as { config: Record<string, unknown> };
  edit(doc.config);
  const cwd = path.join(tmp, dir);
  fs.mkdirSync(cwd, { recursive: true });
  fs.writeFileSync(path.join(cwd, "Pulumi.dev.yaml"), stringify(doc));
  const log: string[] = [];
  const io = { cwd, repoRoot: ROOT, stdout: (l: string) => log.push(l), stderr: (l: string) => log.push(`ERR ${l}`) };
  const code = await cli(["--stack", "dev"], io, freshProgram);
  expect(code, log.join("\n")).toBe(0);
  const outDir = path.join(cwd, "out", "dev");
  const text = fs.readFileSync(path.join(outDir, "resources.json"), "utf8");
  return { outDir, text, inventory: parseInventory(text, outDir), log };
}

/** `npm run synth -- --diff <tmp>/<old>/out <tmp>/<new>/out`. */
async function diffText(oldDir: string, newDir: string): Promise<{ code: number; out: string }> {
  const out: string[] = [];
  const io = {
    cwd: tmp,
    repoRoot: ROOT,
    stdout: (l: string) => out.push(l),
    stderr: (l: string) => out.push(`ERR ${l}`),
  };
  const code = await cli(["--diff", `${oldDir}/out`, `${newDir}/out`], io);
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
    expect(parseMask(rule?.inputs.securityGroupId)?.kind).toBe("unknown");
    // Both the AWS and the Kubernetes side are there.
    const types = new Set(inv.resources.map((r) => r.type));
    expect(types).toContain("awsx:ec2:Vpc");
    expect(types).toContain("eks:index:Cluster");
    expect(types).toContain("kubernetes:apps/v1:Deployment");
    // awsx and eks expand their components inside their providers: the inventory says so.
    expect(inv.resources.find((r) => r.type === "awsx:ec2:Vpc")?.kind).toBe("remote-component");
    expect(inv.resources.find((r) => r.type === "triton-ft:builder:Builder")?.kind).toBe("component");
    expect(base.log.join("\n")).toMatch(
      /\ninventory: triton-ft \/ dev: \d+ resources .* -> resources.json, resources.txt$/,
    );
    expect(fs.readFileSync(path.join(base.outDir, "resources.txt"), "utf8")).toMatch(
      /triton-ft:builder:Builder builder\n(│ {2}[├└]─ .*\n)*│ {2}[├└]─ aws:vpc\/securityGroupIngressRule:SecurityGroupIngressRule builder-ssh-0/,
    );
  });

  it("is deterministic: the same stack renders the same bytes", async () => {
    const again = await inventoryOf("again");
    expect(again.text).toBe(base.text);
    expect((await diffText("base", "again")).out).toMatch(
      // The estimate's change heads the list: the same stack costs the same and re-runs nothing.
      /^stack dev: 0 to add, 0 to change, 0 to remove \(\d+ unchanged\)\ncost: unchanged \(\$[\d,]+\/month\)\n {2}gpt2: [^\n]*this change: no build or rollout$/,
    );
  });

  it("--diff names the security-group rule when sshAllowedCidrs changes", async () => {
    await inventoryOf("cidrs", (c) => {
      (c["triton-ft:build"] as { sshAllowedCidrs: string[] }).sshAllowedCidrs = ["203.0.113.0/28", "198.51.100.7/32"];
    });
    const { code, out } = await diffText("base", "cidrs");
    expect(code).toBe(0);
    // The builder's and the compile host's SSH rules, and the EKS API endpoint's public CIDRs (they default to the same list).
    expect(out).toMatch(/^stack dev: 2 to add, 3 to change, 0 to remove/);
    expect(out).toContain("+ aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule compiler-ssh-1");
    expect(out).toContain("~ eks:index:Cluster cluster");
    expect(out).toContain(
      '~ aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule builder-ssh-0  (in triton-ft:builder:Builder::builder)\n    ~ cidrIpv4: "198.51.100.7/32" -> "203.0.113.0/28"',
    );
    expect(out).toContain("+ aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule builder-ssh-1");
    expect(out).toContain('      cidrIpv4: "198.51.100.7/32"');
  });

  it("--diff against a base without inventories lists the new stack's resources", async () => {
    fs.mkdirSync(path.join(tmp, "empty", "out"), { recursive: true });
    const { code, out } = await diffText("empty", "base");
    expect(code).toBe(0);
    expect(out).toMatch(/^ERR .*no resources.json under empty\/out/);
    expect(out).toContain("stack dev: only in base");
    expect(out).toContain("+ aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule builder-ssh-0");
    expect(out).not.toContain("cidrIpv4");
  });

  it.each([
    ["network.vpcCidr", (c: Cfg) => (obj(c, "network").vpcCidr = "10.50.0.0/16"), "awsx:ec2:Vpc network", "cidrBlock"],
    [
      "network.availabilityZones",
      (c: Cfg) => (obj(c, "network").availabilityZones = 3),
      "awsx:ec2:Vpc network",
      "numberOfAvailabilityZones",
    ],
    [
      "cluster.kubernetesVersion",
      (c: Cfg) => (obj(c, "cluster").kubernetesVersion = "1.32"),
      "eks:index:Cluster cluster",
      "version",
    ],
    [
      "cluster.nodeRootVolumeGiB",
      (c: Cfg) => (obj(c, "cluster").nodeRootVolumeGiB = 300),
      "aws:ec2/launchTemplate:LaunchTemplate cluster-gpu",
      "blockDeviceMappings[0].ebs.volumeSize",
    ],
    [
      "tags",
      (c: Cfg) => (obj(c, "tags").team = "search"),
      "aws:ecr/repository:Repository registry-server",
      "tags.team",
    ],
  ])("--diff shows a change of %s", async (key, edit, resource, field) => {
    await inventoryOf(`key-${key}`, edit);
    const { out } = await diffText("base", `key-${key}`);
    expect(out).toContain(`~ ${resource}`);
    expect(out).toMatch(new RegExp(`\\n {4}[~+] ${field.replace(/[.[\]]/g, "\\$&")}: `));
  });

  it("a secure: value synth cannot decrypt stands in for the real one (an existing cluster's kubeconfig)", async () => {
    const run = await inventoryOf("kubeconfig", (c) => {
      c["triton-ft:cluster"] = { mode: "kubeconfig" };
      c["triton-ft:kubeconfig"] = { secure: "v1:bm90LWEtcmVhbC1jaXBoZXJ0ZXh0" };
    });
    const provider = run.inventory.resources.find((r) => r.type === "pulumi:providers:kubernetes");
    expect(parseMask(provider?.inputs.kubeconfig)?.kind).toBe("secret");
    expect(parseMask(run.inventory.outputs.clusterName)?.kind).toBe("unknown");
    expect(run.text).not.toContain("bm90LWEtcmVhbC1jaXBoZXJ0ZXh0");
  });

  it("--diff shows a change behind masked values, and what it does: a team added rolls the gateway", async () => {
    // The gateway's config holds the store's endpoint (known after deploy) and its keys are secret:
    // without fingerprints both would read [unknown]/[secret] on both sides and the roll would not show.
    await inventoryOf("team", (c) => {
      obj(c, "serving").consumers = ["search"];
    });
    await inventoryOf("teams", (c) => {
      obj(c, "serving").consumers = ["search", "novelists"];
    });
    const { out } = await diffText("team", "teams");
    expect(out).toContain("~ kubernetes:apps/v1:Deployment gateway-deployment");
    expect(out).toMatch(
      /\n {4}~ spec\.template\.metadata\.annotations\["triton-ft\.io\/config-checksum"\]: \[(unknown|secret)\] changed/,
    );
    expect(out).toMatch(/\nwhat it does:\n(.*\n)* {2}rolls the gateway: new pods replace the old ones one by one/);
    expect(out).toContain("    => rolls the gateway");
  });

  it("--diff shows a secret set anew: a new ciphertext in the stack file is a change", async () => {
    const kubeconfigMode = (ciphertext: string) => (c: Cfg) => {
      c["triton-ft:cluster"] = { mode: "kubeconfig" };
      c["triton-ft:kubeconfig"] = { secure: ciphertext };
    };
    await inventoryOf("secret-a", kubeconfigMode("v1:YWFhYWFhYWFhYWFhYWFhYQ=="));
    await inventoryOf("secret-a2", kubeconfigMode("v1:YWFhYWFhYWFhYWFhYWFhYQ=="));
    await inventoryOf("secret-b", kubeconfigMode("v1:YmJiYmJiYmJiYmJiYmJiYg=="));
    expect((await diffText("secret-a", "secret-a2")).out).toMatch(/^stack dev: 0 to add, 0 to change, 0 to remove/);
    const { out } = await diffText("secret-a", "secret-b");
    expect(out).toContain("~ pulumi:providers:kubernetes");
    expect(out).toContain("    ~ kubeconfig: [secret] changed (a secret: the value is not shown)");
    expect(out).not.toMatch(/YWFh|YmJi/);
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
    expect(parseMask((fetch?.inputs.environment as Record<string, unknown> | undefined)?.HF_TOKEN)?.kind).toBe(
      "secret",
    );
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
