/**
 * The real program() under the real Pulumi engine: a promoted, kubeconfig-mode
 * stack (build.promoteFrom) of the committed dev stack, run as an inline
 * Automation API program by the Pulumi CLI and the Kubernetes provider built
 * from the Go module proxy, against the suite's real control plane with kwok
 * GPU nodes. Every assertion reads the engine's own results: its step events
 * and change summaries, the stack outputs, the checkpoint it wrote, and the
 * objects on the API server.
 *
 * The scenarios follow each other on one stack, in order.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import * as pulumi from "@pulumi/pulumi";
import type { Stack } from "@pulumi/pulumi/automation";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { EXTERNAL_KEY } from "../../infra/components/gatewayService";
import { STACK_OUTPUT_CONTRACT } from "../../infra/outputs";
import { program } from "../../infra/program";

import { Kube, until } from "../k8s/kube";
import { nodeDaemonSet, nodesFor } from "../k8s/nodes";
import {
  POLICY_PACK,
  REPLACING_OPS,
  availabilityWatch,
  engineStack,
  loadBalancerStandIn,
  setStackConfig,
  startEngine,
  stateFile,
  stepRecorder,
  type Engine,
  type StepRecord,
} from "./engine";
import { fileControlPlane } from "./fileControlPlane";
import {
  buildOutputs,
  committedConfig,
  heldKey,
  planOf,
  promotedForm,
  type BuiltOutputs,
  type RawConfig,
} from "./stacks";

import { workloadName, gatewayName } from "../../infra/conventions/workload";
const info = fileControlPlane("engine");
const kube = new Kube(info.binDir, info.kubeconfig);
/** The file's control plane's kubeconfig and its admin token, read once it is up (the first beforeAll). */
let KUBECONFIG = "";
let TOKEN = "";

/** The stack under test: promoted from "staging", which stands for the stack that built the images. */
const STACK = "prod";
const BUILDING = "staging";
const building = committedConfig("dev");
const plan = planOf(promotedForm(building, BUILDING), STACK, { kubeconfig: true });
const NS = plan.renderInputs.triton.namespace;
const GATEWAY = gatewayName({ modelName: plan.model.name });
const KEY_1 = heldKey("search-1");
const KEY_2 = heldKey("search-2");

function config(keys: { sha256: string }[], serving: Record<string, unknown> = {}): RawConfig {
  const cfg = promotedForm(building, BUILDING);
  cfg.serving = {
    ...cfg.serving,
    ...serving,
    consumers: { search: { keySha256: keys.map((k) => k.sha256), requestsPerMinute: 600 } },
  };
  return cfg;
}

/** What the building stack exports after building `servingOverrides` (a label stands for the build's run). */
function published(run: string, servingOverrides: Record<string, unknown> = {}): BuiltOutputs {
  const cfg = structuredClone(building);
  cfg.serving = { ...cfg.serving, ...servingOverrides };
  return buildOutputs(cfg, BUILDING, run);
}

let engine: Engine;
let workDir: string;
let staging: Stack;
let stack: Stack;
const logs: string[] = [];

/** Engine output to a log file in the work directory (printed when a scenario fails). */
function logTo(name: string): (out: string) => void {
  const file = path.join(workDir, `${name}.log`);
  logs.push(file);
  return (out) => fs.appendFileSync(file, out);
}

function summary(steps: StepRecord[]): string {
  return steps.map((s) => `${s.op} ${s.name}${s.diffs.length ? ` [${s.diffs.join(", ")}]` : ""}`).join("\n");
}

function notSame(steps: StepRecord[]): StepRecord[] {
  return steps.filter((s) => s.op !== "same" && s.op !== "read");
}

interface Deployment {
  metadata: { name: string };
  spec: { replicas: number };
  status: { availableReplicas?: number; updatedReplicas?: number };
}

async function deployments(): Promise<Deployment[]> {
  return (await kube.json<{ items: Deployment[] }>(["get", "deployments", "-n", NS])).items;
}

