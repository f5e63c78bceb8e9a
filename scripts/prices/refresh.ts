/**
 * Rebuilds the vendored price table (infra/data/prices/aws.json) from AWS's
 * public Price List bulk files: the offer index, each offer's region index,
 * then the region's CSV offer file, streamed (infra/cost/priceList.ts parses
 * and selects). Prices every catalog GPU instance type and the system node
 * type, and every other unit the cost estimate multiplies by, in every region
 * a committed or test stack names (aws:region) plus the regions the table
 * already has. The result is checked against the table's schema before it is
 * written; a unit no row matches stops the refresh (exit 1) instead of
 * keeping a stale or guessed price.
 *
 *   npx tsx scripts/prices/refresh.ts [--base <url or folder>] [--region <r>]... [--out <file>] [--today YYYY-MM-DD]
 *
 * --base defaults to https://pricing.us-east-1.amazonaws.com; a folder laid
 * out like the site (offers/v1.0/aws/...) reads files instead (the tests'
 * fixture, test/data/prices/). Needs network access to AWS otherwise, which
 * the development machines do not have: run it where AWS is reachable and
 * commit the diff. Exit 2 on usage.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import * as readline from "node:readline";
import { Readable } from "node:stream";
import { parse } from "yaml";
import { SYSTEM_NODES } from "../../infra/cloud/eks";
import { COMPILE_HOSTS } from "../../infra/catalog/compileHosts";
import { CPU_BUILDERS } from "../../infra/catalog/cpuBuilders";
import { gpuInstanceTypes } from "../../infra/catalog/gpus";
import { isoDate } from "../../infra/catalog/eks";
import {
  OFFERS,
  OfferCsv,
  regionTable,
  usefulRow,
  type OfferCode,
  type PriceListSource,
  type RegionOffers,
} from "../../infra/cost/priceList";
import { PRICE_TABLE, priceTableSchema, type PriceTable } from "../../infra/catalog/prices";

const ROOT = path.resolve(__dirname, "../..");
export const DEFAULT_BASE = "https://pricing.us-east-1.amazonaws.com";
const INDEX = "/offers/v1.0/aws/index.json";

export interface RefreshArgs {
  base: string;
  regions: string[];
  out: string;
  today: string;
}

const USAGE =
  "usage: npx tsx scripts/prices/refresh.ts [--base <url or folder>] [--region <r>]... [--out <file>] [--today YYYY-MM-DD]";

export function parseArgs(argv: string[]): RefreshArgs {
  const a: RefreshArgs = {
    base: DEFAULT_BASE,
    regions: [],
    out: path.join(ROOT, "infra/data/prices/aws.json"),
    today: isoDate(new Date()),
  };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const value = argv[++i];
    if (value === undefined) throw new Error(`${flag} needs a value\n${USAGE}`);
    if (flag === "--base") a.base = value;
    else if (flag === "--region") a.regions.push(value);
    else if (flag === "--out") a.out = value;
    else if (flag === "--today") a.today = value;
    else throw new Error(`unknown argument ${flag}\n${USAGE}`);
  }
  return a;
}

/** aws:region of every stack file in the repository (Pulumi.<stack>.yaml and the script tests' *.stack.yaml). */
export function stackRegions(root: string = ROOT): string[] {
  const found = new Set<string>();
  const walk = (dir: string) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      if (e.name === "node_modules" || e.name.startsWith(".")) continue;
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (/^Pulumi\..+\.yaml$/.test(e.name) || e.name.endsWith(".stack.yaml")) {
        const doc = parse(fs.readFileSync(p, "utf8")) as { config?: Record<string, unknown> } | null;
        const region = doc?.config?.["aws:region"];
        if (typeof region === "string") found.add(region);
      }
    }
  };
  walk(root);
  return [...found].sort();
}

/** The instance types the table prices: the GPU catalog (serving and builders), the compile hosts, the CPU builders and the system nodes. */
export function wantedInstanceTypes(): string[] {
  return [
    ...new Set([
      ...gpuInstanceTypes(),
      ...COMPILE_HOSTS.map((h) => h.type),
      ...CPU_BUILDERS.map((h) => h.type),
      SYSTEM_NODES.instanceType,
    ]),
  ].sort();
}

