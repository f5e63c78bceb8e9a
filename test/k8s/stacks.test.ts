/**
 * For every committed stack and every test stack: the manifests synth renders,
 * applied server-side (dry-run, then real) to a real control plane whose fake
 * nodes are shaped like the ones the stack provisions. What is expected is
 * derived from the manifests and plan.json, never from a list of objects.
 * A stack of several models (test/stacks/models) gets each model's GPU nodes,
 * labelled as its node group or NodePool labels them; its pods must land on
 * them and on no other model's. The NetworkPolicies are checked as the API
 * server stored them, their selectors evaluated by the API server against the
 * pods that run (this control plane has no CNI to enforce them).
 */
import * as fs from "node:fs";

import * as os from "node:os";
import * as path from "node:path";
import { isDeepStrictEqual } from "node:util";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { parse as parseYaml, stringify as stringifyYaml } from "yaml";
import { SYSTEM_NODE_LABEL } from "../../infra/cloud/eks";
import { SCRAPER_NAMESPACE_LABEL } from "../../infra/render/gatewayManifests";
import { GATEWAY_HELD_METRIC } from "../../infra/render/prometheus";
import { WAKE_TRIGGER } from "../../infra/render/scaling";

import { eksNodeShape, podFitProblems } from "../../infra/resolve/nodeShape";
import { nodeDaemonSetRequests } from "../../infra/resolve/workload";
import { PRE_PULL_COMPONENT } from "../../infra/render/prePull";
import { Kube, podReady, until, type LabelSelector, type Pod } from "./kube";
import {
  STACK_LABEL,
  instanceFacts,
  nodeDaemonSet,
  nodeGroupsFor,
  nodeSelectorOf,
  nodesFor,
  type NodeGroupSpec,
} from "./nodes";
import {
  GPU_RESOURCE,
  discoverStacks,
  gpusOf,
  modelCount,
  podTemplate,
  renderStack,
  type K8sObject,
  type RenderedModel,
  type RenderedStack,
} from "./stacks";

import { PORTS, MODEL_NODE_LABEL_KEY } from "../../infra/conventions/workload";
import { STORE_PORT } from "../../infra/conventions/store";
const MiB = 1024 ** 2;
const info = inject("k8s");
const kube = new Kube(info.binDir, info.kubeconfig);
const work = fs.mkdtempSync(path.join(os.tmpdir(), "triton-ft-k8s-stacks-"));
afterAll(() => fs.rmSync(work, { recursive: true, force: true }));

const stacks = discoverStacks();

it("finds the committed stacks and the test stacks", () => {
  const names = stacks.map((s) => s.name);
  if (!process.env.K8S_STACKS) expect(names).toEqual(expect.arrayContaining(["dev", "prod"]));
  expect(names.length).toBeGreaterThan(0);
});

type Deployment = K8sObject & {
  spec: { replicas?: number; selector: { matchLabels: Record<string, string> }; template: { spec: never } };
};

interface Pdb {
  metadata: { name: string; namespace: string };
  spec: {
    minAvailable?: number | string;
    maxUnavailable?: number | string;
    selector: { matchLabels: Record<string, string> };
  };
  status?: { disruptionsAllowed?: number; currentHealthy?: number; expectedPods?: number; observedGeneration?: number };
}

const matches = (selector: Record<string, string>, labels: Record<string, string> | undefined) =>
  Object.entries(selector).every(([k, v]) => labels?.[k] === v);

