/**
 * Fake nodes shaped like the ones the stack provisions, generated from the GPU
 * instance catalog: capacity and EKS-style allocatable, `nvidia.com/gpu`, the
 * labels EKS managed node groups set (or, for a model Karpenter serves, its
 * rendered NodePool's template labels and taints), the GPU taint, and the node
 * counts the stack asks for (each model's GPU nodes including the rollout
 * spare, plus the system group). In a stack of several models each model's
 * nodes carry its model label, as its node group or NodePool gives them.
 * kwok makes them Ready and runs their pods.
 */
import { findGpuInstance } from "../../infra/catalog/gpus";
import { SYSTEM_NODES, SYSTEM_NODE_LABEL, gpuNodeGroupLabels } from "../../infra/cloud/eks";
import { GPU_TAINT, INSTANCE_TYPE_LABEL } from "../../infra/render/scheduling";
import {
  NODE_DAEMONSET_REQUESTS,
  SYSTEM_NODE_INSTANCES,
  eksNodeShape,
  type InstanceFacts,
  type NodeShape,
} from "../../infra/resolve/nodeShape";
import type { K8sObject, RenderedModel, RenderedStack } from "./stacks";

import { MODEL_NODE_LABEL_KEY } from "../../infra/conventions/workload";
const MiB = 1024 ** 2;

/** Label every fake node of one stack carries, so a stack's nodes can be removed together. */
export const STACK_LABEL = "triton-ft.test/stack";

export function instanceFacts(type: string): InstanceFacts {
  const gpu = findGpuInstance(type);
  if (gpu) return gpu;
  const sys = SYSTEM_NODE_INSTANCES.find((i) => i.type === type);
  if (!sys)
    throw new Error(`no instance facts for ${type}: add it to SYSTEM_NODE_INSTANCES (infra/resolve/nodeShape.ts)`);
  return sys;
}

function quantities(r: NodeShape["capacity"]): Record<string, string> {
  const q: Record<string, string> = {
    cpu: `${r.cpuMillis}m`,
    memory: `${Math.floor(r.memoryBytes / 1024)}Ki`,
    pods: String(r.pods),
    "ephemeral-storage": "100Gi",
  };
  if (r.gpus > 0) q["nvidia.com/gpu"] = String(r.gpus);
  return q;
}

interface Taint {
  key: string;
  value?: string;
  effect: string;
}

export interface NodeGroupSpec {
  group: string;
  instanceType: string;
  count: number;
  gpu: boolean;
  /** The served model whose GPU nodes these are. */
  model?: string;
  /** What the node group or NodePool sets on its nodes, besides the kubelet's and the cloud's labels. */
  labels: Record<string, string>;
  taints: Taint[];
}

interface NodePoolObject {
  metadata: { name: string };
  spec: {
    template: {
      metadata: { labels: Record<string, string> };
      spec: { requirements: Array<{ key: string; values?: string[] }>; taints?: Taint[] };
    };
  };
}

/** A model's GPU nodes: a fixed EKS node group, or (autoscaled) what its NodePool makes Karpenter launch. */
function gpuGroup(stack: Pick<RenderedStack, "name">, m: NodeSource["models"][number]): NodeGroupSpec {
  const group = m.several ? `${stack.name}-gpu-${m.id}` : `${stack.name}-gpu`;
  const base = { group, instanceType: m.servingInstanceType, count: m.kubernetes.gpuNodes, gpu: true, model: m.id };
  const pool = m.objects.find((o) => o.kind === "NodePool") as (K8sObject & NodePoolObject) | undefined;
  if (pool) {
    const t = pool.spec.template;
    const types = t.spec.requirements.find((r) => r.key === INSTANCE_TYPE_LABEL)?.values;
    if (!types?.includes(m.servingInstanceType))
      throw new Error(`NodePool ${pool.metadata.name} does not offer ${m.servingInstanceType}`);
    // Karpenter labels its nodes with the template's labels and the pool's name, and taints them as the template says.
    return {
      ...base,
      labels: { ...t.metadata.labels, "karpenter.sh/nodepool": pool.metadata.name },
      taints: t.spec.taints ?? [],
    };
  }
  return {
    ...base,
    // The node group's labels (infra/components/cluster.ts): several models label each model's group.
    labels: {
      "eks.amazonaws.com/nodegroup": group,
      ...gpuNodeGroupLabels(m.several ? { key: MODEL_NODE_LABEL_KEY, value: m.id } : undefined),
    },
    taints: [{ key: GPU_TAINT.key, value: GPU_TAINT.value, effect: GPU_TAINT.effect }],
  };
}

