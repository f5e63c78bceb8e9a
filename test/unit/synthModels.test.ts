/**
 * synth of a stack of several models (test/stacks/models/Pulumi.seed-models.yaml):
 * each model's artifacts under models/<id>/, what the models share at the
 * top, plan.json with every model's plan and the builders, one summary block
 * per model; and the Kubernetes objects synth writes are exactly the ones the
 * program registers (the same stack under the mock runtime), so what is
 * reviewed and applied offline (the k8s suite) is what `pulumi up` creates.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";
import { MONITORING_NAMESPACE } from "../../infra/config";
import { main } from "../../scripts/synth";
import { runProgram } from "../lib/pulumi";
import { SEED_CANARY_STACK, SEED_MODELS_STACK, stackFileConfig } from "../lib/modelsForm";

const REPO_ROOT = path.resolve(__dirname, "../..");
const STACK_DIR = path.join(REPO_ROOT, path.dirname(SEED_MODELS_STACK));
const IDS = ["h2ogpt-6-9b", "kogpt-6b", "codegen-2b-mono"];

interface K8sObject {
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
}

/** Every object of every YAML file under dir, with the file it came from. */
function objectsUnder(dir: string): Array<K8sObject & { file: string }> {
  if (!fs.existsSync(dir)) return [];
  return fs
    .readdirSync(dir, { recursive: true, encoding: "utf8" })
    .filter((f) => f.endsWith(".yaml"))
    .sort()
    .flatMap((f) =>
      parseAllDocuments(fs.readFileSync(path.join(dir, f), "utf8"))
        .map((d) => d.toJS() as K8sObject | null)
        .filter((o): o is K8sObject => o !== null && typeof o.kind === "string")
        .map((o) => ({ ...o, file: path.join(dir, f) })),
    );
}

const key = (o: { kind: string; metadata: { name: string; namespace?: string } }) =>
  `${o.kind} ${o.metadata.namespace ?? ""}/${o.metadata.name}`;

let tmp: string;
let out: string;
let stdout: string[];
let plan: {
  stack: string;
  models: Record<
    string,
    { first: boolean; builder: string; buildSteps: Array<{ id: string }>; model: { name: string } }
  >;
  builders: Array<{ name: string; models: string[]; smList: number[] }>;
  gateway?: { config: { models: Array<{ id: string }> } };
};

beforeAll(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), "synth-models-"));
  out = path.join(tmp, "out");
  stdout = [];
  const code = main(["--stack", "seed-models", "--out", out], {
    cwd: STACK_DIR,
    repoRoot: REPO_ROOT,
    stdout: (l) => stdout.push(l),
    stderr: () => undefined,
  });
  expect(code).toBe(0);
  plan = JSON.parse(fs.readFileSync(path.join(out, "plan.json"), "utf8")) as typeof plan;
});
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

