/**
 * The estimate against the resources it prices (infra/synth/costCoverage.ts),
 * on the synth output of the committed and example stacks: every resource
 * type of the inventory is priced or listed as free/unpriced with its reason,
 * every cost line is carried by a resource, and each model's cost in
 * cost.json is what a cost report by tag gives over the same resources.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse, stringify } from "yaml";
import type { CostReport } from "../../infra/cost";
import {
  COST_COVERAGE,
  LOAD_BALANCER_TAGS_ANNOTATION,
  controllerTags,
  coverageProblems,
  tagAllocation,
  tagOwner,
} from "../../infra/synth/costCoverage";
import { parseInventory, type Inventory } from "../../infra/synth/inventory";
import { COST_FILE, parseCostReport } from "../../infra/synth/costArtifacts";
import { MODEL_TAG_KEY } from "../../infra/tags";
import { cli } from "../../scripts/synth";
import { SEED_CANARY_STACK } from "../lib/modelsForm";
import { freshProgram } from "../lib/freshProgram";

const ROOT = path.resolve(__dirname, "../..");
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "cost-coverage-"));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

interface Synth {
  inventory: Inventory;
  cost: CostReport;
}

/** `npm run synth` of a stack file (optionally edited) into its own folder under tmp. */
async function synth(name: string, file: string, edit?: (config: Record<string, unknown>) => void): Promise<Synth> {
  const doc = parse(fs.readFileSync(path.join(ROOT, file), "utf8")) as { config: Record<string, unknown> };
  edit?.(doc.config);
  const stack = path.basename(file).replace(/^Pulumi\.|\.yaml$/g, "");
  const cwd = path.join(tmp, name);
  fs.mkdirSync(cwd, { recursive: true });
  fs.writeFileSync(path.join(cwd, `Pulumi.${stack}.yaml`), stringify(doc));
  const log: string[] = [];
  const io = { cwd, repoRoot: ROOT, stdout: (l: string) => log.push(l), stderr: (l: string) => log.push(`ERR ${l}`) };
  const code = await cli(["--stack", stack], io, freshProgram);
  expect(code, log.join("\n")).toBe(0);
  const out = path.join(cwd, "out", stack);
  return {
    inventory: parseInventory(fs.readFileSync(path.join(out, "resources.json"), "utf8"), out),
    cost: parseCostReport(fs.readFileSync(path.join(out, COST_FILE), "utf8"), out),
  };
}

const STACKS: Array<[string, string, ((c: Record<string, unknown>) => void)?]> = [
  ["dev", "Pulumi.dev.yaml"],
  ["prod", "Pulumi.prod.yaml"],
  ["seed-models", "test/stacks/models/Pulumi.seed-models.yaml"],
  ["seed-canary", SEED_CANARY_STACK],
  // FT and vLLM side by side (issue 37): the vLLM model's resources are priced like the FT model's.
  ["seed-mixed", "test/stacks/models/Pulumi.seed-mixed.yaml"],
  // Every model on vLLM: the CPU builder (plan/cpuBuilder.ts) is priced like a GPU builder, at its own type.
  ["seed-vllm", "test/stacks/models/Pulumi.seed-vllm.yaml"],
  ["gptj-g6-tp4", "test/stacks/gpus/Pulumi.gptj-g6-tp4.yaml"],
  ["neox20b-g6e", "test/stacks/gpus/Pulumi.neox20b-g6e.yaml"],
  // An existing cluster and network: no control plane, NAT or KMS key; the store in the cluster, on a volume.
  [
    "dev-kubeconfig",
    "Pulumi.dev.yaml",
    (c) => {
      c["triton-ft:cluster"] = { mode: "kubeconfig" };
      c["triton-ft:network"] = {
        mode: "existing",
        vpcId: "vpc-0123456789abcdef0",
        publicSubnetIds: ["subnet-00000000000000000"],
        privateSubnetIds: ["subnet-00000000000000001", "subnet-00000000000000002"],
      };
      c["triton-ft:kubeconfig"] = { secure: "AAABAKubeconfigStandIn" };
    },
  ],
];

const runs = new Map<string, Synth>();
beforeAll(async () => {
  for (const [name, file, edit] of STACKS) runs.set(name, await synth(name, file, edit));
}, 300_000);