for (const ref of stacks) {
  describe(`stack ${ref.name}`, { concurrent: false }, () => {
    let stack: RenderedStack;
    let gpuDeployments: Deployment[];
    let namespaces: string[];
    /** The model whose own objects hold this one (a one-model stack's model holds every object). */
    const modelOf = (o: K8sObject): RenderedModel => {
      const m = stack.models.find((x) => x.objects.includes(o));
      if (!m) throw new Error(`${o.kind}/${o.metadata.name} belongs to no model of ${stack.name}`);
      return m;
    };
    const groupOf = (m: RenderedModel): NodeGroupSpec => {
      const g = nodeGroupsFor(stack).find((x) => x.model === m.id);
      if (!g) throw new Error(`model ${m.id} has no GPU node group`);
      return g;
    };
    const gpuNodesOf = (m: RenderedModel) => kube.nodes(nodeSelectorOf(stack, groupOf(m)));
    /** The model's triton_with_ft pre-pull DaemonSet (render/prePull.ts), as synth rendered it, if any. */
    const isPrePull = (o: K8sObject) =>
      o.kind === "DaemonSet" && o.metadata.labels?.["app.kubernetes.io/component"] === PRE_PULL_COMPONENT;
    const prePullOf = (m: RenderedModel) => m.objects.find(isPrePull);
    const applyFlags = () => stack.manifestDirs.flatMap((d) => ["-f", d]);

    beforeAll(async () => {
      stack = renderStack(ref, work);
      namespaces = [
        ...new Set(
          stack.objects.flatMap((o) =>
            o.kind === "Namespace" ? [o.metadata.name] : o.metadata.namespace ? [o.metadata.namespace] : [],
          ),
        ),
      ];
      gpuDeployments = stack.objects.filter((o): o is Deployment => {
        const t = podTemplate(o);
        return o.kind === "Deployment" && t !== undefined && gpusOf(t.spec) > 0;
      });
      await kube.apply([...nodesFor(stack), nodeDaemonSet(stack.name)]);
      const expected = nodeGroupsFor(stack).reduce((n, g) => n + g.count, 0);
      await until(`${expected} Ready nodes of stack ${stack.name}`, 60, async () => {
        const nodes = await kube.nodes(`${STACK_LABEL}=${stack.name}`);
        const ready = nodes.filter((n) => n.status.conditions?.some((c) => c.type === "Ready" && c.status === "True"));
        return ready.length === expected ? true : undefined;
      });
    });

    afterAll(async () => {
      if (!stack) return;
      await kube
        .run(["delete", "-R", ...applyFlags(), "--ignore-not-found", "--wait=true", "--timeout=120s"])
        .catch((e: unknown) => console.error(String(e)));
      for (const ns of namespaces) {
        await kube.run(["delete", "pods", "--all", "-n", ns, "--ignore-not-found"]).catch(() => undefined);
      }
      await kube.run(["delete", "daemonset", "-n", "kube-system", `node-daemons-${stack.name}`, "--ignore-not-found"]);
      await kube.run(["delete", "nodes", "-l", `${STACK_LABEL}=${stack.name}`, "--ignore-not-found"]);
    });

    it("provisions the node counts the stack asks for, each model's GPU nodes including the rollout spare", async () => {
      for (const m of stack.models) {
        const k = m.kubernetes;
        expect(k.gpuNodes * k.podsPerNode).toBeGreaterThanOrEqual(k.replicas + 1);
        const gpuNodes = await gpuNodesOf(m);
        expect(gpuNodes, m.id).toHaveLength(k.gpuNodes);
        for (const n of gpuNodes) {
          expect(n.spec.taints?.map((t) => `${t.key}:${t.effect}`)).toContain("nvidia.com/gpu:NoSchedule");
          // Several models: each model's nodes carry its label, as its node group or NodePool sets it.
          if (m.several) expect(n.metadata.labels[MODEL_NODE_LABEL_KEY], n.metadata.name).toBe(m.id);
        }
        const shape = eksNodeShape(instanceFacts(m.servingInstanceType));
        const node = await kube.json<{ status: { allocatable: Record<string, string> } }>([
          "get",
          "node",
          gpuNodes[0]?.metadata.name ?? "",
        ]);
        expect(node.status.allocatable["nvidia.com/gpu"]).toBe(String(shape.allocatable.gpus));
      }
    });

    it("accepts every rendered manifest: server-side dry-run first, then applied for real", async () => {
      // k8s/ and, for several models, each model's models/<id>/k8s/.
      const dirs = applyFlags();
      // A dry-run of namespaced objects needs their namespace to exist.
      const nsObjects = stack.objects.filter((o) => o.kind === "Namespace");
      if (nsObjects.length > 0) await kube.apply(nsObjects);
      await kube.run(["apply", "--server-side", "--field-manager=triton-ft", "--dry-run=server", "-R", ...dirs]);
      await kube.run(["apply", "--server-side", "--field-manager=triton-ft", "-R", ...dirs]);
      // Every object (NetworkPolicies, CRD-based objects with their vendored CRDs, ...) is now stored.
      const stored = (await kube.run(["get", "-R", ...dirs, "-o", "name"])).split("\n").filter(Boolean);
      expect(stored).toHaveLength(stack.objects.length);
      // An autoscaled Deployment carries no replicas (the HPA owns them) and the API server defaults
      // it to 1. KEDA does not run here: stand in for the HPA it creates, which raises every target
      // to its ScaledObject's minReplicaCount at once; the later checks expect that count. A model
      // that sleeps (minReplicaCount 0) is taken to one pod, as KEDA wakes it on a held request, so
      // the checks below see it serve.
      for (const so of stack.objects.filter((o) => o.kind === "ScaledObject")) {
        const spec = (so as K8sObject & { spec: { scaleTargetRef: { name: string }; minReplicaCount: number } }).spec;
        const target = stack.objects.find(
          (o): o is Deployment =>
            o.kind === "Deployment" &&
            o.metadata.name === spec.scaleTargetRef.name &&
            o.metadata.namespace === so.metadata.namespace,
        );
        expect(target, `ScaledObject ${so.metadata.name} targets a rendered Deployment`).toBeDefined();
        if (!target) continue;
        expect(target.spec.replicas, `${target.metadata.name} leaves replicas to the HPA`).toBeUndefined();
        const awake = Math.max(1, spec.minReplicaCount);
        await kube.run([
          "scale",
          "-n",
          so.metadata.namespace ?? "default",
          `deployment/${target.metadata.name}`,
          `--replicas=${awake}`,
        ]);
        target.spec.replicas = awake;
      }
    });

    it("sizes the stack's gateway from every model: each route's cap from its own model, its scaler from all", async () => {
      // As the API server stored them: the gateway's config and, when any model autoscales, its ScaledObject.
      const config = stack.objects.find(
        (o) => o.kind === "ConfigMap" && o.metadata.labels?.["app.kubernetes.io/name"] === "triton-ft-gateway",
      );
      if (!config) throw new Error("no gateway ConfigMap rendered");
      const stored = await kube.json<{ data: Record<string, string> }>([
        "get",
        "configmap",
        "-n",
        config.metadata.namespace ?? "default",
        config.metadata.name,
        "-o",
        "json",
      ]);
      const file = JSON.parse(stored.data["config.json"] ?? "{}") as {
        models: Array<{
          id: string;
          maxInflight: number;
          canary?: { triton: { grpc: string }; maxInflight: number; weight: number };
        }>;
        limits: { maxInflight: number };
      };
      // Two batches (one running, one queued) per Triton pod the model can have at its most (plan.json).
      const held = (m: RenderedModel) => 2 * m.maxBatchSize * (m.autoscaling?.maxReplicas ?? m.kubernetes.replicas);
      // A live canary is no route of its own: its model's route carries it, with its own cap and Triton.
      const routed = stack.models.filter((m) => m.canaryOf === undefined);
      const canaries = stack.models.filter((m) => m.canaryOf !== undefined);
      expect(Object.fromEntries(file.models.map((r) => [r.id, r.maxInflight]))).toEqual(
        Object.fromEntries(routed.map((m) => [m.id, held(m)])),
      );
      expect(Object.fromEntries(file.models.flatMap((r) => (r.canary ? [[r.id, r.canary.maxInflight]] : [])))).toEqual(
        Object.fromEntries(canaries.map((c) => [c.canaryOf, held(c)])),
      );
      for (const c of canaries) {
        const tritonService = c.objects.find((o) => o.kind === "Service" && o.metadata.name === `triton-${c.id}`);
        expect(tritonService, `${c.id}'s Triton Service is rendered`).toBeDefined();
        expect(file.models.find((r) => r.id === c.canaryOf)?.canary?.triton.grpc, c.id).toBe(
          `triton-${c.id}.${tritonService?.metadata.namespace ?? "default"}.svc.cluster.local:${PORTS.grpc}`,
        );
      }
      // The gateway's admission counts every Triton it sends to, a canary's too.
      expect(file.limits.maxInflight).toBe(stack.models.reduce((sum, m) => sum + held(m), 0));
      const gatewayDeployment = stack.objects.find(
        (o) =>
          o.kind === "Deployment" &&
          podTemplate(o)?.metadata?.labels?.["app.kubernetes.io/name"] === "triton-ft-gateway",
      );
      const gatewayScaler = stack.objects.find(
        (o) =>
          o.kind === "ScaledObject" &&
          (o.spec as { scaleTargetRef?: { name?: string } } | undefined)?.scaleTargetRef?.name ===
            gatewayDeployment?.metadata.name,
      );
      const anyAutoscaled = routed.some((m) => m.autoscaling !== undefined);
      expect(gatewayScaler !== undefined, "the gateway scales when any model does").toBe(anyAutoscaled);
      if (!gatewayScaler) return;
      const so = await kube.json<{ spec: { maxReplicaCount: number; minReplicaCount: number } }>([
        "get",
        "scaledobject",
        "-n",
        gatewayScaler.metadata.namespace ?? "default",
        gatewayScaler.metadata.name,
        "-o",
        "json",
      ]);
      // Its range reaches what every model's Triton pods hold at their most, at half of the floor's hold per pod.
      // A model that sleeps counts at one pod, its floor whenever it has traffic.
      // Its range is the routed models' (plan/gateway.ts: a canary's share of the traffic is its model's).
      const floor = routed.reduce(
        (sum, m) => sum + 2 * m.maxBatchSize * Math.max(1, m.autoscaling?.minReplicas ?? m.kubernetes.replicas),
        0,
      );
      const peak = routed.reduce((sum, m) => sum + held(m), 0);
      expect(so.spec.maxReplicaCount).toBe(Math.max(so.spec.minReplicaCount, Math.ceil(peak / Math.ceil(floor / 2))));
      if (routed.length > 1) expect(so.spec.maxReplicaCount).toBeGreaterThan(so.spec.minReplicaCount);
    });

    it("lets a model that sleeps go to 0: as stored, its ScaledObject wakes on the gateway's held requests and sleeps after the idle window, its NodePool consolidates when empty, the gateway holds its requests", async (ctx) => {
      const sleepers = stack.models.filter((m) => m.autoscaling?.minReplicas === 0);
      if (sleepers.length === 0) return ctx.skip();
      const config = stack.objects.find(
        (o) => o.kind === "ConfigMap" && o.metadata.labels?.["app.kubernetes.io/name"] === "triton-ft-gateway",
      );
      if (!config) throw new Error("no gateway ConfigMap rendered");
      const storedConfig = await kube.json<{ data: Record<string, string> }>([
        "get",
        "configmap",
        "-n",
        config.metadata.namespace ?? "default",
        config.metadata.name,
      ]);
      const routes = (
        JSON.parse(storedConfig.data["config.json"] ?? "{}") as {
          models: Array<{ id: string; wake?: { queueDepth: number; activationTimeoutSeconds: number } }>;
        }
      ).models;
      // The gateway holds requests for exactly the models that sleep.
      expect(routes.filter((r) => r.wake).map((r) => r.id)).toEqual(sleepers.map((m) => m.id));
      for (const m of sleepers) {
        const rendered = (kind: string) => {
          const o = m.objects.find((x) => x.kind === kind);
          if (!o) throw new Error(`${m.id} has no ${kind} rendered`);
          return o;
        };
        const so = rendered("ScaledObject");
        type Trigger = { type: string; name: string; metricType: string; metadata: Record<string, string> };
        const stored = await kube.json<{
          spec: { minReplicaCount: number; cooldownPeriod?: number; triggers: Trigger[] };
        }>(["get", "scaledobject", "-n", so.metadata.namespace ?? "default", so.metadata.name]);
        expect(stored.spec.minReplicaCount, m.id).toBe(0);
        expect(stored.spec.cooldownPeriod, `${m.id}: the idle window`).toBe(
          (so as K8sObject & { spec: { cooldownPeriod: number } }).spec.cooldownPeriod,
        );
        expect(stored.spec.cooldownPeriod).toBeGreaterThan(0);
        const wake = stored.spec.triggers.find((t) => t.name === WAKE_TRIGGER);
        expect(wake, `${m.id} has the in-use trigger`).toMatchObject({
          type: "prometheus",
          metricType: "AverageValue",
          metadata: { activationThreshold: "0", threshold: "1" },
        });
        expect(wake?.metadata.query).toContain(
          `${GATEWAY_HELD_METRIC}{namespace="${so.metadata.namespace ?? "default"}",model="${m.id}"}`,
        );
        // Beside it, the queue/compute ratio scales from one pod up as for every autoscaled model.
        expect(stored.spec.triggers.map((t) => t.name)).toEqual(["queue-compute-ratio", WAKE_TRIGGER]);
        const np = rendered("NodePool");
        const pool = await kube.json<{
          spec: { disruption: { consolidationPolicy: string; consolidateAfter: string } };
        }>(["get", "nodepool", np.metadata.name]);
        expect(pool.spec.disruption.consolidationPolicy, `${m.id}'s empty GPU nodes go`).toBe("WhenEmpty");
        expect(pool.spec.disruption.consolidateAfter).toMatch(/^\d+s$/);
        const route = routes.find((r) => r.id === m.id);
        expect(route?.wake?.queueDepth).toBeGreaterThan(0);
        expect(route?.wake?.activationTimeoutSeconds).toBeGreaterThan(0);
      }
    });

    it("schedules every pod onto the intended node type: GPU pods on their model's GPU nodes, the rest on system nodes", async () => {
      const workloads = stack.objects.filter((o) => podTemplate(o) !== undefined);
      expect(workloads.length).toBeGreaterThan(0);
      const nodes = new Map((await kube.nodes(`${STACK_LABEL}=${stack.name}`)).map((n) => [n.metadata.name, n]));
      const gpuTypes = new Set(stack.models.map((m) => m.servingInstanceType));
      const gpuNodeNames = new Set(
        (await Promise.all(stack.models.map(gpuNodesOf))).flat().map((n) => n.metadata.name),
      );
      for (const w of workloads) {
        const t = podTemplate(w);
        if (!t) continue;
        const ns = w.metadata.namespace ?? "default";
        const selector =
          (w.spec as { selector?: { matchLabels?: Record<string, string> } }).selector?.matchLabels ??
          t.metadata?.labels ??
          {};
        // Deployments/StatefulSets: their replicas; a DaemonSet: what its controller wants scheduled.
        const want = async (): Promise<number> => {
          if (w.kind !== "DaemonSet") return (w.spec as { replicas?: number }).replicas ?? 1;
          const ds = await kube.json<{ status: { desiredNumberScheduled?: number } }>([
            "get",
            "daemonset",
            "-n",
            ns,
            w.metadata.name,
          ]);
          return ds.status.desiredNumberScheduled ?? 0;
        };
        const pods = await until(`pods of ${w.kind}/${w.metadata.name} running`, 90, async () => {
          const ps = (await kube.pods(ns, selector)).filter((p) => !p.metadata.deletionTimestamp);
          const n = await want();
          return n > 0 && ps.length === n && ps.every((p) => p.status.phase === "Running") ? ps : undefined;
        }).catch(async (err: unknown) => {
          // Say why: the scheduler's verdict on each pod still waiting.
          const waiting = (await kube.pods(ns, selector)).filter((p) => p.status.phase !== "Running");
          const why = await Promise.all(
            waiting.map(
              async (p) => `${p.metadata.name}: ${(await kube.schedulingEvents(p)).join("; ") || "no event"}`,
            ),
          );
          throw new Error(`${String(err)}\n${why.join("\n")}`);
        });
        const wantsGpu = gpusOf(t.spec) > 0;
        const toleratesGpu = ((t.spec.tolerations ?? []) as Array<{ key?: string; operator?: string }>).some(
          (x) => x.key === GPU_RESOURCE || (x.key === undefined && x.operator === "Exists"),
        );
        // The triton_with_ft pre-pull runs on its own model's GPU nodes, all of them and no other.
        if (isPrePull(w)) {
          const own = new Set((await gpuNodesOf(modelOf(w))).map((n) => n.metadata.name));
          expect(new Set(pods.map((p) => p.spec.nodeName)), `${w.metadata.name} on its model's GPU nodes`).toEqual(own);
        }
        // A GPU node DaemonSet (the DCGM exporter) runs on every model's GPU nodes, whatever their instance type.
        else if (w.kind === "DaemonSet" && toleratesGpu)
          expect(new Set(pods.map((p) => p.spec.nodeName)), `${w.metadata.name} on every GPU node`).toEqual(
            gpuNodeNames,
          );
        const group = wantsGpu ? groupOf(modelOf(w)) : undefined;
        for (const p of pods) {
          const node = nodes.get(p.spec.nodeName ?? "");
          expect(node, `${p.metadata.name} runs on a node of this stack`).toBeDefined();
          const labels = node?.metadata.labels ?? {};
          if (group) {
            expect(labels["node.kubernetes.io/instance-type"], p.metadata.name).toBe(group.instanceType);
            // Its model's own nodes: the labels its node group or NodePool gives them.
            for (const [k, v] of Object.entries(group.labels)) expect(labels[k], `${p.metadata.name} ${k}`).toBe(v);
          } else if (!toleratesGpu) {
            expect(node?.spec.taints ?? [], `${p.metadata.name} (no GPU) runs on a system node`).toEqual([]);
            expect(gpuTypes.has(labels["node.kubernetes.io/instance-type"] ?? "")).toBe(false);
            // The gateway requires the stack's system node group by its label (cluster mode create).
            if (t.metadata?.labels?.["app.kubernetes.io/name"] === "triton-ft-gateway") {
              expect(labels[SYSTEM_NODE_LABEL.key], `${p.metadata.name} on the system node group`).toBe(
                SYSTEM_NODE_LABEL.value,
              );
            }
          }
        }
      }
    });

    it("brings every Deployment to Available", async () => {
      const deployments = stack.objects.filter((o) => o.kind === "Deployment");
      for (const d of deployments) {
        await kube.run([
          "wait",
          "--for=condition=Available",
          "--timeout=90s",
          "-n",
          d.metadata.namespace ?? "default",
          `deployment/${d.metadata.name}`,
        ]);
      }
    });

    it("serves a live canary apart from its model: its own fixed node group, its pods only there and its model's never there, Available, admitted by the gateway alone, and its policies the only ones it adds", async (ctx) => {
      const canaries = stack.models.filter((m) => m.canaryOf !== undefined);
      if (canaries.length === 0) return ctx.skip();
      const nodeNames = async (m: RenderedModel) => new Set((await gpuNodesOf(m)).map((n) => n.metadata.name));
      for (const c of canaries) {
        const stable = stack.models.find((m) => m.id === c.canaryOf);
        if (!stable) throw new Error(`canary ${c.id} of no model of ${stack.name}`);
        // A fixed group of its own (a canary never autoscales): no ScaledObject, no NodePool, its plan's node count.
        expect(c.objects.map((o) => o.kind).filter((k) => k === "ScaledObject" || k === "NodePool")).toEqual([]);
        expect(c.autoscaling).toBeUndefined();
        const own = await nodeNames(c);
        const stables = await nodeNames(stable);
        expect(own.size, `${c.id}: its plan's GPU nodes`).toBe(c.kubernetes.gpuNodes);
        for (const n of await gpuNodesOf(c))
          expect(n.metadata.labels[MODEL_NODE_LABEL_KEY], n.metadata.name).toBe(c.id);
        // As scheduled: every canary pod on its own nodes, every pod of its model on the model's, none shared.
        const podsOf = async (m: RenderedModel) => {
          const d = gpuDeployments.find((x) => modelOf(x) === m);
          if (!d) throw new Error(`${m.id} has no GPU Deployment`);
          await kube.run([
            "wait",
            "--for=condition=Available",
            "--timeout=90s",
            "-n",
            d.metadata.namespace ?? "default",
            `deployment/${d.metadata.name}`,
          ]);
          const pods = (await kube.pods(d.metadata.namespace ?? "default", d.spec.selector.matchLabels)).filter(
            (p) => !p.metadata.deletionTimestamp,
          );
          expect(pods.length, `${m.id} runs its pods`).toBe(d.spec.replicas ?? 1);
          return pods.map((p) => p.spec.nodeName ?? "");
        };
        for (const n of await podsOf(c)) expect(own.has(n) && !stables.has(n), `${c.id}'s pod on ${n}`).toBe(true);
        for (const n of await podsOf(stable))
          expect(stables.has(n) && !own.has(n), `${stable.id}'s pod on ${n}`).toBe(true);
      }
      // What the canary adds to the NetworkPolicies, against the same stack rendered without it: one policy
      // (its Triton admits the gateway) and one egress peer of the gateway (its Triton's pods); nothing else.
      const file = fs.readFileSync(path.join(stack.dir, `Pulumi.${stack.name}.yaml`), "utf8");
      const doc = parseYaml(file) as { config: Record<string, Record<string, Record<string, unknown>>> };
      for (const c of canaries) delete doc.config["triton-ft:models"]?.[c.canaryOf ?? ""]?.canary;
      const withoutDir = fs.mkdtempSync(path.join(work, "without-canary-"));
      fs.writeFileSync(path.join(withoutDir, `Pulumi.${stack.name}.yaml`), stringifyYaml(doc));
      const without = renderStack({ name: stack.name, dir: withoutDir }, withoutDir);
      const policies = (objects: K8sObject[]) =>
        new Map(objects.filter((o) => o.kind === "NetworkPolicy").map((o) => [o.metadata.name, o]));
      const before = policies(without.objects);
      const after = policies(stack.objects);
      const added = [...after.keys()].filter((n) => !before.has(n));
      expect(added, "the canary's Triton policy is the one policy it adds").toEqual(
        canaries.map((c) => `triton-${c.id}-triton`),
      );
      expect(
        [...before.keys()].filter((n) => !after.has(n)),
        "no policy is dropped",
      ).toEqual([]);
      const changed = [...before.keys()].filter((n) => !isDeepStrictEqual(before.get(n), after.get(n)));
      const gateway = stack.objects.find(
        (o): o is Deployment =>
          o.kind === "Deployment" &&
          podTemplate(o)?.metadata?.labels?.["app.kubernetes.io/name"] === "triton-ft-gateway",
      );
      const gatewayPolicy =
        [...after.values()].find((o) =>
          isDeepStrictEqual(
            (o.spec as { podSelector?: LabelSelector }).podSelector?.matchLabels,
            gateway?.spec.selector.matchLabels,
          ),
        )?.metadata.name ?? "";
      expect(gatewayPolicy, "a policy selects the gateway's pods").not.toBe("");
      expect(changed, "only the gateway's own policy changes").toEqual([gatewayPolicy]);
      type Egress = { egress: Array<{ to?: PolicyPeer[]; ports?: unknown[] }> };
      const egressOf = (o: K8sObject | undefined) => (o?.spec as Egress | undefined)?.egress ?? [];
      const was = egressOf(before.get(gatewayPolicy));
      const is = egressOf(after.get(gatewayPolicy));
      expect(is.length).toBe(was.length);
      const newPeers = is.flatMap((rule, i) =>
        (rule.to ?? []).filter((peer) => !(was[i]?.to ?? []).some((p) => isDeepStrictEqual(p, peer))),
      );
      expect(
        is.map((r) => r.ports),
        "no port newly allowed",
      ).toEqual(was.map((r) => r.ports));
      const canaryTritonLabels = (c: RenderedModel) => {
        const d = gpuDeployments.find((x) => modelOf(x) === c);
        return d?.spec.selector.matchLabels;
      };
      expect(newPeers, "the gateway newly reaches the canaries' Triton pods and nothing else").toEqual(
        canaries.map((c) => ({ podSelector: { matchLabels: canaryTritonLabels(c) } })),
      );
    });

    it.runIf(modelCount(ref) > 1)(
      "keeps each model's pods off the other models' nodes: with only theirs free, its pod stays Pending",
      async () => {
        const ns = gpuDeployments[0]?.metadata.namespace ?? "default";
        expect(stack.models.length).toBeGreaterThan(1);
        for (const m of stack.models) {
          const d = gpuDeployments.find((x) => modelOf(x) === m);
          const template = d ? podTemplate(d) : undefined;
          if (!template) throw new Error(`model ${m.id} has no GPU Deployment`);
          const own = await gpuNodesOf(m);
          // Another model on the same instance type: the one its pods could take but for the model label.
          // A canary and its model are each other's twin: the same GPU, nodes apart only by that label.
          const sameType = stack.models.filter((o) => o !== m && o.servingInstanceType === m.servingInstanceType);
          const twin = sameType.find((o) => o.canaryOf === m.id || m.canaryOf === o.id) ?? sameType[0];
          const pod = (name: string, keepModelLabel: boolean): K8sObject => {
            const spec = structuredClone(template.spec) as Record<string, unknown> & { affinity?: NodeAffinitySpec };
            const terms =
              spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms;
            if (!keepModelLabel)
              for (const t of terms ?? [])
                t.matchExpressions = t.matchExpressions.filter((e) => e.key !== MODEL_NODE_LABEL_KEY);
            return {
              apiVersion: "v1",
              kind: "Pod",
              // Not the Deployment's labels: its ReplicaSet must not adopt the probe.
              metadata: { name, namespace: ns, labels: { "app.kubernetes.io/name": "model-isolation-probe" } },
              spec,
            };
          };
          const probe = `isolation-${m.id}`.slice(0, 63);
          const control = `isolation-control-${m.id}`.slice(0, 63);
          // Only the twin's nodes stay open to the control pod: the other same-type models' are cordoned too.
          const closed = [...own, ...(await Promise.all(sameType.filter((o) => o !== twin).map(gpuNodesOf))).flat()];
          for (const n of closed) await kube.run(["cordon", n.metadata.name]);
          try {
            await kube.apply([pod(probe, true), ...(twin ? [pod(control, false)] : [])]);
            if (twin) {
              // Without the model label the same pod runs on the twin's spare node: there was room.
              const ran = await until(`the control pod of ${m.id} to run`, 60, async () => {
                const p = await kube.json<Pod>(["get", "pod", "-n", ns, control]);
                return p.status.phase === "Running" ? p : undefined;
              });
              const node = (await kube.nodes()).find((n) => n.metadata.name === ran.spec.nodeName);
              expect(node?.metadata.labels[MODEL_NODE_LABEL_KEY], `${control} ran on ${twin.id}'s node`).toBe(twin.id);
            }
            const events = await until(`${probe} to be refused`, 60, async () => {
              const ev = await kube.schedulingEvents({ metadata: { name: probe, namespace: ns } } as Pod);
              return ev.length > 0 ? ev : undefined;
            });
            expect(events.join("\n")).toMatch(/didn't match Pod's node affinity\/selector/);
            const refused = await kube.json<Pod>(["get", "pod", "-n", ns, probe]);
            expect(refused.spec.nodeName, `${probe} stays unscheduled`).toBeUndefined();
            expect(refused.status.phase).toBe("Pending");
          } finally {
            await kube.run(["delete", "pod", "-n", ns, probe, control, "--ignore-not-found", "--wait=true"]);
            for (const n of closed) await kube.run(["uncordon", n.metadata.name]);
          }
        }
      },
    );

    it("lets the gateway reach each model's Triton and nothing else, and each Triton admit only the gateway", async () => {
      const gateway = stack.objects.find(
        (o): o is Deployment =>
          o.kind === "Deployment" &&
          podTemplate(o)?.metadata?.labels?.["app.kubernetes.io/name"] === "triton-ft-gateway",
      );
      if (!gateway) throw new Error("no gateway Deployment rendered");
      const ns = gateway.metadata.namespace ?? "default";
      const names = (pods: Pod[]) => new Set(pods.map((p) => p.metadata.name));
      const gatewayPods = names(await kube.pods(ns, gateway.spec.selector.matchLabels));
      const tritonPods = new Map<string, Set<string>>();
      for (const d of gpuDeployments)
        tritonPods.set(modelOf(d).id, names(await kube.pods(ns, d.spec.selector.matchLabels)));
      const allTriton = new Set([...tritonPods.values()].flatMap((p) => [...p]));
      expect(gatewayPods.size).toBeGreaterThan(0);
      expect(tritonPods.size).toBe(stack.models.length);
      for (const [id, p] of tritonPods) expect(p.size, id).toBeGreaterThan(0);

      // As stored: exactly the rendered policies.
      const stored = (await kube.json<{ items: StoredPolicy[] }>(["get", "networkpolicy", "-n", ns])).items;
      expect(stored.map((p) => p.metadata.name).sort()).toEqual(
        stack.objects
          .filter((o) => o.kind === "NetworkPolicy" && o.metadata.namespace === ns)
          .map((o) => o.metadata.name)
          .sort(),
      );
      const selected = new Map<string, Set<string>>();
      for (const p of stored) selected.set(p.metadata.name, names(await kube.podsSelected(ns, p.spec.podSelector)));
      const podsOf = async (peer: PolicyPeer) => names(await kube.podsSelected(ns, peer.podSelector ?? {}));
      const portsOf = (r: { ports?: Array<{ port?: number | string }> }) => (r.ports ?? []).map((x) => Number(x.port));

      // Default deny: every pod of the namespace is selected for ingress and egress.
      const everyPod = names(await kube.pods(ns));
      expect(
        stored.some(
          (p) =>
            isDeepStrictEqual(selected.get(p.metadata.name), everyPod) &&
            p.spec.policyTypes.includes("Ingress") &&
            p.spec.policyTypes.includes("Egress") &&
            !p.spec.ingress &&
            !p.spec.egress,
        ),
        "a default-deny policy",
      ).toBe(true);

      const selecting = (pods: Set<string>, type: "Ingress" | "Egress") =>
        stored.filter(
          (p) =>
            p.spec.policyTypes.includes(type) && [...(selected.get(p.metadata.name) ?? [])].some((n) => pods.has(n)),
        );

      // The gateway's egress: DNS in kube-system, and in its namespace exactly the stack's Triton pods on 8000/8001.
      const reachable = new Set<string>();
      for (const p of selecting(gatewayPods, "Egress"))
        for (const rule of p.spec.egress ?? []) {
          expect(rule.to?.length, `${p.metadata.name}: an egress rule without peers allows everything`).toBeGreaterThan(
            0,
          );
          const ports = portsOf(rule);
          if (rule.to?.some((peer) => peer.namespaceSelector)) {
            for (const peer of rule.to ?? [])
              expect(peer.namespaceSelector?.matchLabels?.["kubernetes.io/metadata.name"], p.metadata.name).toBe(
                "kube-system",
              );
            expect(new Set(ports), `${p.metadata.name}: DNS only`).toEqual(new Set([53]));
            continue;
          }
          if (rule.to?.every((peer) => peer.ipBlock)) {
            // The managed store (ElastiCache in the stack's VPC, reached by address): its port only.
            expect(new Set(ports), `${p.metadata.name}: by address, the store's port only`).toEqual(
              new Set([STORE_PORT]),
            );
            continue;
          }
          for (const peer of rule.to ?? []) {
            expect(peer.ipBlock, p.metadata.name).toBeUndefined();
            for (const n of await podsOf(peer)) reachable.add(n);
          }
          expect(ports).toContain(PORTS.grpc);
          for (const port of ports) expect([PORTS.http, PORTS.grpc], p.metadata.name).toContain(port);
        }
      expect(reachable, "the gateway reaches every model's Triton pods and no other pod").toEqual(allTriton);

      // Each model's Triton: the gateway on 8000/8001, the metrics scraper on 8002, nothing else.
      for (const [id, pods] of tritonPods) {
        const admitted = new Set<string>();
        for (const p of selecting(pods, "Ingress"))
          for (const rule of p.spec.ingress ?? []) {
            expect(
              rule.from?.length,
              `${p.metadata.name}: an ingress rule without peers admits everyone`,
            ).toBeGreaterThan(0);
            const ports = portsOf(rule);
            if (rule.from?.some((peer) => peer.namespaceSelector)) {
              for (const peer of rule.from ?? [])
                expect(peer.namespaceSelector?.matchLabels?.[SCRAPER_NAMESPACE_LABEL], p.metadata.name).toBe("true");
              expect(ports, `${p.metadata.name}: the scraper reaches the metrics port only`).toEqual([PORTS.metrics]);
              continue;
            }
            for (const peer of rule.from ?? []) for (const n of await podsOf(peer)) admitted.add(n);
            expect(ports).toContain(PORTS.grpc);
            for (const port of ports) expect([PORTS.http, PORTS.grpc], p.metadata.name).toContain(port);
          }
        expect(admitted, `${id}'s Triton admits the gateway's pods and no other`).toEqual(gatewayPods);
      }
    });

    it("rolls out a new server digest on the provisioned nodes without dropping below the PDB", async () => {
      expect(gpuDeployments.length).toBeGreaterThan(0);
      for (const d of gpuDeployments) {
        const ns = d.metadata.namespace ?? "default";
        const selector = d.spec.selector.matchLabels;
        const pdb = await findPdb(ns, selector);
        const replicas = d.spec.replicas ?? 1;
        const minAvailable = pdbMinAvailable(pdb, replicas);
        const before = await kube.pods(ns, selector);
        const busy = new Set(before.map((p) => p.spec.nodeName));
        const container = (podTemplate(d)?.spec.containers[0]?.name ?? "") as string;
        const image = `123456789012.dkr.ecr.us-east-1.amazonaws.com/triton-ft-${stack.name}/server@sha256:${"ab".repeat(32)}`;
        await kube.run(["set", "image", "-n", ns, `deployment/${d.metadata.name}`, `${container}=${image}`]);

        let lowest = Infinity;
        const newNodes = new Set<string>();
        await until(`rollout of ${d.metadata.name}`, 150, async () => {
          const pods = await kube.pods(ns, selector);
          const ready = pods.filter(podReady);
          lowest = Math.min(lowest, ready.length);
          for (const p of pods)
            if (p.spec.containers[0]?.image === image && p.spec.nodeName) newNodes.add(p.spec.nodeName);
          const dep = await kube.json<{
            metadata: { generation: number };
            status: {
              observedGeneration?: number;
              updatedReplicas?: number;
              availableReplicas?: number;
              replicas?: number;
            };
          }>(["get", "deployment", "-n", ns, d.metadata.name]);
          const s = dep.status;
          const done =
            s.observedGeneration === dep.metadata.generation &&
            s.updatedReplicas === replicas &&
            s.availableReplicas === replicas &&
            s.replicas === replicas &&
            ready.length === replicas &&
            ready.every((p) => p.spec.containers[0]?.image === image);
          return done ? true : undefined;
        });
        expect(lowest, `ready pods never fell below the PDB's ${minAvailable}`).toBeGreaterThanOrEqual(minAvailable);
        // The surge pod needs the spare GPU slot the stack provisions for the model.
        if (modelOf(d).kubernetes.podsPerNode === 1) {
          expect(
            [...newNodes].some((n) => !busy.has(n)),
            "the first new pod used the spare node",
          ).toBe(true);
        }
      }
    });

    it("leaves a pod beyond the provisioned GPU slots Pending with Insufficient nvidia.com/gpu", async () => {
      for (const d of gpuDeployments) {
        const ns = d.metadata.namespace ?? "default";
        const selector = d.spec.selector.matchLabels;
        const k = modelOf(d).kubernetes;
        const slots = k.gpuNodes * k.podsPerNode;
        const replicas = d.spec.replicas ?? 1;
        await kube.run(["scale", "-n", ns, `deployment/${d.metadata.name}`, `--replicas=${slots + 1}`]);
        try {
          const pending = await until("one Pending pod with a FailedScheduling event", 60, async () => {
            const pods = await kube.pods(ns, selector);
            const running = pods.filter((p) => p.status.phase === "Running");
            const waiting = pods.filter((p) => p.status.phase === "Pending" && !p.spec.nodeName);
            if (running.length !== slots || waiting.length !== 1) return undefined;
            const events = await kube.schedulingEvents(waiting[0] as Pod);
            return events.length > 0 ? events : undefined;
          });
          expect(pending.join("\n")).toContain("Insufficient nvidia.com/gpu");
        } finally {
          await kube.run(["scale", "-n", ns, `deployment/${d.metadata.name}`, `--replicas=${replicas}`]);
        }
        await kube.run(["rollout", "status", "-n", ns, `deployment/${d.metadata.name}`, "--timeout=90s"]);
      }
    });

    it("agrees with validation on allocatable: a pod one MiB over it stays Pending, one at it is scheduled", async () => {
      const d = gpuDeployments[0];
      expect(d).toBeDefined();
      if (!d) return;
      const model = modelOf(d);
      const shape = eksNodeShape(instanceFacts(model.servingInstanceType));
      const ns = d.metadata.namespace ?? "default";
      const template = podTemplate(d);
      if (!template) throw new Error("no pod template");
      const replicas = d.spec.replicas ?? 1;
      const gpus = gpusOf(template.spec);
      const cpuMillis = model.kubernetes.cpuRequestMillis;
      // EKS's DaemonSets (the stand-in), the stack's DCGM exporter and the model's pre-pull, where synth
      // rendered one (both applied for real), share the node.
      const daemonSets = nodeDaemonSetRequests(prePullOf(model) !== undefined);
      const atLimit = shape.allocatable.memoryBytes - daemonSets.memoryBytes;
      const over = atLimit + MiB;
      // The validation rule's verdicts, for one pod per node.
      expect(podFitProblems(shape, { cpuMillis, memoryBytes: atLimit, gpus }, 1, daemonSets)).toEqual([]);
      expect(
        podFitProblems(shape, { cpuMillis, memoryBytes: over, gpus }, 1, daemonSets).map((p) => p.resource),
      ).toEqual(["memory"]);

      // Empty the GPU nodes so only allocatable decides.
      await kube.run(["scale", "-n", ns, `deployment/${d.metadata.name}`, "--replicas=0"]);
      await until("GPU deployment scaled to zero", 60, async () =>
        (await kube.pods(ns, d.spec.selector.matchLabels)).length === 0 ? true : undefined,
      );
      const probe = (name: string, memoryBytes: number): K8sObject => {
        const spec = structuredClone(template.spec) as Record<string, unknown> & {
          containers: Array<{ resources?: { requests?: Record<string, string>; limits?: Record<string, string> } }>;
        };
        spec.containers = spec.containers.map((c, i) => ({
          ...c,
          resources: {
            requests: {
              ...(c.resources?.requests ?? {}),
              memory: i === 0 ? `${memoryBytes / MiB}Mi` : (c.resources?.requests?.memory ?? "1Mi"),
            },
            limits: {
              ...(c.resources?.limits ?? {}),
              memory: i === 0 ? `${memoryBytes / MiB}Mi` : (c.resources?.limits?.memory ?? "1Mi"),
            },
          },
        }));
        return {
          apiVersion: "v1",
          kind: "Pod",
          metadata: { name, namespace: ns, labels: { "app.kubernetes.io/name": "allocatable-probe" } },
          spec,
        };
      };
      try {
        await kube.apply([probe("probe-over-allocatable", over), probe("probe-at-allocatable", atLimit)]);
        const events = await until("the over-allocatable probe to be refused", 60, async () => {
          const ev = await kube.schedulingEvents({
            metadata: { name: "probe-over-allocatable", namespace: ns },
          } as Pod);
          return ev.length > 0 ? ev : undefined;
        });
        expect(events.join("\n")).toContain("Insufficient memory");
        const atPod = await until("the at-allocatable probe to run", 60, async () => {
          const p = await kube.json<Pod>(["get", "pod", "-n", ns, "probe-at-allocatable"]);
          return p.status.phase === "Running" ? p : undefined;
        });
        expect(atPod.spec.nodeName).toBeTruthy();
        const refused = await kube.json<Pod>(["get", "pod", "-n", ns, "probe-over-allocatable"]);
        expect(refused.spec.nodeName).toBeUndefined();
        expect(refused.status.phase).toBe("Pending");
      } finally {
        await kube.run([
          "delete",
          "pod",
          "-n",
          ns,
          "probe-over-allocatable",
          "probe-at-allocatable",
          "--ignore-not-found",
        ]);
        await kube.run(["scale", "-n", ns, `deployment/${d.metadata.name}`, `--replicas=${replicas}`]);
      }
      await kube.run(["rollout", "status", "-n", ns, `deployment/${d.metadata.name}`, "--timeout=90s"]);
    });

    it("refuses an eviction that would break the PodDisruptionBudget", async () => {
      for (const d of gpuDeployments) {
        const ns = d.metadata.namespace ?? "default";
        const selector = d.spec.selector.matchLabels;
        const gpuNodes = await gpuNodesOf(modelOf(d));
        // Cordoned, so an evicted pod's replacement cannot restore the budget mid-test.
        for (const n of gpuNodes) await kube.run(["cordon", n.metadata.name]);
        try {
          const pdb = await until("PDB status for the running pods", 60, async () => {
            const p = await findPdb(ns, selector);
            return p.status?.currentHealthy === (d.spec.replicas ?? 1) ? p : undefined;
          });
          let allowed = pdb.status?.disruptionsAllowed ?? 0;
          const pods = (await kube.pods(ns, selector)).filter(podReady);
          let refused: string | undefined;
          for (const p of pods) {
            const r = await kube.evict(p);
            if (r.allowed) {
              expect(allowed, `eviction of ${p.metadata.name} allowed only within the budget`).toBeGreaterThan(0);
              allowed -= 1;
            } else {
              refused = r.message;
              break;
            }
          }
          expect(refused, "an eviction past the budget is refused").toBeDefined();
          expect(refused).toMatch(/disruption budget/i);
        } finally {
          for (const n of gpuNodes) await kube.run(["uncordon", n.metadata.name]);
        }
        await kube.run(["rollout", "status", "-n", ns, `deployment/${d.metadata.name}`, "--timeout=90s"]);
      }
    });
  });
}

