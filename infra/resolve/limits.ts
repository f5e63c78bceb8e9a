/**
 * What AWS, Kubernetes or the Hugging Face Hub would refuse at deploy time,
 * refused at preview instead: tag rules, volume sizes, repo ids, namespace
 * names, node group sizes, security group rule counts, key types. Each rule
 * takes its numbers from infra/config/limits.ts, which cites where they come
 * from. Also the shapes that deploy but cannot be what was meant (warnings):
 * an open CIDR on an internal load balancer, a public VPC range, a repo that
 * is not the preset's.
 */
import ipaddr from "ipaddr.js";
import type { GpuInstance } from "../catalog/gpus";
import { MODEL_PRESETS, findPreset } from "../model/catalog";
import { PROGRAM_TAG_KEYS, ROLE_TAG_KEYS } from "../tags";
import { MONITORING_NAMESPACE } from "../config/autoscaling";
import {
  AWS_TAGS,
  EBS_GP3_GIB,
  EC2_KEY_PAIRS,
  ECR_REPOSITORY_NAME,
  EKS_QUOTAS,
  HF_REPO_ID,
  K8S_NAMES,
  K8S_NAMESPACES,
  PRIVATE_RANGES,
  PULUMI_STACK_REFERENCE,
  VPC_QUOTAS,
} from "../config/limits";
import { namePrefix, repositoryNames, serverRepositoryName } from "../naming";

import type { StackConfig } from "../config/schema";

import { workloadName, gatewayName } from "../conventions/workload";
import type { Add } from "../config/schema";
/** Namespaces the stack installs its own charts into (components/scaling.ts): a second Namespace of that name fails. */
export const STACK_NAMESPACES = [MONITORING_NAMESPACE, "keda"] as const;

const cite = (c: { source: string; read: string }) => `(${c.source}, read ${c.read})`;

/** Tag keys and values AWS accepts, and at most 50 per resource counting the program's own. */
export function checkTags(config: StackConfig, add: Add, warn: Add): void {
  const t = AWS_TAGS;
  for (const [key, value] of Object.entries(config.tags)) {
    const at = `tags.${key}`;
    const fixKey = `rename it: at most ${t.maxKeyChars} letters, digits, spaces or _ . : / = + - @, not starting with aws:`;
    if (key.length === 0) add("tags", key, "has an empty tag key", fixKey);
    if (key.toLowerCase().startsWith(t.reservedPrefix))
      add(at, key, `uses the prefix aws:, reserved for AWS in any case ${cite(t)}`, fixKey);
    if (key.length > t.maxKeyChars)
      add(at, key, `is a tag key of ${key.length} characters; AWS allows ${t.maxKeyChars} ${cite(t)}`, fixKey);
    if (!t.allowed.test(key)) add(at, key, `has characters AWS refuses in a tag key ${cite(t)}`, fixKey);
    const fixValue = `use at most ${t.maxValueChars} letters, digits, spaces or _ . : / = + - @, not starting with aws:`;
    if (value.toLowerCase().startsWith(t.reservedPrefix))
      add(at, value, `has a value starting with aws:, reserved for AWS in any case ${cite(t)}`, fixValue);
    if (value.length > t.maxValueChars)
      add(
        at,
        value,
        `is ${value.length} characters; AWS allows ${t.maxValueChars} in a tag value ${cite(t)}`,
        fixValue,
      );
    if (!t.allowed.test(value)) add(at, value, `has characters AWS refuses in a tag value ${cite(t)}`, fixValue);
    checkLoadBalancerTag(key, value, add);
    if (PROGRAM_TAG_KEYS.includes(key) || ROLE_TAG_KEYS.includes(key))
      warn(
        at,
        value,
        "is a key the stack sets itself; the stack's value replaces this one",
        "remove it, or use another key",
      );
  }
  const keys = new Set([...Object.keys(config.tags), ...PROGRAM_TAG_KEYS]);
  const counted = [...keys].filter((k) => !k.toLowerCase().startsWith(t.reservedPrefix)).length;
  if (counted > t.maxPerResource) {
    const room = t.maxPerResource - PROGRAM_TAG_KEYS.length;
    add(
      "tags",
      `${Object.keys(config.tags).length} tags`,
      `put ${counted} tags on a resource with the stack's own ${PROGRAM_TAG_KEYS.length} (${PROGRAM_TAG_KEYS.join(", ")}); AWS allows ${t.maxPerResource} ${cite(t)}`,
      `keep at most ${room} entries in tags`,
    );
  }
}

