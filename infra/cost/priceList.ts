/**
 * Reading AWS's public Price List bulk files (the "offer files" under
 * https://pricing.us-east-1.amazonaws.com/offers/v1.0/aws/index.json) into
 * the vendored table's shape. scripts/prices/refresh.ts downloads; this module
 * only parses and selects, so a small committed fixture in the same format
 * tests it offline (test/data/prices/).
 *
 * The region offer files are read in their CSV form: the regional AmazonEC2
 * file runs to hundreds of MB, past what one JSON.parse can hold, while CSV
 * streams a row at a time. A CSV offer file opens with five metadata rows
 * ("FormatVersion", "Disclaimer", "Publication Date", "Version", "OfferCode",
 * each a name and a value), then a header row, then one row per price
 * dimension: the term (TermType, PricePerUnit, Unit, StartingRange, …) and the
 * product's attributes (Product Family, usageType, Instance Type, …).
 * Columns are matched on their names with case and punctuation dropped, so
 * "Pre Installed S/W" and the JSON attribute "preInstalledSw" are one key.
 *
 * Each unit is picked by its product family and usage type (region-prefixed
 * in the files, e.g. USE1-NatGateway-Hours, so matched on the suffix). Two
 * rows with different prices for one unit are an error, not a choice: the
 * selector is then too loose and must be fixed, never guessed around.
 * Pure.
 */
import type { UnitKey } from "../catalog/prices";

/** The offers the table draws on. */
export const OFFERS = [
  "AmazonEC2",
  "AmazonEKS",
  "AWSELB",
  "AmazonVPC",
  "AmazonECR",
  "AmazonElastiCache",
  "AWSKMS",
] as const;
export type OfferCode = (typeof OFFERS)[number];

/** Column and attribute names compared without case, spaces or punctuation. */
export function columnKey(name: string): string {
  return name.toLowerCase().replace(/[^a-z0-9]/g, "");
}

/** One CSV record (RFC 4180: fields in double quotes, "" for a quote inside one). Price List rows hold no line breaks. */
export function parseCsvLine(line: string): string[] {
  const out: string[] = [];
  let i = 0;
  while (i <= line.length) {
    if (line[i] === '"') {
      let value = "";
      i++;
      for (;;) {
        const q = line.indexOf('"', i);
        if (q < 0) throw new Error(`unterminated quoted field in CSV line: ${line.slice(0, 80)}`);
        value += line.slice(i, q);
        if (line[q + 1] === '"') {
          value += '"';
          i = q + 2;
          continue;
        }
        i = q + 1;
        break;
      }
      out.push(value);
      if (line[i] === ",") i++;
      else if (i < line.length) throw new Error(`text after a quoted field in CSV line: ${line.slice(0, 80)}`);
      else break;
    } else {
      const c = line.indexOf(",", i);
      if (c < 0) {
        out.push(line.slice(i));
        break;
      }
      out.push(line.slice(i, c));
      i = c + 1;
    }
  }
  return out;
}

export interface OfferMeta {
  offerCode: string;
  version: string;
  publicationDate: string;
}

/** A row as column key -> value. */
export type Row = ReadonlyMap<string, string>;

/** A CSV offer file's metadata and rows; feed it the file's lines in order. */
export class OfferCsv {
  readonly meta: Partial<OfferMeta> = {};
  private header: string[] | undefined;
  private readonly rows: Row[] = [];

  constructor(private readonly keep: (row: Row) => boolean = () => true) {}

  line(text: string): void {
    if (!text.trim()) return;
    const fields = parseCsvLine(text.replace(/\r$/, ""));
    if (!this.header) {
      const name = columnKey(fields[0] ?? "");
      const value = fields[1] ?? "";
      if (name === "sku") {
        this.header = fields.map(columnKey);
        return;
      }
      if (name === "offercode") this.meta.offerCode = value;
      else if (name === "version") this.meta.version = value;
      else if (name === "publicationdate") this.meta.publicationDate = value;
      return;
    }
    const row = new Map(this.header.map((h, k) => [h, fields[k] ?? ""]));
    if (this.keep(row)) this.rows.push(row);
  }