describe("synth of a stack of several models", () => {
  it("writes each model under models/<id>/ and what the models share at the top", () => {
    expect(fs.readdirSync(out).sort()).toEqual(["cost.json", "dashboards", "images", "k8s", "models", "plan.json"]);
    expect(fs.readdirSync(path.join(out, "models")).sort()).toEqual([...IDS].sort());
    for (const id of IDS) {
      const dir = path.join(out, "models", id);
      expect(fs.readdirSync(dir).sort(), id).toEqual(["k8s", "model-repository", "steps"]);
      for (const m of ["ensemble", "preprocessing", "fastertransformer", "postprocessing"])
        expect(fs.existsSync(path.join(dir, "model-repository", m, "config.pbtxt")), `${id} ${m}`).toBe(true);
      // The steps this model's pipeline runs, as plan.json lists them.
      expect(fs.readdirSync(path.join(dir, "steps")).sort()).toEqual(
        plan.models[id]?.buildSteps.map((s) => `${s.id}.conf`).sort(),
      );
    }
    // The one server Dockerfile every model's bake builds from.
    expect(fs.existsSync(path.join(out, "images", "server", "Dockerfile"))).toBe(true);
  });

  it("keeps a further model's steps under its id on a shared builder, the first model's on the one-model paths", () => {
    const first = fs.readFileSync(path.join(out, "models", IDS[0] ?? "", "steps", "fetch.conf"), "utf8");
    const second = fs.readFileSync(path.join(out, "models", IDS[1] ?? "", "steps", "fetch.conf"), "utf8");
    expect(first).not.toContain("STEP_SCOPE");
    expect(second).toMatch(/^STEP_SCOPE='kogpt-6b'$/m);
  });

  it("puts each model's Triton workload in its folder and the namespace, gateway and observability at the top", () => {
    const top = objectsUnder(path.join(out, "k8s"));
    expect(top.filter((o) => o.kind === "Namespace").map((o) => o.metadata.name)).toEqual(["triton"]);
    // The one Deployment at the top is the gateway's; every Triton Deployment is a model's.
    expect(top.filter((o) => o.kind === "Deployment").map((o) => o.metadata.name)).toEqual([
      `triton-${IDS[0]}-gateway`,
    ]);
    expect(top.map((o) => o.kind)).toEqual(expect.arrayContaining(["DaemonSet", "PrometheusRule", "NetworkPolicy"]));
    for (const id of IDS) {
      const own = objectsUnder(path.join(out, "models", id, "k8s"));
      expect(
        own.filter((o) => o.kind === "Deployment").map((o) => o.metadata.name),
        id,
      ).toEqual([`triton-${id}`]);
      expect(
        own.some((o) => o.kind === "Namespace"),
        id,
      ).toBe(false);
      // Every object of the folder is this model's: named after its workload.
      for (const o of own) expect(o.metadata.name.startsWith(`triton-${id}`), key(o)).toBe(true);
    }
    // The autoscaled model brings its own ScaledObject and NodePool; the fixed ones a node group (not a manifest).
    const kinds = (id: string) => objectsUnder(path.join(out, "models", id, "k8s")).map((o) => o.kind);
    expect(kinds("codegen-2b-mono")).toEqual(expect.arrayContaining(["ScaledObject", "NodePool", "EC2NodeClass"]));
    expect(kinds("h2ogpt-6-9b")).not.toContain("ScaledObject");
  });

  it("writes one cost estimate for the stack, every model in it, and none per model", () => {
    const cost = JSON.parse(fs.readFileSync(path.join(out, "cost.json"), "utf8")) as { models: Array<{ id: string }> };
    expect(cost.models.map((m) => m.id)).toEqual(IDS);
    for (const id of IDS) expect(fs.existsSync(path.join(out, "models", id, "cost.json")), id).toBe(false);
  });

  it("writes plan.json with every model's plan, the builders with their triton_with_ft's SMs, and the gateway", () => {
    expect(plan.stack).toBe("seed-models");
    expect(Object.keys(plan.models)).toEqual(IDS);
    expect(Object.values(plan.models).map((m) => m.first)).toEqual([true, false, false]);
    for (const [id, m] of Object.entries(plan.models)) {
      expect(m.model.name).toBe(id);
      expect(plan.builders.find((b) => b.name === m.builder)?.models, id).toContain(id);
    }
    expect(plan.builders.map((b) => b.name)).toEqual(["builder", "builder-l4"]);
    expect(plan.builders.map((b) => b.smList)).toEqual([[86], [89]]);
    expect(plan.gateway?.config.models.map((r) => r.id)).toEqual(IDS);
  });

  it("prints one block per model, then the builders and what the models share", () => {
    const heads = stdout.filter((l) => l.startsWith("model "));
    expect(heads.map((l) => l.split(" ")[1])).toEqual(IDS);
    for (const id of IDS) {
      const at = stdout.findIndex((l) => l.startsWith(`model ${id}`));
      const block = stdout.slice(at + 1).filter((_, n, rest) => rest.slice(0, n + 1).every((l) => l.startsWith("  ")));
      expect(block[0], id).toMatch(new RegExp(`^ {2}model: ${id} \\(`));
      expect(
        block.some((l) => l.startsWith("  kubernetes: ")),
        id,
      ).toBe(true);
      expect(
        block.some((l) => l.startsWith("  build steps: ")),
        id,
      ).toBe(true);
    }
    expect(stdout.filter((l) => l.startsWith("builder "))).toHaveLength(2);
    expect(stdout.some((l) => l.startsWith("kubernetes (shared): "))).toBe(true);
    expect(stdout.at(-1)).toBe(`wrote ${out}`);
  });
});

