/** Small typed helpers over kubectl for the control-plane tests. */
import { KubectlError, kubectlRun } from "./cluster";
import type { K8sObject } from "./stacks";
import { sleep } from "../lib/net";

export interface Pod {
  metadata: {
    name: string;
    namespace: string;
    labels?: Record<string, string>;
    deletionTimestamp?: string;
    ownerReferences?: Array<{ kind: string; name: string }>;
  };
  spec: { nodeName?: string; containers: Array<{ image: string }> };
  status: { phase?: string; conditions?: Array<{ type: string; status: string; reason?: string; message?: string }> };
}

export interface Node {
  metadata: { name: string; labels: Record<string, string> };
  spec: { taints?: Array<{ key: string; effect: string }>; unschedulable?: boolean };
  status: { conditions?: Array<{ type: string; status: string }> };
}

/** A Kubernetes LabelSelector (metav1.LabelSelector). */
export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: Array<{ key: string; operator: "In" | "NotIn" | "Exists" | "DoesNotExist"; values?: string[] }>;
}

/** A LabelSelector in kubectl's `-l` syntax; the API server then evaluates it. An empty selector selects everything. */
export function selectorString(s: LabelSelector): string {
  const parts = Object.entries(s.matchLabels ?? {}).map(([k, v]) => `${k}=${v}`);
  for (const e of s.matchExpressions ?? []) {
    const values = `(${(e.values ?? []).join(",")})`;
    if (e.operator === "In") parts.push(`${e.key} in ${values}`);
    else if (e.operator === "NotIn") parts.push(`${e.key} notin ${values}`);
    else if (e.operator === "Exists") parts.push(e.key);
    else parts.push(`!${e.key}`);
  }
  return parts.join(",");
}

export class Kube {
  constructor(
    readonly binDir: string,
    readonly kubeconfig: string,
  ) {}

  run(args: string[], input?: string): Promise<string> {
    return kubectlRun(this.binDir, this.kubeconfig, args, input);
  }

  async json<T>(args: string[]): Promise<T> {
    return JSON.parse(await this.run([...args, "-o", "json"])) as T;
  }

  /** Server-side apply of objects given inline (one List on stdin). */
  apply(objects: K8sObject[], extra: string[] = []): Promise<string> {
    const list = { apiVersion: "v1", kind: "List", items: objects };
    return this.run(
      ["apply", "--server-side", "--field-manager=triton-ft-test", ...extra, "-f", "-"],
      JSON.stringify(list),
    );
  }

  async pods(namespace: string, selector?: Record<string, string>): Promise<Pod[]> {
    const args = ["get", "pods", "-n", namespace];
    if (selector)
      args.push(
        "-l",
        Object.entries(selector)
          .map(([k, v]) => `${k}=${v}`)
          .join(","),
      );
    return (await this.json<{ items: Pod[] }>(args)).items;
  }

  /** Pods of a namespace a LabelSelector selects, as the API server evaluates it. */
  async podsSelected(namespace: string, selector: LabelSelector): Promise<Pod[]> {
    const l = selectorString(selector);
    return (await this.json<{ items: Pod[] }>(["get", "pods", "-n", namespace, ...(l ? ["-l", l] : [])])).items;
  }

  async nodes(selector?: string): Promise<Node[]> {
    return (await this.json<{ items: Node[] }>(["get", "nodes", ...(selector ? ["-l", selector] : [])])).items;
  }

  /** POSTs an Eviction; resolves to the HTTP outcome instead of throwing on a refusal. */
  async evict(pod: Pod): Promise<{ allowed: boolean; message: string }> {
    const body = {
      apiVersion: "policy/v1",
      kind: "Eviction",
      metadata: { name: pod.metadata.name, namespace: pod.metadata.namespace },
    };
    try {
      await this.run(
        [
          "create",
          "--raw",
          `/api/v1/namespaces/${pod.metadata.namespace}/pods/${pod.metadata.name}/eviction`,
          "-f",
          "-",
        ],
        JSON.stringify(body),
      );
      return { allowed: true, message: "" };
    } catch (err) {
      if (err instanceof KubectlError) return { allowed: false, message: err.stderr.trim() };
      throw err;
    }
  }

  /** FailedScheduling messages recorded for a pod. */
  async schedulingEvents(pod: Pod): Promise<string[]> {
    const events = await this.json<{ items: Array<{ reason: string; message: string }> }>([
      "get",
      "events",
      "-n",
      pod.metadata.namespace,
      "--field-selector",
      `involvedObject.name=${pod.metadata.name},reason=FailedScheduling`,
    ]);
    return events.items.map((e) => e.message);
  }
}

/** Polls until check returns a value (not undefined), or throws with the last observation. */
export async function until<T>(what: string, seconds: number, check: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + seconds * 1000;
  let last: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v !== undefined) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${seconds}s waiting for ${what}${last ? `: ${String(last)}` : ""}`);
    }
    await sleep(300);
  }
}

export function podReady(p: Pod): boolean {
  return (
    p.metadata.deletionTimestamp === undefined &&
    (p.status.conditions ?? []).some((c) => c.type === "Ready" && c.status === "True")
  );
}