  result(): { meta: OfferMeta; rows: Row[] } {
    const { offerCode, version, publicationDate } = this.meta;
    if (!this.header || !offerCode || !version || !publicationDate)
      throw new Error("not a Price List CSV offer file (no OfferCode/Version/Publication Date rows or no SKU header)");
    return { meta: { offerCode, version, publicationDate }, rows: this.rows };
  }
}

/** A filter on column keys: exact values, or patterns. Columns a file lacks are ignored (older files have fewer). */
export type Where = Record<string, string | RegExp>;

function matches(row: Row, where: Where): boolean {
  for (const [k, want] of Object.entries(where)) {
    const v = row.get(k);
    if (v === undefined) continue;
    if (typeof want === "string" ? v !== want : !want.test(v)) return false;
  }
  return true;
}

/** Every price is an on-demand term in an AWS Region (not a Local Zone, Outpost or Wavelength zone), first tier. */
const ON_DEMAND: Where = { termtype: "OnDemand", locationtype: "AWS Region", currency: "USD" };

export interface UnitRule {
  offer: OfferCode;
  where: Where;
  /** Suffix of the region-prefixed usage type. */
  usage: RegExp;
  /** Turns the file's price into the table's unit (e.g. per ECPU -> per million), from the row's Unit. */
  scale?: (unit: string) => number;
}

/**
 * How each table unit is found. The EKS extended-support rate is the
 * standard cluster-hour plus the extendedSupport surcharge (two rows).
 * Usage types marked unchecked were not seen in a real offer file from here
 * (no network): a refresh that finds no row stops and names the rule.
 */
export const UNIT_RULES: Record<Exclude<UnitKey, "eksClusterHourExtendedSupport">, UnitRule> & {
  eksExtendedSupportSurcharge: UnitRule;
} = {
  eksClusterHour: { offer: "AmazonEKS", where: {}, usage: /AmazonEKS-Hours:perCluster$/ },
  eksExtendedSupportSurcharge: { offer: "AmazonEKS", where: {}, usage: /AmazonEKS-Hours:extendedSupport$/ },
  natGatewayHour: { offer: "AmazonEC2", where: { productfamily: "NAT Gateway" }, usage: /NatGateway-Hours$/ },
  natGatewayGb: { offer: "AmazonEC2", where: { productfamily: "NAT Gateway" }, usage: /NatGateway-Bytes$/ },
  nlbHour: { offer: "AWSELB", where: { productfamily: "Load Balancer-Network" }, usage: /LoadBalancerUsage$/ },
  nlbLcuHour: { offer: "AWSELB", where: { productfamily: "Load Balancer-Network" }, usage: /LCUUsage$/ },
  publicIpv4Hour: { offer: "AmazonVPC", where: {}, usage: /PublicIPv4:InUseAddress$/ },
  ebsGp3GbMonth: { offer: "AmazonEC2", where: { volumeapiname: "gp3" }, usage: /EBS:VolumeUsage\.gp3$/ },
  ebsGp3IopsMonth: { offer: "AmazonEC2", where: { volumeapiname: "gp3" }, usage: /EBS:VolumeP-IOPS\.gp3$/ },
  // Unchecked: the unit may be GiBps-month (then 1/1024 of it per MiB/s).
  ebsGp3ThroughputMonth: {
    offer: "AmazonEC2",
    where: { volumeapiname: "gp3" },
    usage: /EBS:VolumeP-Throughput\.gp3$/,
    scale: (unit) => (/gibps/i.test(unit) ? 1 / 1024 : 1),
  },
  ecrStorageGbMonth: { offer: "AmazonECR", where: {}, usage: /TimedStorage-ByteHrs$/ },
  // Unchecked usage types (ElastiCache Serverless for Valkey).
  valkeyServerlessGbHour: { offer: "AmazonElastiCache", where: { cacheengine: /valkey/i }, usage: /CachedData$/ },
  valkeyServerlessMillionEcpu: {
    offer: "AmazonElastiCache",
    where: { cacheengine: /valkey/i },
    usage: /(ECPU|ProcessingUnits)$/,
    scale: (unit) => (/million/i.test(unit) ? 1 : 1e6),
  },
  // Unchecked usage type (a customer managed key's monthly fee; requests are KMS-Requests, not priced here).
  kmsKeyMonth: { offer: "AWSKMS", where: {}, usage: /KMS-Keys$/ },
};

