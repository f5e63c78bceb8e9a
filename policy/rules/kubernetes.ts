/**
 * Kubernetes baseline, for every workload the stack applies (Deployment,
 * StatefulSet, DaemonSet, ReplicaSet, Job, CronJob, Pod): the restricted Pod
 * Security profile (non-root, no privilege escalation, capabilities dropped,
 * seccomp RuntimeDefault), a read-only root filesystem and no service-account
 * token unless an exception says why, memory limits, images by digest; a
 * default-deny NetworkPolicy in every workload namespace; LoadBalancer
 * Services internal unless TLS and client authentication are on.
 *
 * Exceptions: only the two rules the baseline qualifies ("where the process
 * allows", "unless needed") accept one, as a workload annotation
 * `triton-ft.io/policy-exception.<rule>` whose value states the reason.
 */
import { isDigestRef, isSynthRef } from "../../infra/imageRef";
import type { ResourceRule, ResourceView, StackRule } from "./types";
import { arr, kindOf, obj, str, strings, type Obj } from "./values";

/** Pulumi type tokens of the workload kinds, with where each keeps its pod template. */
const WORKLOADS: Record<string, (spec: Obj) => Obj | undefined> = {
  "kubernetes:apps/v1:Deployment": (s) => obj(obj(s.template).spec),
  "kubernetes:apps/v1:StatefulSet": (s) => obj(obj(s.template).spec),
  "kubernetes:apps/v1:DaemonSet": (s) => obj(obj(s.template).spec),
  "kubernetes:apps/v1:ReplicaSet": (s) => obj(obj(s.template).spec),
  "kubernetes:batch/v1:Job": (s) => obj(obj(s.template).spec),
  "kubernetes:batch/v1:CronJob": (s) => obj(obj(obj(obj(s.jobTemplate).spec).template).spec),
  "kubernetes:core/v1:Pod": (s) => s,
};

export const SERVICE_TYPE = "kubernetes:core/v1:Service";
export const NETWORK_POLICY_TYPE = "kubernetes:networking.k8s.io/v1:NetworkPolicy";
export const EXCEPTION_PREFIX = "triton-ft.io/policy-exception.";
/** An exception must say why in words, not just exist. */
export const MIN_REASON_LENGTH = 20;

const LB = "service.beta.kubernetes.io/aws-load-balancer-";
/** Declared by the renderer of a Service whose backend authenticates every request (the gateway's API keys). */
export const CLIENT_AUTH_ANNOTATION = "triton-ft.io/client-auth";

export interface Workload {
  resource: ResourceView;
  kind: string;
  name: string;
  namespace: string;
  annotations: Record<string, string>;
  pod: Obj;
  containers: Obj[];
}

export function workload(r: ResourceView): Workload | undefined {
  const podOf = WORKLOADS[r.type];
  if (!podOf) return undefined;
  const meta = obj(r.props.metadata);
  const pod = podOf(obj(r.props.spec)) ?? {};
  const annotations = Object.fromEntries(
    Object.entries(obj(meta.annotations)).filter((e): e is [string, string] => typeof e[1] === "string"),
  );
  return {
    resource: r,
    kind: kindOf(r.type),
    name: str(meta.name) ?? r.name,
    namespace: str(meta.namespace) ?? "default",
    annotations,
    pod,
    containers: [...arr(pod.initContainers), ...arr(pod.containers)].map(obj),
  };
}

function exception(w: Workload, rule: string): string | undefined {
  const reason = w.annotations[`${EXCEPTION_PREFIX}${rule}`];
  return reason !== undefined && reason.trim().length >= MIN_REASON_LENGTH ? reason : undefined;
}

/** A per-container rule: `problem` returns what is wrong with one container (undefined when it complies). */
function containerRule(
  name: string,
  description: string,
  problem: (c: Obj, pod: Obj) => string | undefined,
  fix: string,
  exceptionAllowed = false,
): ResourceRule {
  return {
    kind: "resource",
    name,
    description,
    check(r) {
      const w = workload(r);
      if (!w) return [];
      if (exceptionAllowed && exception(w, name)) return [];
      return w.containers.flatMap((c) => {
        const p = problem(c, w.pod);
        return p ? [`${w.kind} '${w.namespace}/${w.name}' container '${str(c.name) ?? "?"}' ${p}. Fix: ${fix}.`] : [];
      });
    },
  };
}

const sc = (c: Obj) => obj(c.securityContext);
const podSc = (pod: Obj) => obj(pod.securityContext);