function run(name: string): Synth {
  const r = runs.get(name);
  if (!r) throw new Error(`${name} was not synthesised`);
  return r;
}

const ctxOf = (s: Synth) => ({ firstModel: s.cost.models[0]?.id ?? "" });

describe("the estimate covers every resource it creates", () => {
  for (const [name] of STACKS)
    it(`${name}: every resource type priced or listed with its reason, every line carried by a resource`, () => {
      const s = run(name);
      expect(s.cost.priced).toBe(true);
      expect(coverageProblems(s.inventory.resources, s.cost, ctxOf(s))).toEqual([]);
    });

  it("the store, the KMS key and one ECR line per repository are in dev's estimate", () => {
    const s = run("dev");
    const ids = s.cost.items.map((i) => i.id);
    expect(ids).toEqual(expect.arrayContaining(["store-data", "store-ecpu", "kms-keys"]));
    const repos = s.inventory.resources.filter((r) => r.type === "aws:ecr/repository:Repository");
    expect(ids.filter((i) => i.startsWith("ecr-")).sort()).toEqual(
      repos.map((r) => `ecr-${String(r.inputs.name)}`).sort(),
    );
    const existing = run("dev-kubeconfig").cost;
    expect(existing.items.map((i) => i.id)).toEqual(expect.arrayContaining(["store-volume"]));
    expect(existing.items.filter((i) => i.outsideStack).map((i) => i.id)).toEqual(["gpu-nodes", "gpu-node-volumes"]);
  });

  it("finds the billable resource the map forgets (a priced type removed)", () => {
    const s = run("dev");
    const withoutKms = Object.fromEntries(Object.entries(COST_COVERAGE).filter(([type]) => type !== "aws:kms/key:Key"));
    expect(coverageProblems(s.inventory.resources, s.cost, ctxOf(s), withoutKms)).toEqual([
      "aws:kms/key:Key (cluster-secrets): neither priced by a cost line nor listed as free or unpriced",
      "cost line kms-keys (stack: KMS key (EKS secrets encryption): 1) is carried by no resource of the inventory",
    ]);
    // And a line the estimate drops: the store's.
    const noStore = { ...s.cost, items: s.cost.items.filter((i) => !i.id.startsWith("store-")) };
    expect(coverageProblems(s.inventory.resources, noStore, ctxOf(s))).toEqual([
      "aws:elasticache/serverlessCache:ServerlessCache (store-cache) is billed under store-data, which the estimate lacks",
      "aws:elasticache/serverlessCache:ServerlessCache (store-cache) is billed under store-ecpu, which the estimate lacks",
    ]);
  });
});