/** Kubernetes objects in the checkpoint: `<kind>.<group>/<name>` and namespace, as kubectl names them. */
function k8sObjectsInState(checkpoint: string): { ref: string; namespace?: string }[] {
  const state = JSON.parse(checkpoint) as {
    checkpoint: { latest: { resources: { type: string; outputs?: Record<string, unknown> }[] } };
  };
  return state.checkpoint.latest.resources
    .filter((r) => r.type.startsWith("kubernetes:") && !r.type.startsWith("pulumi:providers"))
    .map((r) => {
      const o = r.outputs as { apiVersion: string; kind: string; metadata: { name: string; namespace?: string } };
      const group = o.apiVersion.includes("/") ? `.${o.apiVersion.split("/")[0]}` : "";
      return { ref: `${o.kind.toLowerCase()}${group}/${o.metadata.name}`, namespace: o.metadata.namespace };
    });
}

beforeAll(async () => {
  KUBECONFIG = fs.readFileSync(info.kubeconfig, "utf8");
  TOKEN = /token: (\S+)/.exec(KUBECONFIG)?.[1] ?? "";
  workDir = fs.mkdtempSync(path.join(info.dir, "engine-"));
  engine = await startEngine(workDir);
  // The GPU and system nodes the stack would run on, shaped from the plan (kwok makes them Ready).
  await kube.apply([
    ...nodesFor({
      name: STACK,
      models: [
        {
          id: plan.model.name,
          several: false,
          servingInstanceType: plan.serving.instanceType,
          kubernetes: plan.kubernetes,
          objects: [],
        },
      ],
      region: "us-east-1",
      availabilityZones: 2,
    }),
    nodeDaemonSet(STACK),
  ]);
  staging = await engineStack(engine, BUILDING, async () => published("build-1"));
  await staging.up({ onOutput: logTo("staging-up-1") });
  stack = await engineStack(engine, STACK, async () => program());
  await setStackConfig(stack, config([KEY_1]), { kubeconfig: KUBECONFIG });
});

let failed = false;
beforeEach((ctx) => {
  ctx.onTestFailed(() => {
    failed = true;
  });
});

/** After a failure, the tail of the engine's own output of each operation, to read beside the assertion. */
afterAll(() => {
  if (!failed) return;
  for (const f of logs)
    if (fs.existsSync(f))
      process.stderr.write(`--- ${path.basename(f)} (tail)\n${fs.readFileSync(f, "utf8").slice(-4000)}\n`);
});