/**
 * The stack's tags reach the gateway's NLB through one `key=value,…`
 * annotation (render/gatewayManifests.ts loadBalancerTagsAnnotation), which
 * the AWS Load Balancer Controller splits at commas (AWS refuses them in
 * tags), trims pair by pair and cuts at the first `=`: a key with `=` or a
 * tag with padding spaces would reach the NLB as another tag than every other
 * resource carries, and a cost report by tag would split the stack.
 */
function checkLoadBalancerTag(key: string, value: string, add: Add): void {
  const at = `tags.${key}`;
  const why = "the gateway's NLB takes the stack's tags from the AWS Load Balancer Controller's key=value annotation";
  if (key.includes("="))
    add(at, key, `has "=" in its key: ${why}, which cuts each pair at its first "="`, "rename the key without =");
  if (key.trim() !== key)
    add(at, key, `starts or ends with a space: ${why}, which trims it`, "remove the key's leading and trailing spaces");
  if (value.trim() !== value)
    add(
      at,
      value,
      `starts or ends with a space: ${why}, which trims it`,
      "remove the value's leading and trailing spaces",
    );
}

/** Root volumes are gp3: 1 GiB to 64 TiB. */
export function checkVolumes(config: StackConfig, add: Add): void {
  const v = EBS_GP3_GIB;
  const sizes: Array<[string, number | undefined]> = [
    ["build.builderDiskGiB", config.build.builderDiskGiB],
    ["cluster.nodeRootVolumeGiB", config.cluster.nodeRootVolumeGiB],
  ];
  for (const [key, size] of sizes) {
    if (size === undefined) continue;
    if (size < v.min || size > v.max)
      add(
        key,
        size,
        `is outside gp3's ${v.min} to ${v.max} GiB ${cite(v)}`,
        `use ${v.min} to ${v.max} GiB, or unset it for the size the model needs`,
      );
  }
}

/** The repo id has the shape the Hub accepts, and names the preset's model where the catalog knows it. */
export function checkRepoId(config: StackConfig, add: Add, warn: Add): void {
  const src = config.model.source;
  if (!src || !("huggingface" in src)) return;
  const repo = src.huggingface.repo;
  const key = "model.source.huggingface.repo";
  const h = HF_REPO_ID;
  const parts = repo.split("/");
  const fix = "give <owner>/<name> as on the model's Hugging Face page, e.g. EleutherAI/gpt-j-6b";
  if (parts.length !== 2) {
    add(key, repo, `is not <owner>/<name> (${parts.length - 1} '/') ${cite(h)}`, fix);
    return;
  }
  const [owner = "", name = ""] = parts;
  const bad = [owner, name].filter(
    (p) => !h.part.test(p) || p.includes("--") || p.includes("..") || p.endsWith(".git"),
  );
  if (bad.length > 0)
    add(
      key,
      repo,
      `has a part the Hub refuses (${bad.join(", ")}): letters, digits, '-', '_', '.', not at either end, no '--' or '..', not ending .git ${cite(h)}`,
      fix,
    );
  if (name.length > h.maxNameChars)
    add(key, repo, `has a name of ${name.length} characters; the Hub allows ${h.maxNameChars} ${cite(h)}`, fix);

  const preset = config.model.preset ? findPreset(config.model.preset) : undefined;
  if (!preset || preset.archive || preset.repo.toLowerCase() === repo.toLowerCase()) return;
  const other = MODEL_PRESETS.find((p) => p.repo.toLowerCase() === repo.toLowerCase());
  if (other && other.family !== preset.family) {
    add(
      key,
      repo,
      `is the catalog's ${other.name} (${other.family}) but model.preset ${preset.name} is ${preset.family}: the converter and architecture would not match the weights`,
      `set model.preset ${other.name}, or the repo of ${preset.name} (${preset.repo})`,
    );
    return;
  }
  warn(
    key,
    repo,
    `is not preset ${preset.name}'s repo (${preset.repo}); the preset's ${preset.family} architecture numbers are used, and a different model fails at conversion`,
    `use ${preset.repo}, or drop model.preset and set model.family and model.arch from this repo's config.json`,
  );
}