export const runAsNonRoot = containerRule(
  "k8s-run-as-non-root",
  "Containers run as a non-root user (restricted profile).",
  (c, pod) => {
    const nonRoot = sc(c).runAsNonRoot ?? podSc(pod).runAsNonRoot;
    const user = sc(c).runAsUser ?? podSc(pod).runAsUser;
    if (user === 0) return "runs as uid 0";
    return nonRoot === true ? undefined : "may run as root (runAsNonRoot is not true)";
  },
  "set securityContext.runAsNonRoot: true and a non-zero runAsUser (the image's own user)",
);

export const noPrivilegeEscalation = containerRule(
  "k8s-no-privilege-escalation",
  "Containers set allowPrivilegeEscalation: false and are not privileged.",
  (c) => {
    if (sc(c).privileged === true) return "is privileged";
    return sc(c).allowPrivilegeEscalation === false ? undefined : "allows privilege escalation";
  },
  "set securityContext.allowPrivilegeEscalation: false (and never privileged: true)",
);

export const dropAllCapabilities = containerRule(
  "k8s-drop-all-capabilities",
  "Containers drop ALL capabilities and add none but NET_BIND_SERVICE.",
  (c) => {
    const caps = obj(sc(c).capabilities);
    const added = strings(caps.add).filter((a) => a !== "NET_BIND_SERVICE");
    if (added.length > 0) return `adds capabilities ${added.join(", ")}`;
    return strings(caps.drop).includes("ALL") ? undefined : "keeps the default capabilities";
  },
  'set securityContext.capabilities.drop: ["ALL"]',
);

export const seccompRuntimeDefault = containerRule(
  "k8s-seccomp-runtime-default",
  "Containers run under the RuntimeDefault (or a Localhost) seccomp profile.",
  (c, pod) => {
    const type = str(obj(sc(c).seccompProfile).type) ?? str(obj(podSc(pod).seccompProfile).type);
    return type === "RuntimeDefault" || type === "Localhost"
      ? undefined
      : `has seccomp profile ${type ?? "unset (Unconfined)"}`;
  },
  'set securityContext.seccompProfile.type: "RuntimeDefault" on the pod',
);

export const readOnlyRootFilesystem = containerRule(
  "k8s-read-only-root-filesystem",
  "Containers have a read-only root filesystem, unless an exception annotation says why the process needs to write to it.",
  (c) => (sc(c).readOnlyRootFilesystem === true ? undefined : "has a writable root filesystem"),
  `set securityContext.readOnlyRootFilesystem: true with emptyDir volumes for the paths it writes, or annotate the workload ${EXCEPTION_PREFIX}k8s-read-only-root-filesystem with the reason`,
  true,
);

export const memoryLimits = containerRule(
  "k8s-memory-limits",
  "Containers have a memory limit.",
  (c) => (obj(obj(c.resources).limits).memory !== undefined ? undefined : "has no memory limit"),
  "set resources.limits.memory",
);

export interface ImageRuleOptions {
  /**
   * Offline renders (`npm run synth`) carry the marked placeholder `<repo>:synth`
   * where pulumi up substitutes the digest; only the synth checks accept it.
   */
  allowSynthPlaceholder?: boolean;
}

export function imagesByDigest(opts: ImageRuleOptions = {}): ResourceRule {
  return containerRule(
    "k8s-image-digest",
    "Container images are pinned by digest and name their registry (<registry>/<repository>@sha256:<64 hex>).",
    (c) => {
      const image = str(c.image) ?? "";
      // The program's own definitions (infra/imageRef.ts): <registry>/<repository>@sha256:<64 hex>,
      // and synth's `<repository>:synth` placeholder.
      if (isDigestRef(image)) return undefined;
      if (opts.allowSynthPlaceholder && isSynthRef(image)) return undefined;
      return `uses image ${JSON.stringify(image)}, not pinned by digest with its registry`;
    },
    "deploy <registry>/<repository>@sha256:<digest> (the build pipeline's RESULT image=...)",
  );
}

export const serviceAccountToken: ResourceRule = {
  kind: "resource",
  name: "k8s-service-account-token",
  description: "Pods do not mount a service-account token unless an exception annotation says why they call the API.",
  check(r) {
    const w = workload(r);
    if (!w || w.pod.automountServiceAccountToken === false || exception(w, "k8s-service-account-token")) return [];
    return [
      `${w.kind} '${w.namespace}/${w.name}' mounts a service-account token (automountServiceAccountToken is not false), though it does not call the Kubernetes API. Fix: set automountServiceAccountToken: false in the pod spec, or annotate the workload ${EXCEPTION_PREFIX}k8s-service-account-token with the reason it needs the API.`,
    ];
  },
};