/** EC2 instance rows: on-demand Linux, shared tenancy, no pre-installed software, capacity used (not a reservation's idle part). */
export const INSTANCE_WHERE: Where = {
  productfamily: "Compute Instance",
  tenancy: "Shared",
  operatingsystem: "Linux",
  preinstalledsw: "NA",
  capacitystatus: "Used",
  licensemodel: "No License required",
  marketoption: "OnDemand",
  unit: "Hrs",
};

/** Keeps the rows any rule or the instance filter can use (the rest of a multi-GB file is dropped as it streams). */
export function usefulRow(offer: OfferCode, instanceTypes: ReadonlySet<string>): (row: Row) => boolean {
  const rules = Object.values(UNIT_RULES).filter((r) => r.offer === offer);
  return (row) => {
    if (!matches(row, ON_DEMAND) || !["", "0"].includes(row.get("startingrange") ?? "")) return false;
    if (offer === "AmazonEC2" && instanceTypes.has(row.get("instancetype") ?? "") && matches(row, INSTANCE_WHERE))
      return true;
    const usage = row.get("usagetype") ?? "";
    return rules.some((r) => r.usage.test(usage) && matches(row, r.where));
  };
}

function price(row: Row): number {
  const usd = Number(row.get("priceperunit"));
  if (!Number.isFinite(usd))
    throw new Error(`row ${row.get("sku")}: PricePerUnit ${row.get("priceperunit")} is not a number`);
  return usd;
}

/** The one price a rule selects from an offer's rows; undefined when none matches, an error when they disagree. */
export function selectUnit(rule: UnitRule, rows: readonly Row[], what: string): number | undefined {
  const found = rows.filter((r) => rule.usage.test(r.get("usagetype") ?? "") && matches(r, rule.where));
  // Ten significant digits: a per-ECPU price times a million is not exact in binary.
  const prices = [
    ...new Set(found.map((r) => Number((price(r) * (rule.scale?.(r.get("unit") ?? "") ?? 1)).toPrecision(10)))),
  ];
  if (prices.length > 1)
    throw new Error(
      `${what}: ${found.length} rows with different prices (${prices.join(", ")}) match ${rule.usage}; narrow the rule`,
    );
  return prices[0];
}

/** On-demand hourly price per wanted instance type; an error when one type has two prices. */
export function selectInstances(rows: readonly Row[], wanted: readonly string[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const type of wanted) {
    const found = rows.filter((r) => r.get("instancetype") === type && matches(r, INSTANCE_WHERE));
    const prices = [...new Set(found.map(price))];
    if (prices.length > 1) throw new Error(`${type}: ${found.length} on-demand rows with prices ${prices.join(", ")}`);
    if (prices[0] !== undefined) out.set(type, prices[0]);
  }
  return out;
}

/** One region's offers, read. */
export type RegionOffers = ReadonlyMap<OfferCode, { meta: OfferMeta; rows: readonly Row[]; url: string }>;

export interface PriceListSource {
  title: string;
  url: string;
  version: string;
  taken: string;
  read: string;
  method: string;
}