/** The namespace the stack creates is a DNS-1123 label that no cluster or stack component already owns. */
export function checkNamespace(config: StackConfig, add: Add): void {
  const ns = config.serving.namespace;
  const k = K8S_NAMESPACES;
  const fix = "use a name of your own, e.g. triton";
  if (ns.length > k.maxChars)
    add(
      "serving.namespace",
      ns,
      `is ${ns.length} characters; a DNS-1123 label has at most ${k.maxChars} ${cite(k)}`,
      fix,
    );
  if ((k.initial as readonly string[]).includes(ns) || ns.startsWith(k.reservedPrefix))
    add(
      "serving.namespace",
      ns,
      `is a Kubernetes system namespace (${k.initial.join(", ")}, and the kube- prefix is reserved) ${cite(k)}: the stack creates and deletes its namespace`,
      fix,
    );
  if ((STACK_NAMESPACES as readonly string[]).includes(ns))
    add("serving.namespace", ns, "is a namespace the stack creates for its own charts (monitoring, keda)", fix);
}

/** A fixed replica count needs a managed node group of (replicas + 1 surge) / pods per node nodes: EKS caps it. */
export function checkNodeGroupSize(config: StackConfig, instance: GpuInstance, add: Add): void {
  const s = config.serving;
  if (config.cluster.mode !== "create" || s.autoscaling) return;
  const podsPerNode = Math.floor(instance.gpuCount / s.tensorParallel);
  if (podsPerNode < 1) return; // the tensor-parallel rule reports it
  const q = EKS_QUOTAS;
  const nodes = Math.ceil((s.replicas + 1) / podsPerNode);
  if (nodes > q.nodesPerManagedNodeGroup) {
    const most = q.nodesPerManagedNodeGroup * podsPerNode - 1;
    add(
      "serving.replicas",
      s.replicas,
      `needs ${nodes} ${instance.type} nodes (${podsPerNode} pod(s) per node, plus one for the rolling update) but an EKS managed node group holds ${q.nodesPerManagedNodeGroup} by default ${cite(q)}`,
      `use at most ${most} replicas, raise the quota "Nodes per managed node group" first, or use serving.autoscaling (Karpenter)`,
    );
  }
}

/** The gpt_gemm batch is the largest batch served: tuning beyond serving.maxBatchSize is never used. */
export function checkGemm(config: StackConfig, add: Add): void {
  const b = config.gemm.batchSize;
  const max = config.serving.maxBatchSize;
  if (b !== undefined && b > max)
    add(
      "gemm.batchSize",
      b,
      `exceeds serving.maxBatchSize (${max}): gpt_gemm would tune batch sizes the server never forms, and the tuning run takes longer`,
      `use at most ${max}, or unset it (it defaults to serving.maxBatchSize)`,
    );
}

/** CIDR lists within the quotas of what they become: security group rules, EKS public access CIDRs. */
export function checkCidrCounts(config: StackConfig, add: Add): void {
  const sg = VPC_QUOTAS.inboundRulesPerSecurityGroup;
  // The load balancer's listener is one port (443 with TLS, else 80): one rule per CIDR.
  const lists: Array<[string, readonly string[]]> = [
    ["serving.allowedCidrs", config.serving.allowedCidrs],
    ["build.sshAllowedCidrs", config.build.sshAllowedCidrs],
  ];
  for (const [key, cidrs] of lists) {
    if (cidrs.length > sg)
      add(
        key,
        `${cidrs.length} CIDRs`,
        `become ${cidrs.length} inbound rules of one security group; the quota is ${sg} ${cite(VPC_QUOTAS)}`,
        `merge them into at most ${sg} ranges, or raise the quota first`,
      );
  }
  const eksCidrs = config.cluster.endpointPublicAccessCidrs;
  const max = EKS_QUOTAS.publicAccessCidrsPerCluster;
  if (config.cluster.mode === "create" && eksCidrs && eksCidrs.length > max)
    add(
      "cluster.endpointPublicAccessCidrs",
      `${eksCidrs.length} CIDRs`,
      `exceeds EKS's ${max} public endpoint access CIDRs per cluster (not adjustable) ${cite(EKS_QUOTAS)}`,
      `merge them into at most ${max} ranges, or use cluster.endpointAccess private`,
    );
}

/** EC2 imports RSA and ED25519 keys only. */
export function checkSshKey(config: StackConfig, add: Add): void {
  const key = config.build.sshPublicKey;
  if (key === undefined) return;
  const type = key.trim().split(/\s+/)[0] ?? "";
  if (!(EC2_KEY_PAIRS.types as readonly string[]).includes(type))
    add(
      "build.sshPublicKey",
      `${type} …`,
      `is not an OpenSSH RSA or ED25519 public key, the only kinds EC2 imports ${cite(EC2_KEY_PAIRS)}`,
      "give the one line of ~/.ssh/id_ed25519.pub (ssh-keygen -t ed25519), or unset it to generate a key pair",
    );
}

const OPEN = ["0.0.0.0/0"];

