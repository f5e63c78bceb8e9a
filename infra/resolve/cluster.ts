/**
 * What the stack runs on: the pins of things outside this repository (the
 * backend and FasterTransformer commits, the EKS version, every CIDR), the
 * cluster mode and its endpoint access, the network, and the autoscaling
 * rules that need no model.
 */
import { endpointAccessProblems } from "./clusterAccess";
import { VPC_PREFIX_RANGE, vpcPrefix } from "./network";
import { autoscalingProblems, fixedSizeProblems } from "../config/autoscaling";
import { platformFindings } from "../config/platformChecks";
import { PROJECT, type SecretPresence, type StackConfig, type Add } from "../config/schema";
import { storeMode } from "../config/store";

/**
 * What names things outside this repository: the backend/FT pins (40-hex; a
 * set upstream never built together warns), the EKS version (refused when EKS
 * does not offer it, a warning in extended support) and every CIDR.
 */
export function checkPlatform(config: StackConfig, today: string, add: Add, warn: Add): void {
  const f = platformFindings(config, today);
  for (const e of f.errors) add(e.key, e.value, e.message, e.fix);
  for (const w of f.warnings) warn(w.key, w.value, w.message, w.fix);
}

/** The cluster mode has what it needs: endpoint access that lets the deployer in, the kubeconfig secret, the stack reference. */
export function checkCluster(config: StackConfig, secrets: SecretPresence, add: Add): void {
  const c = config.cluster;
  if (c.mode === "create") {
    const access = { access: c.endpointAccess, publicAccessCidrs: c.endpointPublicAccessCidrs };
    // Problems of the build.sshAllowedCidrs default are already reported by the build checks.
    for (const p of endpointAccessProblems({ ...access, deployerCidrs: config.build.sshAllowedCidrs }))
      if (p.key !== "build.sshAllowedCidrs") add(p.key, p.value, p.message, p.fix);
  }
  if (c.mode === "kubeconfig" && !secrets.kubeconfig) {
    add(
      "kubeconfig",
      undefined,
      "is required when cluster.mode is kubeconfig",
      `pulumi config set --secret ${PROJECT}:kubeconfig "$(cat kubeconfig.yaml)"`,
    );
  }
  if (c.mode === "stackReference" && !c.stackReference) {
    add(
      "cluster.stackReference",
      c.stackReference,
      "is required when cluster.mode is stackReference",
      "set it to <org>/<project>/<stack> of the stack that owns the cluster",
    );
  }
  if (c.mode !== "stackReference" && c.stackReference) {
    add(
      "cluster.stackReference",
      c.stackReference,
      `is set but cluster.mode is ${c.mode}`,
      "set cluster.mode stackReference, or remove it",
    );
  }
  checkStore(config, add);
}

/** serving.store: managed needs the stack's own cluster; the volume settings belong to inCluster only. */
function checkStore(config: StackConfig, add: Add): void {
  const store = config.serving.store;
  const mode = storeMode(config);
  if (mode === "managed" && config.cluster.mode !== "create") {
    add(
      "serving.store.mode",
      store.mode,
      `is managed but cluster.mode is ${config.cluster.mode}: ElastiCache admits only the nodes of a cluster this stack creates (their security group)`,
      "use mode inCluster (a Valkey Deployment beside the gateway) or none (limits per gateway pod)",
    );
  }
  if (mode === "inCluster" && config.cluster.mode === "create" && store.storageClassName === undefined) {
    add(
      "serving.store.mode",
      store.mode,
      "is inCluster but the cluster this stack creates has no storage driver or default StorageClass for the store's volume (its claim would stay Pending)",
      "use mode managed (ElastiCache Serverless, the default here), none, or name a StorageClass you installed in serving.store.storageClassName",
    );
  }
  for (const key of ["storageGiB", "storageClassName"] as const) {
    if (store[key] !== undefined && mode !== "inCluster") {
      add(
        `serving.store.${key}`,
        store[key],
        `is set but the store is ${mode}${store.mode === undefined ? ` (the default with cluster.mode ${config.cluster.mode})` : ""}: only an in-cluster Valkey has a volume`,
        `remove it, or set serving.store.mode inCluster`,
      );
    }
  }
}

/** The network mode and its ids or CIDR agree: existing takes a VPC and subnets, create a /16 to /20 range. */
export function checkNetwork(config: StackConfig, add: Add): void {
  const n = config.network;
  if (n.mode === "existing") {
    if (!n.vpcId)
      add("network.vpcId", n.vpcId, "is required when network.mode is existing", "set the id of the VPC (vpc-...)");
    if (n.publicSubnetIds.length === 0)
      add(
        "network.publicSubnetIds",
        n.publicSubnetIds,
        "needs at least one public subnet for the builder",
        "list public subnet ids of the VPC",
      );
    if (n.privateSubnetIds.length < 2) {
      add(
        "network.privateSubnetIds",
        n.privateSubnetIds,
        "needs private subnets in at least two AZs for EKS",
        "list at least two private subnet ids in different AZs",
      );
    }
  } else {
    if (n.vpcId || n.publicSubnetIds.length > 0 || n.privateSubnetIds.length > 0) {
      add(
        "network.mode",
        n.mode,
        "is create but VPC or subnet ids are set",
        "set network.mode existing to use them, or remove the ids",
      );
    }
    const prefix = vpcPrefix(n.vpcCidr);
    if (prefix < VPC_PREFIX_RANGE.min || prefix > VPC_PREFIX_RANGE.max) {
      add(
        "network.vpcCidr",
        n.vpcCidr,
        `has a /${prefix} prefix; private (prefix+3) and public (prefix+8) subnets for every AZ need /16 to /20`,
        "use a /16 to /20 CIDR such as 10.42.0.0/16",
      );
    }
  }
}

/** serving.autoscaling: the rules that need no model (replicas given too, min/max, cluster mode, capacity, a fixed size of 0). */
export function checkAutoscaling(raw: Record<string, unknown>, config: StackConfig, add: Add): void {
  const rawServing = raw.serving;
  // The schema's default hides whether replicas was given: look at the raw value.
  const replicasSet = rawServing !== null && typeof rawServing === "object" && "replicas" in rawServing;
  for (const p of [
    ...autoscalingProblems(config.serving.autoscaling, { replicasSet, clusterMode: config.cluster.mode }),
    ...fixedSizeProblems(config.serving.replicas, config.serving.autoscaling),
  ])
    add(p.key, p.value, p.message, p.fix);
}
