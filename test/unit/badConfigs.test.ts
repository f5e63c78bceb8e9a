/**
 * The bad-config catalogue: configs AWS, Kubernetes or the Hugging Face Hub
 * would refuse mid-deploy (or that deploy but cannot be meant), each shown
 * refused or warned at preview with its key, its value and a fix. One row per
 * mistake, each starting from the known-good GPT-2 stack; a last case shows
 * them all reported in one pass.
 */
import { describe, expect, it } from "vitest";
import type { ConfigProblem } from "../../infra/config";
import { resolveStack } from "../../infra/resolve";
import { STACK_NAMESPACES } from "../../infra/resolve/limits";
import { KEDA_NAMESPACE } from "../../infra/components/scaling";
import { PROGRAM_TAG_KEYS, ownTags } from "../../infra/tags";
import { GPT2_REVISION, gpt2Config, withOverrides } from "../lib/fixtures";

const TODAY = "2026-11-23";

interface Row {
  title: string;
  overrides: Record<string, Record<string, unknown>>;
  /** Replaces model.source.huggingface.repo. */
  repo?: string;
  /** The Pulumi stack name (default "dev"). */
  stackName?: string;
  /** `key` is the full key (not under `triton-ft:`). */
  fullKey?: boolean;
  severity: "problem" | "warning";
  key: string;
  value: unknown;
  message: RegExp;
  fix: RegExp;
}

const manyTags = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`team${i}`, "x"]));
const cidrs = (n: number) => Array.from({ length: n }, (_, i) => `34.${Math.floor(i / 250)}.${i % 250}.0/24`);
const hf = (repo: string) => ({ source: { huggingface: { repo, revision: GPT2_REVISION } } });

