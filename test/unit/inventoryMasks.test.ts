/**
 * Masked values in the offline inventory: fingerprints that change with the
 * value, a reference run that gives unknowns one, stack outputs holding
 * Outputs, what a change does, and diffs against format-1 inventories.
 * The program here is a small one of its own under the same mock runtime.
 */
import type * as Pulumi from "@pulumi/pulumi";
import { describe, expect, it, vi } from "vitest";
import { buildInventory } from "../../infra/mock/inventory";
import type { MockCloud } from "../../infra/mock/runtime";
import { parseMask, type Inventory, type InventoryResource } from "../../infra/synth/inventory";
import { diffInventories, formatDiff } from "../../infra/synth/inventoryDiff";
import { diffEffects } from "../../infra/synth/effects";

const ROOT = `${__dirname}/../..`;

/** A stand-in cloud: every resource gets an endpoint derived from its name. */
const REFERENCE: MockCloud = {
  newResource: ({ name, inputs }) => ({ id: `${name}-id`, state: { ...inputs, endpoint: `${name}.example.internal` } }),
  call: ({ inputs }) => inputs,
};

/**
 * Runs a program with a store (endpoint computed by the cloud) and a config
 * computed from its endpoint and the config value `routes`, a secret, and a
 * token computed from both.
 */
async function inventory(routes: string, options: { reference?: boolean } = {}): Promise<Inventory> {
  vi.resetModules();
  const pulumi = await import("@pulumi/pulumi");
  class Thing extends pulumi.CustomResource {
    declare readonly endpoint: Pulumi.Output<string>;
    constructor(name: string, args: Record<string, unknown>, opts?: Pulumi.CustomResourceOptions) {
      super("test:index:Thing", name, { ...args, endpoint: undefined }, opts);
    }
  }
  const program = () => {
    const cfg = new pulumi.Config("t");
    const store = new Thing("store", { size: 1 });
    const key = cfg.requireSecret("key");
    const config = new Thing("config", {
      data: store.endpoint.apply((endpoint) => ({ routes: cfg.require("routes"), endpoint })),
      password: key,
      // Secret and not known before deploy: a secret all the same.
      token: pulumi.all([store.endpoint, key]).apply(([endpoint, k]) => `${endpoint}/${k}`),
    });
    return {
      builders: { b: { host: store.endpoint, models: ["m1"], name: pulumi.output("b1") } },
      configId: config.id,
    };
  };
  return buildInventory({
    pulumi,
    program,
    project: "t",
    stack: "s",
    config: { "t:routes": routes, "t:key": "stand-in" },
    secretKeys: ["t:key"],
    repoRoot: ROOT,
    invokeShapes: {},
    ...(options.reference === false ? {} : { reference: REFERENCE }),
  });
}

const config = (inv: Inventory) => inv.resources.find((r) => r.name === "config") as InventoryResource;

