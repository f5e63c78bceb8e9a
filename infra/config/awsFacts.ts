/**
 * AWS facts the preview checks need, as vendored data (infra/data/aws/*.json,
 * each with the page it was read from and the date): the Region codes, the
 * Availability Zone IDs where EKS places no control-plane subnets, and the tag
 * keys AWS, Kubernetes, EKS and Karpenter keep for themselves. The shapes are
 * checked when read (zod), so a hand edit that breaks one fails here.
 *
 * Pure: the JSON is imported, nothing is fetched.
 */
import { z } from "zod";
import eksAzs from "../data/aws/eks-unsupported-azs.json";
import regions from "../data/aws/regions.json";
import reservedTags from "../data/aws/reserved-tag-keys.json";

const cited = { source: z.string().min(1), read: z.string().regex(/^\d{4}-\d{2}-\d{2}$/) };

export const AWS_REGIONS = z
  .object({ ...cited, note: z.string(), partitions: z.record(z.string(), z.array(z.string()).min(1)) })
  .parse(regions);

export const EKS_UNSUPPORTED_AZS = z
  .object({
    ...cited,
    note: z.string(),
    regions: z.record(z.string(), z.object({ unsupported: z.array(z.string()).min(1), azIds: z.array(z.string()) })),
  })
  .parse(eksAzs);

export const RESERVED_TAG_KEYS = z
  .object({
    note: z.string(),
    read: cited.read,
    prefixes: z.array(z.object({ prefix: z.string().min(1), owner: z.string(), why: z.string(), source: z.string() })),
  })
  .parse(reservedTags);

/** Every Region code, and the partition each belongs to. */
export function regionPartition(region: string): string | undefined {
  return Object.entries(AWS_REGIONS.partitions).find(([, list]) => list.includes(region))?.[0];
}

export function allRegions(): string[] {
  return Object.values(AWS_REGIONS.partitions).flat().sort();
}

/** The reserved prefix a tag key starts with (compared without case, as AWS compares keys). */
export function reservedTagPrefix(key: string): (typeof RESERVED_TAG_KEYS.prefixes)[number] | undefined {
  const lower = key.toLowerCase();
  return RESERVED_TAG_KEYS.prefixes.find((p) => lower.startsWith(p.prefix.toLowerCase()));
}

/** The AZ IDs of a region where EKS places no control-plane subnets (empty when it has none on record). */
export function eksUnsupportedAzIds(region: string): string[] {
  return EKS_UNSUPPORTED_AZS.regions[region]?.unsupported ?? [];
}

/** How many AZs of a region a created VPC can span with every one usable by EKS; undefined when not on record. */
export function eksUsableAzCount(region: string): number | undefined {
  const r = EKS_UNSUPPORTED_AZS.regions[region];
  return r ? r.azIds.filter((id) => !r.unsupported.includes(id)).length : undefined;
}