describe("a promoted kubeconfig-mode stack under the real engine", () => {
  it("preview then up: every object created, Deployments available on kwok nodes, outputs as the contract says", async () => {
    const pre = stepRecorder();
    const preview = await stack.preview({ onEvent: pre.onEvent, onOutput: logTo("preview-1") });
    const creates = pre.steps.filter((s) => s.op === "create");
    expect(creates.length, summary(pre.steps)).toBeGreaterThan(10);
    logTo("preview-1-steps")(summary(pre.steps));
    expect(preview.changeSummary.create).toBeGreaterThan(10);
    // Promoted and kubeconfig mode: nothing but Kubernetes objects and their provider, the components,
    // and the stack reference with Pulumi's built-in provider that reads it.
    for (const s of pre.steps)
      expect(s.type, s.name).toMatch(/^(kubernetes:|pulumi:providers:(kubernetes|pulumi)$|pulumi:pulumi:|triton-ft:)/);

    const lb = loadBalancerStandIn(kube, NS);
    const up = await stack.up({ onOutput: logTo("up-1") }).finally(() => lb.stop());
    expect(up.summary.result).toBe("succeeded");
    expect(up.summary.resourceChanges?.create).toBe(preview.changeSummary.create);

    for (const o of k8sObjectsInState(stateFile(engine, STACK)))
      await kube.run(["get", o.ref, ...(o.namespace ? ["-n", o.namespace] : [])]);
    const deps = await deployments();
    expect(deps.map((d) => d.metadata.name).sort()).toEqual([GATEWAY, workloadName(plan.renderInputs.triton)].sort());
    for (const d of deps) expect(d.status.availableReplicas, d.metadata.name).toBe(d.spec.replicas);
    const kwokNodes = new Set((await kube.nodes("type=kwok")).map((n) => n.metadata.name));
    for (const p of await kube.pods(NS)) expect(kwokNodes.has(p.spec.nodeName ?? ""), p.metadata.name).toBe(true);

    const outputs = await stack.outputs();
    for (const [name, spec] of Object.entries(STACK_OUTPUT_CONTRACT)) {
      const out = outputs[name];
      expect(out, name).toBeDefined();
      expect(out?.secret ?? false, `${name} secret`).toBe(spec.secret);
      const v = out?.value;
      // An array's type is its elements'; an empty one (a promoted stack builds nothing) fits either list type.
      const elements = Array.isArray(v)
        ? [...new Set(v.map((e) => (typeof e === "object" ? "object" : typeof e)))]
        : [];
      const type = Array.isArray(v)
        ? elements.length === 0 && spec.type.endsWith("[]")
          ? spec.type
          : `${elements.join("|")}[]`
        : typeof v === "object"
          ? "object"
          : typeof v;
      expect(type, name).toBe(spec.type);
    }
    const built = published("build-1");
    expect(outputs.serverImage?.value).toBe(built.serverImage);
    expect(outputs.gatewayImage?.value).toBe(built.gatewayImage);
    expect(outputs.modelPlanFingerprint?.value).toBe(built.modelPlanFingerprint);
    expect(outputs.apiKeys?.value).toEqual({ search: EXTERNAL_KEY });
    expect(outputs.httpEndpoint?.value).toMatch(/^http:\/\/k8s-.+\.elb\.us-east-1\.amazonaws\.com$/);
    expect(lb.patched).toEqual([`${NS}/${GATEWAY}`]);
  });

  it("the checkpoint keeps the kubeconfig as a secret (ciphertext) and no key material in plain text", () => {
    const text = stateFile(engine, STACK);
    const state = JSON.parse(text) as {
      checkpoint: { latest: { resources: { type: string; inputs?: Record<string, unknown> }[] } };
    };
    const provider = state.checkpoint.latest.resources.find((r) => r.type === "pulumi:providers:kubernetes");
    expect(provider?.inputs?.kubeconfig).toMatchObject({
      "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270",
      ciphertext: expect.any(String),
    });
    expect(TOKEN.length).toBeGreaterThan(10);
    expect(text).not.toContain(TOKEN);
    expect(text).not.toContain("certificate-authority");
    expect(text).not.toContain(KEY_1.key);
    expect(text).not.toContain(KEY_1.sha256);
  });

  it("a second preview shows zero changes", async () => {
    const rec = stepRecorder();
    const preview = await stack.preview({ onEvent: rec.onEvent, onOutput: logTo("preview-2") });
    expect(notSame(rec.steps), summary(notSame(rec.steps))).toEqual([]);
    // As the engine itself counts changes (ResourceChanges.HasChanges, which --expect-no-changes uses):
    // a read is none. The stack's reference to itself (infra/secretChanges.ts) reads outputs that
    // the update before changed.
    expect(Object.keys(preview.changeSummary).filter((op) => op !== "same" && op !== "read")).toEqual([]);
  });

  it("a changed secret shows in the real preview with what it does (the stack's reference to itself)", async () => {
    // The same cluster's kubeconfig, written anew: only its fingerprint changes.
    await setStackConfig(stack, config([KEY_1]), { kubeconfig: `${KUBECONFIG}\n# rotated credentials\n` });
    let out = "";
    const log = logTo("preview-secret");
    await stack.preview({
      onOutput: (o) => {
        out += o;
        log(o);
      },
    });
    expect(out).toContain("this change: the secret triton-ft:kubeconfig changed: the Kubernetes provider takes it");
    expect(out).not.toContain("triton-ft:hfToken");
    await setStackConfig(stack, config([KEY_1]), { kubeconfig: KUBECONFIG });
    let again = "";
    await stack.preview({ onOutput: (o) => (again += o) });
    expect(again).not.toContain("this change: the secret");
  });

  it("a serving change the building stack did not build is refused at preview, naming the key", async () => {
    await setStackConfig(stack, config([KEY_1], { maxOutputLen: 512 }), { kubeconfig: KUBECONFIG });
    await expect(stack.preview({ onOutput: logTo("preview-refused") })).rejects.toThrow(
      // maxOutputLen reaches the rendered config.pbtxt files the bake ships: their hashes differ, and the key is named.
      /cannot promote from organization\/triton-ft\/staging:[\s\S]*gpt2's image was built for another model plan than this stack's: bake\.files\.\/opt\/triton-ft\/plan\/model-repository\/\w+\/config\.pbtxt built "[0-9a-f]{64}", planned here "[0-9a-f]{64}" \([^)]*maxOutputLen/,
    );
  });

  it("a serving change (maxOutputLen) built and promoted updates in place: no Deployment, Service or Secret replaced", async () => {
    staging = await engineStack(engine, BUILDING, async () => published("build-2", { maxOutputLen: 512 }));
    await staging.up({ onOutput: logTo("staging-up-2") });
    const rec = stepRecorder();
    await stack.preview({ onEvent: rec.onEvent, onOutput: logTo("preview-3") });
    const changed = notSame(rec.steps);
    expect(
      changed.filter((s) => REPLACING_OPS.includes(s.op)),
      summary(changed),
    ).toEqual([]);
    expect(changed.filter((s) => s.op === "update").map((s) => s.name)).toEqual(
      expect.arrayContaining([
        `kubernetes:apps/v1:Deployment::triton-deployment`,
        `kubernetes:apps/v1:Deployment::gateway-deployment`,
      ]),
    );
    const up = await stack.up({ onOutput: logTo("up-3") });
    expect(up.summary.result).toBe("succeeded");
    expect(up.summary.resourceChanges?.replace ?? 0).toBe(0);
    expect((await stack.outputs()).serverImage?.value).toBe(published("build-2", { maxOutputLen: 512 }).serverImage);
    for (const d of await deployments()) expect(d.status.availableReplicas, d.metadata.name).toBe(d.spec.replicas);
  });

  it("a key rotation (a second key, then the old one removed) replaces nothing and the gateway stays available", async () => {
    const serving = { maxOutputLen: 512 };
    for (const [label, keys] of [
      ["add", [KEY_1, KEY_2]],
      ["remove", [KEY_2]],
    ] as const) {
      await setStackConfig(stack, config([...keys], serving), { kubeconfig: KUBECONFIG });
      const rec = stepRecorder();
      const watch = availabilityWatch(kube, NS, GATEWAY);
      const up = await stack.up({ onEvent: rec.onEvent, onOutput: logTo(`up-rotate-${label}`) });
      const seen = await watch.stop();
      const changed = notSame(rec.steps);
      expect(up.summary.result, label).toBe("succeeded");
      expect(
        changed.filter((s) => REPLACING_OPS.includes(s.op)),
        `${label}:\n${summary(changed)}`,
      ).toEqual([]);
      expect(
        changed.map((s) => s.name),
        label,
      ).toContain("kubernetes:core/v1:Secret::gateway-keys");
      expect(seen.samples, label).toBeGreaterThan(0);
      expect(seen.min, `${label}: lowest available gateway replicas during the update`).toBeGreaterThanOrEqual(1);
    }
    const secret = await kube.json<{ data: Record<string, string> }>(["get", "secret", `${GATEWAY}-keys`, "-n", NS]);
    const keysJson = Buffer.from(secret.data["keys.json"] ?? "", "base64").toString("utf8");
    expect(keysJson).toContain(KEY_2.sha256);
    expect(keysJson).not.toContain(KEY_1.sha256);
    expect((await stack.outputs()).apiKeys?.value).toEqual({ search: EXTERNAL_KEY });
  });

  it("drift: a change made with kubectl is found by refresh, and up restores it", async () => {
    const before = (await deployments()).find((d) => d.metadata.name === GATEWAY);
    expect(before?.spec.replicas).toBeGreaterThan(1);
    await kube.run(["scale", "deployment", GATEWAY, "-n", NS, "--replicas=1"]);
    const rec = stepRecorder();
    const refresh = await stack.refresh({ onEvent: rec.onEvent, onOutput: logTo("refresh") });
    expect(refresh.summary.resourceChanges?.update ?? 0, summary(notSame(rec.steps))).toBeGreaterThanOrEqual(1);
    const pre = stepRecorder();
    await stack.preview({ onEvent: pre.onEvent, onOutput: logTo("preview-drift") });
    expect(notSame(pre.steps).map((s) => `${s.op} ${s.name}`)).toEqual([
      "update kubernetes:apps/v1:Deployment::gateway-deployment",
    ]);
    await stack.up({ onOutput: logTo("up-drift") });
    await until("the gateway back at its replicas", 60, async () => {
      const d = (await deployments()).find((x) => x.metadata.name === GATEWAY);
      return d?.spec.replicas === before?.spec.replicas && d?.status.availableReplicas === before?.spec.replicas
        ? d
        : undefined;
    });
    const again = stepRecorder();
    await stack.preview({ onEvent: again.onEvent, onOutput: logTo("preview-after-drift") });
    expect(notSame(again.steps), summary(notSame(again.steps))).toEqual([]);
  });

  it("the policy pack runs in the real analyzer: a violating resource fails preview with the rule's message", async () => {
    // No config validation accepts violates the pack (validation refuses first); a resource
    // transform stands for a program regression: the gateway's load balancer made internet-facing.
    const violating = await engineStack(engine, STACK, async () => {
      pulumi.runtime.registerResourceTransform((args) => {
        const spec = args.props.spec as { type?: string } | undefined;
        if (args.type !== "kubernetes:core/v1:Service" || spec?.type !== "LoadBalancer") return undefined;
        const metadata = args.props.metadata as { annotations?: Record<string, string> };
        const annotations = {
          ...metadata.annotations,
          "service.beta.kubernetes.io/aws-load-balancer-scheme": "internet-facing",
        };
        return { props: { ...args.props, metadata: { ...metadata, annotations } }, opts: args.opts };
      });
      return program();
    });
    await expect(
      violating.preview({ policyPacks: [POLICY_PACK], onOutput: logTo("preview-policy-violation") }),
    ).rejects.toThrow(/k8s-load-balancer-internal[\s\S]*is reachable from outside the VPC/);
  });

  it.each(["dev", "prod"])("the policy pack passes the committed stack %s in its promoted form", async (name) => {
    const committed = committedConfig(name);
    const buildStack = `${name}-build`;
    const publisher = await engineStack(engine, buildStack, async () => buildOutputs(committed, buildStack, "build-1"));
    await publisher.up({ onOutput: logTo(`${buildStack}-up`) });
    const promoted = await engineStack(engine, `${name}-promoted`, async () => program());
    await setStackConfig(promoted, promotedForm(committed, buildStack), { kubeconfig: KUBECONFIG });
    const out: string[] = [];
    const preview = await promoted.preview({
      policyPacks: [POLICY_PACK],
      onOutput: (s) => {
        out.push(s);
        logTo(`${name}-promoted-policy`)(s);
      },
    });
    expect(preview.changeSummary.create).toBeGreaterThan(10);
    expect(out.join("")).toMatch(/triton-ft-security/);
    await promoted.workspace.removeStack(`${name}-promoted`);
    await publisher.destroy();
    await publisher.workspace.removeStack(buildStack);
  });

  it("a stack deployed before the provider updated ConfigMaps and Secrets in place takes the change without a replacement", async () => {
    // The provider as earlier versions of the program configured it: no mutable flags.
    const earlier = await engineStack(engine, STACK, async () => {
      pulumi.runtime.registerResourceTransform((args) => {
        if (args.type !== "pulumi:providers:kubernetes") return undefined;
        const props = { ...args.props };
        delete props.enableConfigMapMutable;
        delete props.enableSecretMutable;
        return { props, opts: args.opts };
      });
      return program();
    });
    const before = stepRecorder();
    await earlier.up({ onEvent: before.onEvent, onOutput: logTo("up-earlier-provider") });
    expect(notSame(before.steps).map((s) => `${s.op} ${s.name}`)).toEqual([
      "update pulumi:providers:kubernetes::cluster-k8s",
    ]);
    const rec = stepRecorder();
    await stack.preview({ onEvent: rec.onEvent, onOutput: logTo("preview-provider-flags") });
    expect(notSame(rec.steps).map((s) => `${s.op} ${s.name}`)).toEqual([
      "update pulumi:providers:kubernetes::cluster-k8s",
    ]);
    const up = await stack.up({ onOutput: logTo("up-provider-flags") });
    expect(up.summary.resourceChanges?.replace ?? 0).toBe(0);
  });

  it("destroy leaves nothing of the stack on the API server", async () => {
    const objects = k8sObjectsInState(stateFile(engine, STACK));
    const destroy = await stack.destroy({ onOutput: logTo("destroy") });
    expect(destroy.summary.result).toBe("succeeded");
    for (const o of objects) {
      const left = await kube
        .run(["get", o.ref, "--ignore-not-found", ...(o.namespace ? ["-n", o.namespace] : [])])
        .catch((e: unknown) => String(e));
      expect(left.trim(), o.ref).toBe("");
    }
    const labelled = await kube.run([
      "get",
      "all,configmaps,secrets,poddisruptionbudgets,networkpolicies",
      "-A",
      "-l",
      "app.kubernetes.io/part-of=triton-ft",
      "-o",
      "name",
    ]);
    expect(labelled.trim()).toBe("");
    await stack.workspace.removeStack(STACK);
    await staging.destroy({ onOutput: logTo("staging-destroy") });
  });
});