interface NodeAffinitySpec {
  nodeAffinity?: {
    requiredDuringSchedulingIgnoredDuringExecution?: {
      nodeSelectorTerms: Array<{ matchExpressions: Array<{ key: string }> }>;
    };
  };
}

interface PolicyPeer {
  podSelector?: LabelSelector;
  namespaceSelector?: LabelSelector;
  ipBlock?: unknown;
}

/** A NetworkPolicy as the API server returns it. */
interface StoredPolicy {
  metadata: { name: string };
  spec: {
    podSelector: LabelSelector;
    policyTypes: string[];
    ingress?: Array<{ from?: PolicyPeer[]; ports?: Array<{ port?: number | string }> }>;
    egress?: Array<{ to?: PolicyPeer[]; ports?: Array<{ port?: number | string }> }>;
  };
}

async function findPdb(ns: string, selector: Record<string, string>): Promise<Pdb> {
  const pdbs = (await kube.json<{ items: Pdb[] }>(["get", "pdb", "-n", ns])).items;
  const found = pdbs.find((p) => matches(p.spec.selector.matchLabels, selector));
  if (!found) throw new Error(`no PodDisruptionBudget selects ${JSON.stringify(selector)} in ${ns}`);
  return found;
}

function pdbMinAvailable(pdb: Pdb, replicas: number): number {
  const asCount = (v: number | string) =>
    typeof v === "number" ? v : Math.ceil((Number(v.replace("%", "")) / 100) * replicas);
  if (pdb.spec.minAvailable !== undefined) return asCount(pdb.spec.minAvailable);
  if (pdb.spec.maxUnavailable !== undefined) return replicas - asCount(pdb.spec.maxUnavailable);
  return 0;
}