describe("cost by tag equals cost.json", () => {
  for (const [name] of STACKS)
    it(`${name}: each model's $/month is what a report by triton-ft:model gives`, () => {
      const s = run(name);
      const { byOwner, problems } = tagAllocation(s.inventory.resources, s.cost, ctxOf(s));
      expect(problems).toEqual([]);
      // Lines for what an existing cluster owns (its GPU nodes) are in no report by this stack's tags.
      const outside = (id: string, end: "min" | "max") =>
        s.cost.items.filter((i) => i.scope === id && i.outsideStack).reduce((a, i) => a + i.monthlyUsd[end], 0);
      for (const m of s.cost.models)
        for (const end of ["min", "max"] as const)
          expect(byOwner[m.id]?.[end] ?? 0, `${m.id} ${end}`).toBeCloseTo(m.monthlyUsd[end] - outside(m.id, end), 6);
      const models = s.cost.models.reduce((a, m) => a + m.monthlyUsd.max, 0);
      expect(byOwner.stack?.max ?? 0).toBeCloseTo(s.cost.monthlyUsd.max - models, 6);
    });

  it("seed-models: triton-ft:model only on a model's own resources (its GPU nodes and server repository)", () => {
    const s = run("seed-models");
    const tagged = s.inventory.resources
      .filter((r) => COST_COVERAGE[r.type]?.kind === "priced" && !["stack", "untagged"].includes(tagOwner(r)))
      .map((r) => `${r.type} ${r.name} -> ${tagOwner(r)}`)
      .sort();
    expect(tagged).toEqual([
      "aws:ec2/launchTemplate:LaunchTemplate cluster-gpu -> h2ogpt-6-9b",
      "aws:ec2/launchTemplate:LaunchTemplate cluster-gpu-kogpt-6b -> kogpt-6b",
      "aws:ecr/repository:Repository registry-server -> h2ogpt-6-9b",
      "aws:ecr/repository:Repository registry-server-codegen-2b-mono -> codegen-2b-mono",
      "aws:ecr/repository:Repository registry-server-kogpt-6b -> kogpt-6b",
      "eks:index:ManagedNodeGroup cluster-gpu -> h2ogpt-6-9b",
      "eks:index:ManagedNodeGroup cluster-gpu-kogpt-6b -> kogpt-6b",
      "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass cluster-gpu-ec2nodeclass-codegen-2b-mono -> codegen-2b-mono",
    ]);
    // Nothing else carries the model key, whatever its type.
    const withKey = s.inventory.resources.filter((r) => JSON.stringify(r.inputs).includes(`"${MODEL_TAG_KEY}"`));
    expect(withKey).toHaveLength(tagged.length);
  });

  for (const [name] of STACKS)
    it(`${name}: the gateway's NLB carries the stack's tags, as the load balancer controller reads them`, () => {
      const s = run(name);
      const nlb = s.inventory.resources.find(
        (r) => r.type === "kubernetes:core/v1:Service" && (r.inputs.spec as { type?: string }).type === "LoadBalancer",
      );
      const annotations = (nlb?.inputs.metadata as { annotations?: Record<string, string> } | undefined)?.annotations;
      const tags = controllerTags(annotations?.[LOAD_BALANCER_TAGS_ANNOTATION] ?? "");
      // The tags of a shared AWS resource every stack has: its gateway image repository.
      const shared = s.inventory.resources.find(
        (r) => r.type === "aws:ecr/repository:Repository" && String(r.inputs.name).endsWith("/gateway"),
      );
      expect(shared?.inputs.tags).toBeDefined();
      expect(tags).toEqual(shared?.inputs.tags);
    });

  it("finds the NLB's lines under no owner when its Service lacks the tags annotation", () => {
    const s = run("dev");
    const resources = s.inventory.resources.map((r) => {
      const meta = r.inputs.metadata as { annotations?: Record<string, string> } | undefined;
      if (r.type !== "kubernetes:core/v1:Service" || !meta?.annotations?.[LOAD_BALANCER_TAGS_ANNOTATION]) return r;
      const rest = Object.fromEntries(
        Object.entries(meta.annotations).filter(([k]) => k !== LOAD_BALANCER_TAGS_ANNOTATION),
      );
      return { ...r, inputs: { ...r.inputs, metadata: { ...meta, annotations: rest } } };
    });
    expect(tagAllocation(resources, s.cost, ctxOf(s)).problems).toEqual([
      expect.stringMatching(/^cost line nlb is the estimate's stack but a tag report's untagged/),
      expect.stringMatching(/^cost line nlb-lcu is the estimate's stack but a tag report's untagged/),
      ...(s.cost.items.some((i) => i.id === "nlb-addresses")
        ? [expect.stringMatching(/^cost line nlb-addresses is the estimate's stack but a tag report's untagged/)]
        : []),
    ]);
  });

  it("reads the annotation as the controller does: trimmed pairs cut at the first =", () => {
    expect(controllerTags(" team=ml platform , cost-center=a=b,, x:y/z=+@-.")).toEqual({
      team: "ml platform",
      "cost-center": "a=b",
      "x:y/z": "+@-.",
    });
    expect(controllerTags("novalue")).toBeUndefined();
    expect(controllerTags("=v")).toBeUndefined();
  });

  it("finds a line a tag report would put on another model (a shared resource tagged as the first model's)", () => {
    const s = run("seed-models");
    const resources = s.inventory.resources.map((r) =>
      r.type === "aws:kms/key:Key"
        ? { ...r, inputs: { ...r.inputs, tags: { ...(r.inputs.tags as object), [MODEL_TAG_KEY]: "h2ogpt-6-9b" } } }
        : r,
    );
    expect(tagAllocation(resources, s.cost, ctxOf(s)).problems).toEqual([
      "cost line kms-keys is the estimate's stack but a tag report's h2ogpt-6-9b",
    ]);
  });
});
