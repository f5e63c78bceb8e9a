/**
 * Pins the Pulumi resource names (URNs) of the committed stacks and of the
 * other cluster/network modes. A URN change makes `pulumi up` replace the live
 * resource (a new EKS cluster, a new builder that redoes every build step), so
 * a refactor that renames or re-parents a resource must fail here; where a
 * rename is wanted, give the resource `aliases` and update the snapshot in the
 * same commit (UPDATE_URN_SNAPSHOTS=1 npx vitest run test/unit/urns.test.ts).
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseStackFile } from "../../infra/synth/stackFile";
import { runProgram, unwrapSecrets, type RunOptions } from "../lib/pulumi";
import { SEED_CANARY_STACK, SEED_MODELS_STACK, stackFileConfig, toModelsForm } from "../lib/modelsForm";

const ROOT = join(__dirname, "..", "..");
const SNAPSHOTS = join(__dirname, "golden", "urns");
const KUBECONFIG = JSON.stringify({
  apiVersion: "v1",
  clusters: [{ name: "c", cluster: { server: "https://k.example" } }],
  contexts: [{ name: "c", context: { cluster: "shared-gpu" } }],
  "current-context": "c",
});

function stackConfig(stack: string): Record<string, unknown> {
  return parseStackFile(readFileSync(join(ROOT, `Pulumi.${stack}.yaml`), "utf8"), `Pulumi.${stack}.yaml`).raw;
}

interface Case {
  name: string;
  /** The snapshot it must match (default: its own name). */
  snapshot?: string;
  stack: string;
  config: () => Record<string, unknown>;
  secrets?: RunOptions["secrets"];
}

const CASES: Case[] = [
  { name: "dev", stack: "dev", config: () => stackConfig("dev") },
  { name: "prod", stack: "prod", config: () => stackConfig("prod") },
  // Moving a live stack to `triton-ft:models` (its model as the one entry, under its name) renames nothing.
  { name: "dev, models form", snapshot: "dev", stack: "dev", config: () => toModelsForm(stackConfig("dev"), "gpt2") },
  {
    name: "prod, models form",
    snapshot: "prod",
    stack: "prod",
    config: () => toModelsForm(stackConfig("prod"), "gpt-j-6b"),
  },
  {
    // The other modes of the serving and network sides, on the dev model.
    name: "dev-kubeconfig-existing-network",
    stack: "dev",
    config: () => ({
      ...stackConfig("dev"),
      cluster: { mode: "kubeconfig" },
      network: {
        mode: "existing",
        vpcId: "vpc-0123456789abcdef0",
        publicSubnetIds: ["subnet-00000000000000000"],
        privateSubnetIds: ["subnet-00000000000000001", "subnet-00000000000000002"],
      },
    }),
    secrets: { kubeconfig: KUBECONFIG, hfToken: "hf_example" },
  },
  {
    name: "dev-stackreference",
    stack: "dev",
    config: () => ({ ...stackConfig("dev"), cluster: { mode: "stackReference", stackReference: "acme/gpu/prod" } }),
  },
  // The example stack of several models (test/stacks/models): its first model keeps the one-model names.
  { name: "seed-models", stack: "seed-models", config: () => stackFileConfig(SEED_MODELS_STACK) },
  // The example stack with a canary on one model (issue 36): the canary's own names beside them.
  {
    name: "seed-canary",
    stack: "seed-models",
    config: () => stackFileConfig(SEED_CANARY_STACK),
  },
];

describe("resource names (URNs) of the committed stacks", () => {
  for (const c of CASES) {
    it(`${c.name}: every URN is unchanged`, async () => {
      const run = await runProgram(c.config(), { stack: c.stack, secrets: c.secrets });
      const file = join(SNAPSHOTS, `${c.snapshot ?? c.name}.json`);
      if (process.env.UPDATE_URN_SNAPSHOTS === "1" || !existsSync(file)) {
        // A missing snapshot is written once and still fails, so CI never passes on a fresh one.
        writeFileSync(file, JSON.stringify(run.urns, null, 2) + "\n");
        if (process.env.UPDATE_URN_SNAPSHOTS !== "1") throw new Error(`wrote missing URN snapshot ${file}; commit it`);
      }
      const pinned = JSON.parse(readFileSync(file, "utf8")) as string[];
      expect(run.urns.length).toBeGreaterThan(20);
      expect(run.urns).toEqual(pinned);
    });
  }
});