const isUrl = (base: string) => /^https?:\/\//.test(base);

async function readText(base: string, rel: string): Promise<string> {
  if (!isUrl(base)) return fs.promises.readFile(path.join(base, rel), "utf8");
  const res = await fetch(base + rel);
  if (!res.ok) throw new Error(`GET ${base + rel}: ${res.status} ${res.statusText}`);
  return res.text();
}

async function* readLines(base: string, rel: string): AsyncGenerator<string> {
  let input: NodeJS.ReadableStream;
  if (isUrl(base)) {
    const res = await fetch(base + rel);
    if (!res.ok || !res.body) throw new Error(`GET ${base + rel}: ${res.status} ${res.statusText}`);
    input = Readable.fromWeb(res.body);
  } else {
    input = fs.createReadStream(path.join(base, rel));
  }
  for await (const line of readline.createInterface({ input, crlfDelay: Infinity })) yield line;
}

interface OfferIndex {
  offers: Record<string, { currentRegionIndexUrl?: string }>;
}
interface RegionIndex {
  regions: Record<string, { currentVersionUrl: string }>;
}

/** One region's offer files, each streamed and cut down to the rows a rule can use. */
async function readRegion(base: string, index: OfferIndex, region: string, types: Set<string>): Promise<RegionOffers> {
  const offers = new Map<
    OfferCode,
    { meta: ReturnType<OfferCsv["result"]>["meta"]; rows: ReturnType<OfferCsv["result"]>["rows"]; url: string }
  >();
  for (const code of OFFERS) {
    const regionIndexUrl = index.offers[code]?.currentRegionIndexUrl;
    if (!regionIndexUrl) throw new Error(`the offer index lists no region index for ${code}`);
    const regions = JSON.parse(await readText(base, regionIndexUrl)) as RegionIndex;
    const version = regions.regions[region]?.currentVersionUrl;
    if (!version) throw new Error(`${code} has no offer file for ${region}`);
    const csv = version.replace(/\.json$/, ".csv");
    const reader = new OfferCsv(usefulRow(code, types));
    for await (const line of readLines(base, csv)) reader.line(line);
    offers.set(code, { ...reader.result(), url: (isUrl(base) ? base : DEFAULT_BASE) + csv });
  }
  return offers;
}

export async function refresh(args: RefreshArgs, log: (line: string) => void): Promise<PriceTable> {
  const index = JSON.parse(await readText(args.base, INDEX)) as OfferIndex;
  const regions = args.regions.length
    ? args.regions
    : [...new Set([...stackRegions(), ...Object.keys(PRICE_TABLE.regions)])].sort();
  const types = wantedInstanceTypes();
  const sources: Record<string, PriceListSource> = {};
  const out: PriceTable["regions"] = {};
  const missing: string[] = [];
  for (const region of regions) {
    log(`${region}: reading ${OFFERS.join(", ")}`);
    const r = regionTable(region, await readRegion(args.base, index, region, new Set(types)), types, args.today);
    Object.assign(sources, r.sources);
    missing.push(...r.missing.map((m) => `${region}: ${m}`));
    out[region] = r.prices;
    for (const [t, why] of Object.entries(r.prices.ec2NotOnDemand)) log(`${region}: ${t}: ${why}`);
  }
  if (missing.length) throw new Error(`no Price List row matched:\n  ${missing.join("\n  ")}`);
  return priceTableSchema.parse({
    ...PRICE_TABLE,
    note: PRICE_TABLE.note,
    sources,
    regions: out,
  });
}

if (require.main === module) {
  let args: RefreshArgs;
  try {
    args = parseArgs(process.argv.slice(2));
  } catch (err) {
    console.error((err as Error).message);
    process.exit(2);
  }
  refresh(args, (l) => console.log(l)).then(
    (table) => {
      fs.writeFileSync(args.out, JSON.stringify(table, null, 2) + "\n");
      console.log(`wrote ${args.out}`);
    },
    (err: unknown) => {
      console.error(`prices: ${(err as Error).message}`);
      process.exitCode = 1;
    },
  );
}