/** Does this Service carry TLS on every port at the load balancer? */
function tlsOnEveryPort(annotations: Obj, ports: Obj[]): boolean {
  if (!str(annotations[`${LB}ssl-cert`])) return false;
  const tlsPorts = (str(annotations[`${LB}ssl-ports`]) ?? "*").split(",").map((p) => p.trim());
  if (tlsPorts.includes("*")) return true;
  return ports.every(
    (p) => tlsPorts.includes(String(p.port)) || (str(p.name) !== undefined && tlsPorts.includes(String(p.name))),
  );
}

export const loadBalancerInternal: ResourceRule = {
  kind: "resource",
  name: "k8s-load-balancer-internal",
  description: "LoadBalancer Services are internal unless TLS (all ports) and client authentication are on.",
  check(r) {
    if (r.type !== SERVICE_TYPE) return [];
    const spec = obj(r.props.spec);
    if (spec.type !== "LoadBalancer") return [];
    const meta = obj(r.props.metadata);
    const ann = obj(meta.annotations);
    const name = `${str(meta.namespace) ?? "default"}/${str(meta.name) ?? r.name}`;
    const internal = ann[`${LB}scheme`] === "internal" || ann[`${LB}internal`] === "true";
    if (internal) return [];
    const tls = tlsOnEveryPort(ann, arr(spec.ports).map(obj));
    const auth = (str(ann[CLIENT_AUTH_ANNOTATION]) ?? "").trim() !== "";
    if (tls && auth) return [];
    const missing = [tls ? undefined : "TLS on every port", auth ? undefined : "client authentication"].filter(Boolean);
    return [
      `LoadBalancer Service '${name}' is reachable from outside the VPC (scheme ${JSON.stringify(ann[`${LB}scheme`] ?? "unset")}) without ${missing.join(" and ")}. Fix: set serving.loadBalancerScheme: internal, or put it behind the gateway with serving.tlsCertificateArn and API keys (${CLIENT_AUTH_ANNOTATION}).`,
    ];
  },
};

/** An ingress/egress rule with no peers admits everything; an egress rule to port 53 only is DNS. */
function isDenyAll(policy: Obj): boolean {
  const spec = obj(policy.spec);
  const selector = obj(spec.podSelector);
  if (Object.keys(obj(selector.matchLabels)).length > 0 || arr(selector.matchExpressions).length > 0) return false;
  const types = strings(spec.policyTypes);
  if (!types.includes("Ingress") || !types.includes("Egress")) return false;
  const opensAll = (rules: unknown[], peers: "from" | "to") =>
    rules.map(obj).some((rule) => {
      if (arr(rule[peers]).length > 0) return false;
      const ports = arr(rule.ports).map(obj);
      return peers === "from" || ports.length === 0 || ports.some((p) => Number(p.port) !== 53);
    });
  return !opensAll(arr(spec.ingress), "from") && !opensAll(arr(spec.egress), "to");
}

export const namespaceDefaultDeny: StackRule = {
  kind: "stack",
  name: "k8s-network-policy-default-deny",
  description:
    "Every namespace with a workload has a default-deny NetworkPolicy (all pods, Ingress and Egress, nothing allowed but DNS).",
  check(resources) {
    const denied = new Set(
      resources
        .filter((r) => r.type === NETWORK_POLICY_TYPE && isDenyAll(r.props))
        .map((r) => str(obj(r.props.metadata).namespace) ?? "default"),
    );
    const out: Array<{ resource: ResourceView; message: string }> = [];
    const seen = new Set<string>();
    for (const r of resources) {
      const w = workload(r);
      if (!w || denied.has(w.namespace) || seen.has(w.namespace)) continue;
      seen.add(w.namespace);
      out.push({
        resource: r,
        message: `namespace '${w.namespace}' (${w.kind} '${w.name}') has no default-deny NetworkPolicy, so every pod in the cluster reaches its ports. Fix: add a NetworkPolicy with podSelector: {} and policyTypes [Ingress, Egress], then allow only the flows it needs.`,
      });
    }
    return out;
  },
};

export function kubernetesRules(opts: ImageRuleOptions = {}): Array<ResourceRule | StackRule> {
  return [
    runAsNonRoot,
    noPrivilegeEscalation,
    dropAllCapabilities,
    seccompRuntimeDefault,
    readOnlyRootFilesystem,
    serviceAccountToken,
    memoryLimits,
    imagesByDigest(opts),
    loadBalancerInternal,
    namespaceDefaultDeny,
  ];
}