/**
 * The Kubernetes objects the program registers for a stack file, as sorted keys (add-ons installed by
 * Helm aside). The stack's own Prometheus gets its namespace from the cluster's add-ons, not from a manifest.
 */
async function registeredObjects(stackFile: string, stack: string): Promise<string[]> {
  const run = await runProgram(stackFileConfig(stackFile), { stack });
  return run.resources
    .filter((r) => r.type.startsWith("kubernetes:") && r.type !== "kubernetes:helm.sh/v3:Release")
    .map((r) => {
      const kind = r.type.split(":").at(-1) ?? "";
      const md = (r.inputs.metadata ?? {}) as { name?: string; namespace?: string };
      return key({ kind, metadata: { name: md.name ?? r.name, namespace: md.namespace } });
    })
    .filter((k) => k !== `Namespace /${MONITORING_NAMESPACE}`)
    .sort();
}

describe("synth and the program agree on the Kubernetes objects", () => {
  it("writes exactly the objects the program registers for the stack (add-ons installed by Helm aside)", async () => {
    const registered = await registeredObjects(SEED_MODELS_STACK, "seed-models");
    const written = [
      ...objectsUnder(path.join(out, "k8s")),
      ...IDS.flatMap((id) => objectsUnder(path.join(out, "models", id, "k8s"))),
    ]
      .map(key)
      .sort();
    expect(written).toEqual(registered);
  });
});

describe("synth of a stack with a live canary (test/stacks/models/Pulumi.seed-canary.yaml)", () => {
  const CANARY = "kogpt-6b-canary";
  let canaryOut: string;
  let canaryLines: string[];
  beforeAll(() => {
    canaryOut = path.join(tmp, "out-canary");
    canaryLines = [];
    const code = main(["--stack", "seed-canary", "--out", canaryOut], {
      cwd: STACK_DIR,
      repoRoot: REPO_ROOT,
      stdout: (l) => canaryLines.push(l),
      stderr: () => undefined,
    });
    expect(code).toBe(0);
  });

  it("writes the canary under models/<id>-canary/ (its Triton workload, its own steps only) and its plan under canaries", () => {
    const doc = JSON.parse(fs.readFileSync(path.join(canaryOut, "plan.json"), "utf8")) as {
      models: Record<string, unknown>;
      canaries: Record<string, { of: string; shared: string[]; buildSteps: Array<{ id: string }>; weight: number }>;
    };
    expect(Object.keys(doc.models)).toEqual(IDS);
    expect(Object.keys(doc.canaries)).toEqual([CANARY]);
    expect(doc.canaries[CANARY]).toMatchObject({ of: "kogpt-6b", shared: ["fetch", "convert"], weight: 10 });
    expect(doc.canaries[CANARY]?.buildSteps.map((s) => s.id)).toEqual(["gemm", "bake"]);
    expect(fs.readdirSync(path.join(canaryOut, "models", CANARY, "steps")).sort()).toEqual(["bake.conf", "gemm.conf"]);
    expect(
      objectsUnder(path.join(canaryOut, "models", CANARY, "k8s"))
        .map((o) => o.kind)
        .sort(),
    ).toEqual(["Deployment", "PodDisruptionBudget", "Service", "Service", "ServiceMonitor"]);
    expect(canaryLines.find((l) => l.startsWith(`canary ${CANARY} of kogpt-6b`))).toContain(`models/${CANARY}/`);
  });

  it("writes exactly the objects the program registers for the stack, the canary's included", async () => {
    const registered = await registeredObjects(SEED_CANARY_STACK, "seed-canary");
    const written = [
      ...objectsUnder(path.join(canaryOut, "k8s")),
      ...[...IDS, CANARY].flatMap((id) => objectsUnder(path.join(canaryOut, "models", id, "k8s"))),
    ]
      .map(key)
      .sort();
    expect(written).toEqual(registered);
  });
});