/** The table's entry for one region, and the sources it cites (one per offer file). */
export function regionTable(
  region: string,
  offers: RegionOffers,
  wantedTypes: readonly string[],
  today: string,
): {
  prices: {
    ec2OnDemandHourly: { source: string; usd: Record<string, number> };
    ec2NotOnDemand: Record<string, string>;
    units: Record<UnitKey, { usd: number; unit: string; source: string }>;
  };
  sources: Record<string, PriceListSource>;
  missing: string[];
} {
  const sources: Record<string, PriceListSource> = {};
  const sourceId = (offer: OfferCode) => `price-list:${offer}:${region}`;
  const need = (offer: OfferCode) => {
    const o = offers.get(offer);
    if (!o) throw new Error(`${region}: the ${offer} offer file was not read`);
    sources[sourceId(offer)] = {
      title: `AWS Price List, ${offer}, ${region}`,
      url: o.url,
      version: `${o.meta.offerCode} ${o.meta.version}`,
      taken: o.meta.publicationDate.slice(0, 10),
      read: today,
      method:
        "scripts/prices/refresh.ts: the region's CSV offer file, on-demand terms in an AWS Region, first tier; units by product family and usage type (infra/cost/priceList.ts UNIT_RULES)",
    };
    return o;
  };
  const missing: string[] = [];
  const ec2 = need("AmazonEC2");
  const instances = selectInstances(ec2.rows, wantedTypes);
  const ec2NotOnDemand: Record<string, string> = {};
  for (const t of wantedTypes)
    if (!instances.has(t))
      ec2NotOnDemand[t] =
        `no on-demand Linux shared-tenancy row in AmazonEC2 ${ec2.meta.version} for ${region} (sold through Capacity Blocks or reservations, or not offered there)`;
  const units = {} as Record<UnitKey, { usd: number; unit: string; source: string }>;
  const unitNames: Record<UnitKey, string> = {
    eksClusterHour: "cluster-hour",
    eksClusterHourExtendedSupport: "cluster-hour",
    natGatewayHour: "gateway-hour",
    natGatewayGb: "GB processed",
    nlbHour: "load-balancer-hour",
    nlbLcuHour: "NLCU-hour",
    publicIpv4Hour: "address-hour",
    ebsGp3GbMonth: "GB-month",
    ebsGp3IopsMonth: "IOPS-month above 3,000",
    ebsGp3ThroughputMonth: "MB/s-month above 125",
    ecrStorageGbMonth: "GB-month",
    valkeyServerlessGbHour: "GB-hour (100 MB minimum)",
    valkeyServerlessMillionEcpu: "million ECPUs",
    kmsKeyMonth: "key-month",
  };
  const pick = (name: string, rule: UnitRule): number | undefined => {
    const o = need(rule.offer);
    const usd = selectUnit(rule, o.rows, `${region} ${name}`);
    if (usd === undefined) missing.push(`${name} (${rule.offer}, usage type ${rule.usage})`);
    return usd;
  };
  for (const [key, rule] of Object.entries(UNIT_RULES)) {
    if (key === "eksExtendedSupportSurcharge") continue;
    const usd = pick(key, rule);
    if (usd !== undefined)
      units[key as UnitKey] = { usd, unit: unitNames[key as UnitKey], source: sourceId(rule.offer) };
  }
  const surcharge = pick("eksExtendedSupportSurcharge", UNIT_RULES.eksExtendedSupportSurcharge);
  if (surcharge !== undefined && units.eksClusterHour)
    units.eksClusterHourExtendedSupport = {
      usd: Math.round((units.eksClusterHour.usd + surcharge) * 1e6) / 1e6,
      unit: unitNames.eksClusterHourExtendedSupport,
      source: sourceId("AmazonEKS"),
    };
  return {
    prices: {
      ec2OnDemandHourly: { source: sourceId("AmazonEC2"), usd: Object.fromEntries(instances) },
      ec2NotOnDemand,
      units,
    },
    sources,
    missing,
  };
}
