/**
 * The vendored price table (infra/data/prices/aws.json) as typed data, and the
 * lookups the estimate makes: an instance type's hourly price, a unit's price,
 * each with the source it was read from. A region or an instance type the table
 * lacks is reported, never guessed: the caller turns the miss into a warning
 * and leaves that line unpriced.
 *
 * The table's shape is checked when it is read (zod), so a hand edit or a
 * refresh that drops a unit fails here, not as a NaN in a preview.
 * Pure: the JSON is imported, nothing is fetched.
 */
import { z } from "zod";
import table from "../data/prices/aws.json";

/** AWS's month for hourly prices (its pricing pages and calculator use 730 h: 8,760 h / 12). */
export const HOURS_PER_MONTH = 730;

/** The priced units besides EC2 instances: the keys of a region's `units`. */
export const UNIT_KEYS = [
  "eksClusterHour",
  "eksClusterHourExtendedSupport",
  "natGatewayHour",
  "natGatewayGb",
  "nlbHour",
  "nlbLcuHour",
  "publicIpv4Hour",
  "ebsGp3GbMonth",
  "ebsGp3IopsMonth",
  "ebsGp3ThroughputMonth",
  "ecrStorageGbMonth",
  "valkeyServerlessGbHour",
  "valkeyServerlessMillionEcpu",
  "kmsKeyMonth",
] as const;
export type UnitKey = (typeof UNIT_KEYS)[number];

const sourceSchema = z.object({
  title: z.string(),
  url: z.string(),
  version: z.string(),
  /** When the source took the prices (ISO date, or a month). */
  taken: z.string(),
  /** When this table read the source. */
  read: z.string(),
  method: z.string(),
});

const unitSchema = z.object({ usd: z.number().nonnegative(), unit: z.string(), source: z.string() });

const regionSchema = z.object({
  ec2OnDemandHourly: z.object({ source: z.string(), usd: z.record(z.string(), z.number().positive()) }),
  /** Instance types the source has no on-demand price for in this region, with the reason. */
  ec2NotOnDemand: z.record(z.string(), z.string()),
  units: z.object(Object.fromEntries(UNIT_KEYS.map((k) => [k, unitSchema])) as Record<UnitKey, typeof unitSchema>),
});

export const priceTableSchema = z.object({
  schemaVersion: z.literal(1),
  currency: z.literal("USD"),
  note: z.string(),
  sources: z.record(z.string(), sourceSchema),
  regions: z.record(z.string(), regionSchema),
  spot: z.string(),
});

export type PriceTable = z.infer<typeof priceTableSchema>;
export type PriceSource = z.infer<typeof sourceSchema>;
export type RegionPrices = z.infer<typeof regionSchema>;

/** The vendored table, checked once. */
export const PRICE_TABLE: PriceTable = priceTableSchema.parse(table);

/** A price with the id of the source it came from (a key of the table's `sources`). */
export interface Priced {
  usd: number;
  source: string;
}

/** The prices of one region, or why there are none. */
export type RegionLookup = { ok: true; region: string; prices: RegionPrices } | { ok: false; warning: string };

export function regionPrices(region: string | undefined, t: PriceTable = PRICE_TABLE): RegionLookup {
  if (!region)
    return { ok: false, warning: "the stack sets no aws:region: nothing is priced (set aws:region in its stack file)" };
  const prices = t.regions[region];
  if (!prices)
    return {
      ok: false,
      warning: `the price table (infra/data/prices/aws.json) has no prices for ${region}: nothing is priced; add the region with scripts/prices/refresh.ts --region ${region}`,
    };
  return { ok: true, region, prices };
}

/** The hourly on-demand price of an instance type, or why there is none. */
export function instanceHourly(r: RegionPrices, instanceType: string): Priced | { missing: string } {
  const usd = r.ec2OnDemandHourly.usd[instanceType];
  if (usd !== undefined) return { usd, source: r.ec2OnDemandHourly.source };
  return { missing: r.ec2NotOnDemand[instanceType] ?? "not in the price table" };
}

export function unitPrice(r: RegionPrices, key: UnitKey): Priced {
  const u = r.units[key];
  return { usd: u.usd, source: u.source };
}