/** Shapes AWS accepts that cannot be what was meant. */
export function checkExposureWarnings(config: StackConfig, warn: Add): void {
  const s = config.serving;
  if (s.loadBalancerScheme === "internal" && s.allowedCidrs.some((c) => OPEN.includes(c)))
    warn(
      "serving.allowedCidrs",
      s.allowedCidrs,
      "opens the internal load balancer to every address that can route to the VPC (peered networks, VPN, Transit Gateway)",
      "list the client CIDRs (the VPC's, the office's), or leave it empty for the VPC only",
    );
  if (config.network.mode === "create" && !isPrivateRange(config.network.vpcCidr))
    warn(
      "network.vpcCidr",
      config.network.vpcCidr,
      `is not private address space (RFC 1918 or RFC 6598: ${PRIVATE_RANGES.ranges.join(", ")}) ${cite(PRIVATE_RANGES)}: the VPC would shadow those public addresses for everything in it`,
      "use a private range such as 10.42.0.0/16",
    );
}

function isPrivateRange(cidr: string): boolean {
  if (!ipaddr.isValidCIDR(cidr)) return true; // the schema reports a malformed CIDR
  const [addr, prefix] = ipaddr.IPv4.parseCIDR(cidr);
  return PRIVATE_RANGES.ranges.some((r) => {
    const [net, bits] = ipaddr.IPv4.parseCIDR(r);
    return prefix >= bits && addr.match(net, bits);
  });
}

/**
 * Names the program builds from the stack name and model.name, computed with
 * the program's own functions (naming.ts, the manifest renderers): the ECR
 * repositories and the Kubernetes Service/Deployment names. `addName` reports
 * under the key it is given as is (the stack name is not a config key).
 */
export function checkNames(
  stackName: string,
  modelName: string,
  addName: (key: string, value: unknown, message: string, fix: string) => void,
  add: Add,
): void {
  const e = ECR_REPOSITORY_NAME;
  const refused = (repo: string) => repo.length < e.minChars || repo.length > e.maxChars || !e.pattern.test(repo);
  let stackNamesOk = true;
  for (const repo of Object.values(repositoryNames(namePrefix(stackName)))) {
    if (refused(repo)) stackNamesOk = false;
    if (refused(repo))
      addName(
        "stack name",
        stackName,
        `makes the ECR repository name ${JSON.stringify(repo)}, which ECR refuses: ${e.minChars} to ${e.maxChars} lowercase letters and digits, groups joined by one '.', '_' or '-' ${cite(e)}`,
        "use a stack name that starts and ends with a letter or digit, with no two of '-', '_', '.' in a row",
      );
  }
  // A model's own server repository in a stack of several (plan/registry.ts); the id may be any entry's.
  const own = serverRepositoryName(namePrefix(stackName), modelName, false);
  if (stackNamesOk && refused(own))
    add(
      "model.name",
      modelName,
      `makes the ECR repository name ${JSON.stringify(own)} (the model's own server images in a stack of several models), which ECR refuses: ${e.minChars} to ${e.maxChars} lowercase letters and digits, groups joined by one '.', '_' or '-' ${cite(e)}`,
      "use an id whose groups of letters and digits are joined by one '-' (no '--')",
    );
  const k = K8S_NAMES;
  for (const name of [workloadName({ modelName }), gatewayName({ modelName })]) {
    if (name.length > k.maxLabelChars || !k.dns1035Label.test(name))
      add(
        "model.name",
        modelName,
        `makes the Kubernetes Service name ${JSON.stringify(name)}, which is not a DNS-1035 label of at most ${k.maxLabelChars} characters ${cite(k)}`,
        `use a shorter model.name (at most ${k.maxLabelChars - (name.length - modelName.length)} characters), ending with a letter or digit`,
      );
  }
}

/** cluster.stackReference has a shape Pulumi parses: `<stack>`, `<org>/<stack>` or `<org>/<project>/<stack>`. */
export function checkStackReference(config: StackConfig, add: Add): void {
  const ref = config.cluster.stackReference;
  if (ref === undefined || ref === "") return;
  const r = PULUMI_STACK_REFERENCE;
  const parts = ref.split("/");
  const ok = parts.length <= r.maxParts && parts.every((p) => p.length <= r.maxPartChars && r.part.test(p));
  if (!ok)
    add(
      "cluster.stackReference",
      ref,
      `is not a stack reference Pulumi parses: up to ${r.maxParts} '/'-separated parts of letters, digits, '-', '_' or '.', each at most ${r.maxPartChars} characters ${cite(r)}`,
      "set it to <org>/<project>/<stack> of the stack that owns the cluster",
    );
}
