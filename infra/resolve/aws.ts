/**
 * What AWS's geography and its controllers' conventions refuse, refused at
 * preview with the key, the value and the fix: a Region that does not exist,
 * an ARN from another Region or partition than the stack's, a created VPC
 * that must span an Availability Zone where EKS places no control-plane
 * subnets, tag keys AWS treats as one (IAM compares keys without case, the
 * stack's own tags included), and tag keys AWS, Kubernetes, EKS or Karpenter
 * keep for themselves. The facts are data with their sources
 * (infra/data/aws/, read through infra/config/awsFacts.ts).
 *
 * These rules are about the stack, not one model: resolveStack runs them once.
 */
import { closest } from "fastest-levenshtein";
import { PROGRAM_TAG_KEYS, ROLE_TAG_KEYS } from "../tags";
import {
  AWS_REGIONS,
  EKS_UNSUPPORTED_AZS,
  RESERVED_TAG_KEYS,
  allRegions,
  eksUnsupportedAzIds,
  eksUsableAzCount,
  regionPartition,
  reservedTagPrefix,
} from "../config/awsFacts";
import { AWS_TAGS, IAM_TAG_KEY_CASE } from "../config/limits";
import type { StackConfig } from "../config/schema";
import type { Add } from "../config/schema";

const cite = (c: { source: string; read: string }) => `(${c.source}, read ${c.read})`;

/** `aws:region` names a Region AWS has; undefined (unset) is left to the provider, which asks for one. */
export function checkRegion(region: string | undefined, addRaw: Add): void {
  if (region === undefined || regionPartition(region) !== undefined) return;
  const near = closest(region, allRegions());
  addRaw(
    "aws:region",
    region,
    `is not an AWS Region ${cite(AWS_REGIONS)}`,
    `did you mean ${near}? Set it with \`pulumi config set aws:region <code>\`; a Region AWS opened after ${AWS_REGIONS.read} goes into infra/data/aws/regions.json first`,
  );
}

/** `arn:<partition>:<service>:<region>:…`: the partition and Region an ARN names (Region empty for global services). */
function arnPlace(arn: string): { partition: string; region: string } | undefined {
  const parts = arn.split(":");
  if (parts.length < 6 || parts[0] !== "arn") return undefined;
  return { partition: parts[1] ?? "", region: parts[3] ?? "" };
}

/**
 * Regional ARNs name the stack's Region: a load balancer takes only an ACM
 * certificate of its own Region, and no resource reaches across partitions.
 */
export function checkRegionalArns(config: StackConfig, region: string | undefined, add: Add): void {
  const partition = region ? regionPartition(region) : undefined;
  if (!region || !partition) return; // checkRegion reports an unknown Region; unset, nothing to compare with
  const arns: Array<[key: string, arn: string | undefined, what: string]> = [
    [
      "serving.tlsCertificateArn",
      config.serving.tlsCertificateArn,
      "the load balancer's TLS listener takes a certificate",
    ],
  ];
  for (const [key, arn, what] of arns) {
    const place = arn ? arnPlace(arn) : undefined;
    if (!arn || !place) continue;
    if (place.partition !== partition)
      add(
        key,
        arn,
        `is in partition ${place.partition}, and the stack's Region ${region} is in ${partition}`,
        `use an ARN of ${partition} (${region})`,
      );
    else if (place.region !== region)
      add(
        key,
        arn,
        `is in Region ${place.region}, and the stack deploys to ${region}: ${what} of its own Region only`,
        `request or import the certificate in ACM in ${region} and give its ARN (arn:${partition}:acm:${region}:…)`,
      );
  }
}

/**
 * A created VPC spans the first `network.availabilityZones` AZs of the
 * account (awsx); when the Region has fewer AZs where EKS places control-plane
 * subnets, one of them is refused by EKS whatever the account's AZ mapping.
 * (Which AZ a name is in each account is checked at deploy, when the names are
 * known: components/network.ts.)
 */
export function checkEksZones(config: StackConfig, region: string | undefined, add: Add): void {
  if (!region || config.cluster.mode !== "create" || config.network.mode !== "create") return;
  const usable = eksUsableAzCount(region);
  const n = config.network.availabilityZones;
  if (usable === undefined || n <= usable) return;
  add(
    "network.availabilityZones",
    n,
    `spans ${n} AZs of ${region}, which has ${usable} where EKS places control-plane subnets (not ${eksUnsupportedAzIds(region).join(", ")}) ${cite(EKS_UNSUPPORTED_AZS)}`,
    `use at most ${usable}, or network.mode existing with private subnets outside ${eksUnsupportedAzIds(region).join(", ")}`,
  );
}

/**
 * Tag keys that differ only in case are one key to IAM (the stack tags its
 * roles with every tag): two of them in `tags`, or one that is the stack's own
 * key in another case, would overwrite each other.
 */
export function checkTagKeyCase(config: StackConfig, add: Add): void {
  const own = [...PROGRAM_TAG_KEYS, ...ROLE_TAG_KEYS];
  const seen = new Map<string, string>();
  for (const key of Object.keys(config.tags)) {
    const lower = key.toLowerCase();
    const first = seen.get(lower);
    if (first !== undefined)
      add(
        `tags.${key}`,
        key,
        `and tags.${first} differ only in case; AWS compares tag keys without case on IAM roles ${cite(IAM_TAG_KEY_CASE)}, so one would overwrite the other`,
        `keep one of ${first} and ${key}`,
      );
    else seen.set(lower, key);
    // A reserved key (the role tags are kubernetes.io/…) is reported once, by checkReservedTagKeys.
    const mine = reservedTagPrefix(key) ? undefined : own.find((k) => k !== key && k.toLowerCase() === lower);
    if (mine)
      add(
        `tags.${key}`,
        key,
        `is the stack's own tag ${mine} in another case; AWS compares tag keys without case on IAM roles ${cite(IAM_TAG_KEY_CASE)}, so the two would collide`,
        `remove it (the stack sets ${mine} itself), or use another key`,
      );
  }
}

/** Tag keys Kubernetes, EKS and Karpenter keep for themselves (aws: is checkTags'). */
export function checkReservedTagKeys(config: StackConfig, add: Add): void {
  for (const key of Object.keys(config.tags)) {
    const reserved = reservedTagPrefix(key);
    if (!reserved || reserved.prefix.toLowerCase() === AWS_TAGS.reservedPrefix) continue;
    add(
      `tags.${key}`,
      key,
      `starts with ${reserved.prefix}, which ${reserved.owner} keeps for itself: ${reserved.why} (${reserved.source}, read ${RESERVED_TAG_KEYS.read})`,
      `rename it to a key of your own, without the ${reserved.prefix} prefix; the stack sets the tags these controllers need itself`,
    );
  }
}