/** What the fake nodes of a stack are made from (a synth-rendered stack, or the engine suite's plan). */
export type NodeSource = Pick<RenderedStack, "name" | "region" | "availabilityZones"> & {
  models: ReadonlyArray<Pick<RenderedModel, "id" | "several" | "servingInstanceType" | "kubernetes" | "objects">>;
};

export function nodeGroupsFor(stack: NodeSource): NodeGroupSpec[] {
  const system = `${stack.name}-system`;
  return [
    {
      group: system,
      instanceType: SYSTEM_NODES.instanceType,
      count: SYSTEM_NODES.count,
      gpu: false,
      labels: { "eks.amazonaws.com/nodegroup": system, [SYSTEM_NODE_LABEL.key]: SYSTEM_NODE_LABEL.value },
      taints: [],
    },
    ...stack.models.map((m) => gpuGroup(stack, m)),
  ];
}

/** The label selector of one node group's nodes. */
export function nodeSelectorOf(stack: Pick<RenderedStack, "name">, g: NodeGroupSpec): string {
  return [
    `${STACK_LABEL}=${stack.name}`,
    `${INSTANCE_TYPE_LABEL}=${g.instanceType}`,
    ...Object.entries(g.labels).map(([k, v]) => `${k}=${v}`),
  ].join(",");
}

export function nodesFor(stack: NodeSource): K8sObject[] {
  const zones = Array.from({ length: Math.max(1, stack.availabilityZones) }, (_, i) => `${stack.region}${"abcdef"[i]}`);
  const nodes: K8sObject[] = [];
  for (const g of nodeGroupsFor(stack)) {
    const shape = eksNodeShape(instanceFacts(g.instanceType));
    for (let i = 0; i < g.count; i++) {
      const zone = zones[i % zones.length] as string;
      const name = `${g.group}-${i}`;
      const labels: Record<string, string> = {
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/os": "linux",
        "kubernetes.io/hostname": name,
        [INSTANCE_TYPE_LABEL]: g.instanceType,
        "topology.kubernetes.io/region": stack.region,
        "topology.kubernetes.io/zone": zone,
        "eks.amazonaws.com/capacityType": "ON_DEMAND",
        type: "kwok",
        [STACK_LABEL]: stack.name,
        ...g.labels,
      };
      nodes.push({
        apiVersion: "v1",
        kind: "Node",
        metadata: {
          name,
          labels,
          annotations: { "kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0" },
        },
        spec: g.taints.length > 0 ? { taints: g.taints } : {},
        status: {
          capacity: quantities(shape.capacity),
          allocatable: quantities(shape.allocatable),
          nodeInfo: {
            architecture: "amd64",
            operatingSystem: "linux",
            kubeletVersion: "fake",
            kubeProxyVersion: "fake",
            containerRuntimeVersion: "fake",
            osImage: "Amazon Linux 2023 (kwok)",
            kernelVersion: "fake",
            machineID: "",
            systemUUID: "",
            bootID: "",
          },
        },
      });
    }
  }
  return nodes;
}

/**
 * Stand-in for the per-node DaemonSets of an EKS GPU node (aws-node, kube-proxy,
 * NVIDIA device plugin) with the requests the planner budgets for them, so
 * the serving pods compete for exactly what they would on a real node.
 */
export function nodeDaemonSet(stackName: string): K8sObject {
  const labels = { "app.kubernetes.io/name": "node-daemons", [STACK_LABEL]: stackName };
  return {
    apiVersion: "apps/v1",
    kind: "DaemonSet",
    metadata: { name: `node-daemons-${stackName}`, namespace: "kube-system", labels },
    spec: {
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        spec: {
          nodeSelector: { [STACK_LABEL]: stackName },
          tolerations: [{ operator: "Exists" }],
          automountServiceAccountToken: false,
          containers: [
            {
              name: "daemons",
              image: "registry.k8s.io/pause:3.10",
              resources: {
                requests: {
                  cpu: `${NODE_DAEMONSET_REQUESTS.cpuMillis}m`,
                  memory: `${NODE_DAEMONSET_REQUESTS.memoryBytes / MiB}Mi`,
                },
              },
            },
          ],
        },
      },
    },
  };
}