/**
 * Replacement triggers of the live stacks' resources, as main registered them
 * before a change: a new value makes `pulumi up` replace the resource (for the
 * builders' InstanceStates, start or stop a host), so every resource pinned
 * here (null: it has none) must keep its value; a resource not pinned is one
 * the live stack does not have (a creation). The test stacks under test/stacks
 * count as live. A wanted change updates the snapshot in the
 * same commit (UPDATE_TRIGGER_SNAPSHOTS=1), saying why.
 */
const TRIGGER_SNAPSHOTS = join(__dirname, "golden", "replacementTriggers");
const TRIGGER_CASES: Case[] = [
  ...CASES.filter((c) => c.snapshot === undefined),
  {
    name: "seed-mixed",
    stack: "seed-models",
    config: () => stackFileConfig("test/stacks/models/Pulumi.seed-mixed.yaml"),
  },
  ...["gptj-g6-tp4", "gptj-p5", "neox20b-g6e"].map((n) => ({
    name: n,
    stack: n,
    config: () => stackFileConfig(join("test/stacks/gpus", `Pulumi.${n}.yaml`)),
  })),
];

describe("replacement triggers of the live stacks", () => {
  for (const c of TRIGGER_CASES) {
    it(`${c.name}: no resource of the stack as it is live gets a new trigger (nothing is replaced)`, async () => {
      const run = await runProgram(c.config(), { stack: c.stack, secrets: c.secrets });
      // Every resource, null where it has no trigger: a trigger given to a live resource is a change too.
      const triggers: Record<string, unknown> = Object.fromEntries(
        run.resources.map((r) => [`${r.type}::${r.name}`, unwrapSecrets(r.options.replacementTrigger) ?? null]),
      );
      const file = join(TRIGGER_SNAPSHOTS, `${c.name}.json`);
      if (process.env.UPDATE_TRIGGER_SNAPSHOTS === "1" || !existsSync(file)) {
        writeFileSync(file, JSON.stringify(triggers, null, 2) + "\n");
        if (process.env.UPDATE_TRIGGER_SNAPSHOTS !== "1")
          throw new Error(`wrote missing trigger snapshot ${file}; commit it`);
      }
      const pinned = JSON.parse(readFileSync(file, "utf8")) as Record<string, unknown>;
      expect(Object.keys(pinned).length).toBeGreaterThan(20);
      // A resource not pinned is new (a creation, its trigger free); a pinned one missing would be a rename.
      const kept = Object.fromEntries(Object.keys(pinned).map((k) => [k, triggers[k]]));
      expect(kept).toEqual(pinned);
    });
  }
});

describe("moving a live stack to triton-ft:models", () => {
  // Same names and same inputs: the engine would plan no replacement and no update.
  for (const [stack, id] of [
    ["dev", "gpt2"],
    ["prod", "gpt-j-6b"],
  ] as const) {
    it(`${stack}: registers the same resources with the same inputs`, async () => {
      const inputs = (run: Awaited<ReturnType<typeof runProgram>>) =>
        run.resources
          // As the engine would see them: serialised (assets compare by what they hold).
          .map((r) => ({ type: r.type, name: r.name, inputs: JSON.stringify(r.inputs) }))
          .sort((a, b) => `${a.type}/${a.name}`.localeCompare(`${b.type}/${b.name}`));
      const before = await runProgram(stackConfig(stack), { stack });
      const after = await runProgram(toModelsForm(stackConfig(stack), id), { stack });
      expect(inputs(after)).toEqual(inputs(before));
    });
  }
});