const ROWS: Row[] = [
  // Tags (AWS tag naming limits and requirements)
  {
    title: "a tag key with the reserved aws: prefix, in any case",
    overrides: { tags: { "AWS:team": "ml" } },
    severity: "problem",
    key: "tags.AWS:team",
    value: "AWS:team",
    message: /prefix aws:, reserved for AWS/,
    fix: /not starting with aws:/,
  },
  {
    title: "a tag value with the reserved aws: prefix",
    overrides: { tags: { team: "Aws:ml" } },
    severity: "problem",
    key: "tags.team",
    value: "Aws:ml",
    message: /value starting with aws:/,
    fix: /not starting with aws:/,
  },
  {
    title: "a tag key longer than 128 characters",
    overrides: { tags: { ["k".repeat(129)]: "v" } },
    severity: "problem",
    key: `tags.${"k".repeat(129)}`,
    value: "k".repeat(129),
    message: /129 characters; AWS allows 128/,
    fix: /at most 128/,
  },
  {
    title: "a tag value longer than 256 characters",
    overrides: { tags: { team: "v".repeat(257) } },
    severity: "problem",
    key: "tags.team",
    value: "v".repeat(257),
    message: /257 characters; AWS allows 256/,
    fix: /at most 256/,
  },
  {
    title: "a tag key with characters AWS refuses",
    overrides: { tags: { "cost#center": "42" } },
    severity: "problem",
    key: "tags.cost#center",
    value: "cost#center",
    message: /characters AWS refuses in a tag key/,
    fix: /_ \. : \/ = \+ - @/,
  },
  {
    title: "more tags than AWS allows once the stack's own are added",
    overrides: { tags: manyTags(50 - PROGRAM_TAG_KEYS.length + 1) },
    severity: "problem",
    key: "tags",
    value: `${50 - PROGRAM_TAG_KEYS.length + 1} tags`,
    message: new RegExp(`put 51 tags on a resource with the stack's own ${PROGRAM_TAG_KEYS.length}`),
    fix: new RegExp(`at most ${50 - PROGRAM_TAG_KEYS.length} entries`),
  },
  {
    title: "a tag the stack sets itself (warning: it is replaced)",
    overrides: { tags: { "pulumi:stack": "mine" } },
    severity: "warning",
    key: "tags.pulumi:stack",
    value: "mine",
    message: /the stack's value replaces this one/,
    fix: /another key/,
  },
  // EBS gp3 sizes
  {
    title: "a builder disk above gp3's 64 TiB",
    overrides: { build: { builderDiskGiB: 70_000 } },
    severity: "problem",
    key: "build.builderDiskGiB",
    value: 70_000,
    message: /outside gp3's 1 to 65536 GiB/,
    fix: /use 1 to 65536 GiB/,
  },
  {
    title: "a node root volume above gp3's 64 TiB",
    overrides: { cluster: { nodeRootVolumeGiB: 65_537 } },
    severity: "problem",
    key: "cluster.nodeRootVolumeGiB",
    value: 65_537,
    message: /outside gp3's 1 to 65536 GiB/,
    fix: /use 1 to 65536 GiB/,
  },
  // Hugging Face repo ids
  {
    title: "a repo id without its owner",
    overrides: {},
    repo: "gpt2",
    severity: "problem",
    key: "model.source.huggingface.repo",
    value: "gpt2",
    message: /is not <owner>\/<name>/,
    fix: /<owner>\/<name>/,
  },
  {
    title: "a repo id with a repo type or a URL path",
    overrides: {},
    repo: "models/openai-community/gpt2",
    severity: "problem",
    key: "model.source.huggingface.repo",
    value: "models/openai-community/gpt2",
    message: /is not <owner>\/<name> \(2 '\/'\)/,
    fix: /<owner>\/<name>/,
  },
  {
    title: "a repo id with characters the Hub refuses",
    overrides: {},
    repo: "openai community/gpt2--x",
    severity: "problem",
    key: "model.source.huggingface.repo",
    value: "openai community/gpt2--x",
    message: /a part the Hub refuses \(openai community, gpt2--x\)/,
    fix: /<owner>\/<name>/,
  },
  {
    title: "a repo name longer than 96 characters",
    overrides: {},
    repo: `openai-community/${"g".repeat(97)}`,
    severity: "problem",
    key: "model.source.huggingface.repo",
    value: `openai-community/${"g".repeat(97)}`,
    message: /name of 97 characters; the Hub allows 96/,
    fix: /<owner>\/<name>/,
  },
  {
    title: "the repo of a catalog preset of another family",
    overrides: {},
    repo: "EleutherAI/gpt-j-6b",
    severity: "problem",
    key: "model.source.huggingface.repo",
    value: "EleutherAI/gpt-j-6b",
    message: /is the catalog's gpt-j-6b \(gptj\) but model.preset gpt2 is gpt/,
    fix: /set model.preset gpt-j-6b, or the repo of gpt2 \(openai-community\/gpt2\)/,
  },
  {
    title: "a repo that is not the preset's (warning)",
    overrides: {},
    repo: "someone/gpt2-finetune",
    severity: "warning",
    key: "model.source.huggingface.repo",
    value: "someone/gpt2-finetune",
    message: /is not preset gpt2's repo \(openai-community\/gpt2\)/,
    fix: /use openai-community\/gpt2, or drop model.preset/,
  },
  // Kubernetes namespaces
  ...["default", "kube-system", "kube-public", "kube-node-lease", "kube-triton"].map((ns): Row => ({
    title: `the system namespace ${ns}`,
    overrides: { serving: { namespace: ns } },
    severity: "problem",
    key: "serving.namespace",
    value: ns,
    message: /is a Kubernetes system namespace/,
    fix: /a name of your own/,
  })),
  {
    title: "a namespace the stack creates for its own charts",
    overrides: { serving: { namespace: "keda" } },
    severity: "problem",
    key: "serving.namespace",
    value: "keda",
    message: /creates for its own charts/,
    fix: /a name of your own/,
  },
  {
    title: "a namespace longer than a DNS-1123 label",
    overrides: { serving: { namespace: "t".repeat(64) } },
    severity: "problem",
    key: "serving.namespace",
    value: "t".repeat(64),
    message: /64 characters; a DNS-1123 label has at most 63/,
    fix: /a name of your own/,
  },
  // Node group size, gemm, CIDR counts, key type
  {
    title: "more replicas than an EKS managed node group holds",
    overrides: { serving: { replicas: 450 } },
    severity: "problem",
    key: "serving.replicas",
    value: 450,
    message: /needs 451 g5.xlarge nodes .* holds 450 by default/,
    fix: /at most 449 replicas/,
  },
  {
    title: "gemm.batchSize above serving.maxBatchSize",
    overrides: { gemm: { batchSize: 16 }, serving: { maxBatchSize: 8 } },
    severity: "problem",
    key: "gemm.batchSize",
    value: 16,
    message: /exceeds serving.maxBatchSize \(8\)/,
    fix: /at most 8/,
  },
  {
    title: "more client CIDRs than one security group's inbound rules",
    overrides: { serving: { allowedCidrs: cidrs(61) } },
    severity: "problem",
    key: "serving.allowedCidrs",
    value: "61 CIDRs",
    message: /61 inbound rules of one security group; the quota is 60/,
    fix: /at most 60 ranges/,
  },
  {
    title: "more EKS public endpoint CIDRs than EKS allows",
    overrides: { cluster: { endpointAccess: "public", endpointPublicAccessCidrs: cidrs(41) } },
    severity: "problem",
    key: "cluster.endpointPublicAccessCidrs",
    value: "41 CIDRs",
    message: /exceeds EKS's 40 public endpoint access CIDRs/,
    fix: /at most 40 ranges/,
  },
  {
    title: "an SSH key type EC2 does not import",
    overrides: { build: { sshPublicKey: "ssh-dss AAAAB3NzaC1kc3M user@host" } },
    severity: "problem",
    key: "build.sshPublicKey",
    value: "ssh-dss …",
    message: /not an OpenSSH RSA or ED25519 public key/,
    fix: /ssh-keygen -t ed25519/,
  },
  {
    title: "a VPC id of the wrong shape",
    overrides: { network: { mode: "existing", vpcId: "vpc-1" } },
    severity: "problem",
    key: "network.vpcId",
    value: "vpc-1",
    message: /vpc-0123456789abcdef0/,
    fix: /.+/,
  },
  // Warnings: accepted by AWS, but not what was meant
  {
    title: "an open CIDR on an internal load balancer (warning)",
    overrides: { serving: { allowedCidrs: ["0.0.0.0/0"] } },
    severity: "warning",
    key: "serving.allowedCidrs",
    value: ["0.0.0.0/0"],
    message: /opens the internal load balancer/,
    fix: /list the client CIDRs/,
  },
  // Names the program builds from the stack name and model.name
  {
    title: "a stack name ending in '_': its ECR repository names end in '-'",
    overrides: {},
    stackName: "dev_",
    fullKey: true,
    severity: "problem",
    key: "stack name",
    value: "dev_",
    message: /ECR repository name "triton-ft-dev-\/triton_with_ft", which ECR refuses/,
    fix: /starts and ends with a letter or digit/,
  },
  {
    title: "a stack name whose ECR names get two separators in a row",
    overrides: {},
    stackName: "a-_b",
    fullKey: true,
    severity: "problem",
    key: "stack name",
    value: "a-_b",
    message: /"triton-ft-a--b\/server", which ECR refuses/,
    fix: /no two of '-', '_', '.' in a row/,
  },
  {
    title: "a model.name ending in '-': the Service names are no DNS-1035 labels",
    overrides: { model: { name: "gpt2-" } },
    severity: "problem",
    key: "model.name",
    value: "gpt2-",
    message: /Kubernetes Service name "triton-gpt2-", which is not a DNS-1035 label/,
    fix: /ending with a letter or digit/,
  },
  {
    title: "a model.name with two '-' in a row: its own server repository name ECR refuses",
    overrides: { model: { name: "gpt--2" } },
    severity: "problem",
    key: "model.name",
    value: "gpt--2",
    message:
      /ECR repository name "triton-ft-dev\/server\/gpt--2" \(the model's own server images in a stack of several models\), which ECR refuses/,
    fix: /no '--'/,
  },
  // Disks
  {
    title: "a GPU node root volume smaller than the server image twice",
    overrides: { cluster: { nodeRootVolumeGiB: 50 } },
    severity: "problem",
    key: "cluster.nodeRootVolumeGiB",
    value: 50,
    message: /is below the \d+ GiB this model needs on a GPU node/,
    fix: /use at least \d+, or unset it/,
  },
  // Pulumi stack references
  {
    title: "a stack reference with four parts",
    overrides: { cluster: { mode: "stackReference", stackReference: "acme/infra/eks/prod" } },
    severity: "problem",
    key: "cluster.stackReference",
    value: "acme/infra/eks/prod",
    message: /is not a stack reference Pulumi parses/,
    fix: /<org>\/<project>\/<stack>/,
  },
  {
    title: "a stack reference with a space",
    overrides: { cluster: { mode: "stackReference", stackReference: "acme/gpu infra/prod" } },
    severity: "problem",
    key: "cluster.stackReference",
    value: "acme/gpu infra/prod",
    message: /is not a stack reference Pulumi parses/,
    fix: /<org>\/<project>\/<stack>/,
  },
  {
    title: "a public range as the VPC CIDR (warning)",
    overrides: { network: { vpcCidr: "8.8.0.0/16" } },
    severity: "warning",
    key: "network.vpcCidr",
    value: "8.8.0.0/16",
    message: /is not private address space \(RFC 1918 or RFC 6598/,
    fix: /10.42.0.0\/16/,
  },
];

function configOf(row: Row) {
  const cfg = withOverrides(gpt2Config(), row.overrides);
  if (row.repo !== undefined) cfg.model = { ...cfg.model, ...hf(row.repo) };
  return cfg;
}

function findings(row: Row): { problems: ConfigProblem[]; warnings: ConfigProblem[] } {
  const secrets = { sshPrivateKey: true };
  const { problems, warnings } = resolveStack(configOf(row), secrets, {
    today: TODAY,
    stackName: row.stackName ?? "dev",
  });
  return { problems, warnings };
}

describe("the bad-config catalogue: refused or warned at preview with key, value and fix", () => {
  it.each(ROWS.map((r) => [r.title, r] as const))("%s", (_title, row) => {
    const { problems, warnings } = findings(row);
    const list = row.severity === "problem" ? problems : warnings;
    const key = row.fullKey ? row.key : `triton-ft:${row.key}`;
    const hit = list.find((p) => p.key === key && row.message.test(p.message));
    expect(hit, `${row.severity}s: ${JSON.stringify(list, null, 1)}`).toBeDefined();
    expect(hit?.value).toEqual(row.value);
    expect(hit?.fix).toMatch(row.fix);
  });

  it("the known-good stack has none of these findings", () => {
    const { problems, warnings } = resolveStack(gpt2Config(), {}, { today: TODAY, stackName: "dev" });
    expect(problems).toEqual([]);
    const keys = warnings.map((w) => w.key);
    for (const row of ROWS) expect(keys).not.toContain(`triton-ft:${row.key}`);
  });

  it("reports name, disk and stack reference problems with the rest, in one pass", () => {
    const cfg = withOverrides(gpt2Config(), {
      tags: { "aws:x": "y" },
      model: { name: "gpt2-" },
      cluster: { nodeRootVolumeGiB: 50, mode: "stackReference", stackReference: "a/b/c/d" },
    });
    const keys = resolveStack(cfg, {}, { today: TODAY, stackName: "dev_" }).problems.map((p) => p.key);
    expect(keys).toEqual(
      expect.arrayContaining([
        "triton-ft:tags.aws:x",
        "stack name",
        "triton-ft:model.name",
        "triton-ft:cluster.nodeRootVolumeGiB",
        "triton-ft:cluster.stackReference",
      ]),
    );
  });

  it("reports several at once, in one pass", () => {
    const cfg = withOverrides(gpt2Config(), {
      tags: { "aws:x": "y" },
      build: { builderDiskGiB: 70_000 },
      serving: { namespace: "kube-system", replicas: 450 },
      gemm: { batchSize: 16 },
    });
    cfg.model = { ...cfg.model, ...hf("gpt2") };
    const keys = resolveStack(cfg, {}, { today: TODAY }).problems.map((p) => p.key);
    expect(keys).toEqual(
      expect.arrayContaining([
        "triton-ft:tags.aws:x",
        "triton-ft:build.builderDiskGiB",
        "triton-ft:serving.namespace",
        "triton-ft:serving.replicas",
        "triton-ft:gemm.batchSize",
        "triton-ft:model.source.huggingface.repo",
      ]),
    );
  });

  it("the stack's own namespaces and tags are the ones the program uses", () => {
    expect(STACK_NAMESPACES).toContain(KEDA_NAMESPACE);
    for (const key of Object.keys(ownTags("p", "s", "m"))) expect(PROGRAM_TAG_KEYS).toContain(key);
  });
});