describe("masked values", () => {
  it("writes an Output inside a stack output as its value, not as the Output's internals", async () => {
    const inv = await inventory("a");
    const builders = inv.outputs.builders as Record<string, Record<string, unknown>>;
    expect(JSON.stringify(builders)).not.toContain("__pulumiOutput");
    expect(builders.b?.name).toBe("b1");
    expect(builders.b?.models).toEqual(["m1"]);
    expect(parseMask(builders.b?.host)?.kind).toBe("unknown");
  });

  it("fingerprints an unknown by its value in the reference run: same inputs, same print; other inputs, another", async () => {
    const a = await inventory("a");
    const again = await inventory("a");
    const b = await inventory("b");
    const data = (inv: Inventory) => config(inv).inputs.data as Record<string, string>;
    // The shape comes from the reference run; every leaf is masked with its own fingerprint.
    expect(Object.keys(data(a)).sort()).toEqual(["endpoint", "routes"]);
    expect(data(a)).toEqual(data(again));
    expect(data(a).routes).not.toBe(data(b).routes);
    expect(data(a).endpoint).toBe(data(b).endpoint);
    for (const v of Object.values(data(a))) expect(parseMask(v)).toMatchObject({ kind: "unknown" });
    // Without a reference run an unknown is just that.
    expect(config(await inventory("a", { reference: false })).inputs.data).toBe("[unknown]");
  });

  it("fingerprints a secret by its value, never writing it", async () => {
    const inv = await inventory("a");
    const password = parseMask(config(inv).inputs.password);
    expect(password).toMatchObject({ kind: "secret", fingerprint: expect.stringMatching(/^[0-9a-f]{12}$/) });
    expect(JSON.stringify(inv)).not.toContain("stand-in");
    expect(parseMask(config(inv).inputs.token)?.kind).toBe("secret");
  });

  it("--diff shows the change behind [unknown], not its value", async () => {
    const lines = formatDiff(diffInventories(await inventory("a"), await inventory("b")));
    expect(lines[0]).toMatch(/^stack s: 0 to add, 1 to change, 0 to remove/);
    expect(lines).toContain("    ~ data.routes: [unknown] changed (computed at deploy time from values that changed)");
  });

  it("reads a format-1 inventory (no fingerprints) without reporting every masked value as changed", async () => {
    const neu = await inventory("a");
    // Format 1 wrote one bare mask where format 2 keeps the shape.
    const old: Inventory = {
      ...neu,
      format: 1,
      resources: neu.resources.map((r) =>
        r.name === "config"
          ? { ...r, inputs: { ...r.inputs, data: "[unknown]", password: "[secret]", token: "[secret]" } }
          : r,
      ),
      outputs: { ...neu.outputs, builders: { b: { host: "[unknown]", models: ["m1"], name: "b1" } } },
    };
    const diff = diffInventories(old, neu);
    expect(diff.changes).toEqual([]);
    expect(diff.outputs).toEqual([]);
  });
});

describe("what a change does", () => {
  const change = (type: string, name: string, parent: string | null, path: string, masked = false) => {
    const value = (v: string) => (masked ? `[unknown:${v.repeat(12)}]` : v);
    const resource: InventoryResource = { type, name, parent, kind: "custom", inputs: {} };
    return { op: "change" as const, resource, fields: [{ path, before: value("a"), after: value("b") }] };
  };
  const says = (c: ReturnType<typeof change>) =>
    diffEffects({ stack: "s", changes: [c], outputs: [], unchanged: 0 }).map((e) => e.says);

  it("a pod template change rolls the workload, named by its component", () => {
    expect(
      says(
        change(
          "kubernetes:apps/v1:Deployment",
          "gateway-deployment",
          "triton-ft:gatewayService:GatewayService::gateway",
          'spec.template.metadata.annotations["triton-ft.io/config-checksum"]',
          true,
        ),
      ),
    ).toEqual(["rolls the gateway: new pods replace the old ones one by one (seen only through [unknown] values)"]);
    expect(
      says(
        change(
          "kubernetes:apps/v1:Deployment",
          "triton-kogpt-6b-deployment",
          "triton-ft:tritonService:TritonService::triton-kogpt-6b",
          "spec.template.spec.containers[0].image",
        ),
      ),
    ).toEqual(["rolls Triton triton-kogpt-6b: new pods replace the old ones one by one"]);
  });

  it("says nothing it cannot be sure of: a label on a Deployment, a NetworkPolicy", () => {
    expect(says(change("kubernetes:apps/v1:Deployment", "d", null, "metadata.labels.team"))).toEqual([]);
    expect(says(change("kubernetes:networking.k8s.io/v1:NetworkPolicy", "n", null, "spec.egress[0]"))).toEqual([]);
  });

  it("a ConfigMap changes in place; a command whose script changes runs again; a node group's template replaces nodes", () => {
    expect(says(change("kubernetes:core/v1:ConfigMap", "gateway-config", null, 'data["config.json"]'))).toEqual([
      "updates ConfigMap gateway-config in place",
    ]);
    expect(says(change("command:remote:Command", "build-fetch", null, "create"))).toEqual([
      "runs build-fetch again on its host",
    ]);
    expect(says(change("eks:index:ManagedNodeGroup", "cluster-gpu", null, "launchTemplate.version"))).toEqual([
      "replaces the nodes of node group cluster-gpu one by one (their pods move)",
    ]);
  });
});
