/**
 * Fake nodes shaped like the ones the stack provisions, generated from the GPU
 * instance catalog: capacity and EKS-style allocatable, `nvidia.com/gpu`, the
 * labels EKS managed node groups set, the GPU taint, and the node counts the
 * stack asks EKS for (GPU nodes including the rollout spare, plus the system
 * group). kwok makes them Ready and runs their pods.
 */
import { findGpuInstance } from "../../infra/catalog/gpus";
import { GPU_NODE_LABEL, SYSTEM_NODES, SYSTEM_NODE_LABEL } from "../../infra/cloud/eks";
import { GPU_TAINT } from "../../infra/render/scheduling";
import {
  NODE_DAEMONSET_REQUESTS,
  SYSTEM_NODE_INSTANCES,
  eksNodeShape,
  type InstanceFacts,
  type NodeShape,
} from "../../infra/plan/nodeShape";
import type { K8sObject, RenderedStack } from "./stacks";

const MiB = 1024 ** 2;

/** Label every fake node of one stack carries, so a stack's nodes can be removed together. */
export const STACK_LABEL = "triton-ft.test/stack";

export function instanceFacts(type: string): InstanceFacts {
  const gpu = findGpuInstance(type);
  if (gpu) return gpu;
  const sys = SYSTEM_NODE_INSTANCES.find((i) => i.type === type);
  if (!sys) throw new Error(`no instance facts for ${type}: add it to SYSTEM_NODE_INSTANCES (infra/plan/nodeShape.ts)`);
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

export interface NodeGroupSpec {
  group: string;
  instanceType: string;
  count: number;
  gpu: boolean;
}

/** What the fake nodes of a stack are made from (a synth-rendered stack, or the engine suite's plan). */
export type NodeSource = Pick<
  RenderedStack,
  "name" | "servingInstanceType" | "kubernetes" | "region" | "availabilityZones"
>;

export function nodeGroupsFor(stack: NodeSource): NodeGroupSpec[] {
  return [
    { group: `${stack.name}-system`, instanceType: SYSTEM_NODES.instanceType, count: SYSTEM_NODES.count, gpu: false },
    {
      group: `${stack.name}-gpu`,
      instanceType: stack.servingInstanceType,
      count: stack.kubernetes.gpuNodes,
      gpu: true,
    },
  ];
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
        "node.kubernetes.io/instance-type": g.instanceType,
        "topology.kubernetes.io/region": stack.region,
        "topology.kubernetes.io/zone": zone,
        "eks.amazonaws.com/nodegroup": g.group,
        "eks.amazonaws.com/capacityType": "ON_DEMAND",
        type: "kwok",
        [STACK_LABEL]: stack.name,
      };
      // The node groups' own labels (infra/components/cluster.ts).
      if (g.gpu) labels[GPU_NODE_LABEL] = "true";
      else labels[SYSTEM_NODE_LABEL.key] = SYSTEM_NODE_LABEL.value;
      nodes.push({
        apiVersion: "v1",
        kind: "Node",
        metadata: {
          name,
          labels,
          annotations: { "kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0" },
        },
        spec: g.gpu ? { taints: [{ key: GPU_TAINT.key, value: GPU_TAINT.value, effect: GPU_TAINT.effect }] } : {},
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
