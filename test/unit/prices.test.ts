/**
 * The vendored price table (infra/data/prices/aws.json) and the Price List
 * reader that refreshes it: every catalog instance type and every priced unit
 * has a price in every region a committed or test stack names; a type without
 * an on-demand price is one EC2 sells only through reservations, with its
 * reason; every price cites a dated source. The reader is run on a small
 * fixture in the bulk-file format (test/data/prices/), decoy rows included,
 * and refresh.ts end to end on the same folder.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { COMPILE_HOSTS } from "../../infra/catalog/compileHosts";
import { CPU_BUILDERS } from "../../infra/catalog/cpuBuilders";
import { GPU_FAMILIES, findGpuInstance, gpuInstanceTypes } from "../../infra/catalog/gpus";
import { SYSTEM_NODES } from "../../infra/cloud/eks";
import { PRICE_TABLE, UNIT_KEYS, priceTableSchema, regionPrices } from "../../infra/catalog/prices";
import { OfferCsv, UNIT_RULES, parseCsvLine, selectUnit, usefulRow, type Row } from "../../infra/cost/priceList";
import { refresh, stackRegions, wantedInstanceTypes } from "../../scripts/prices/refresh";

const ROOT = path.join(__dirname, "..", "..");
const FIXTURE = path.join(__dirname, "..", "data", "prices");

describe("the vendored price table", () => {
  const regions = stackRegions(ROOT);

  it("covers the regions of every committed and test stack", () => {
    expect(regions).toContain("us-east-1");
    for (const r of regions) expect(regionPrices(r).ok, r).toBe(true);
  });

  it("prices every catalog instance type, the compile hosts, the CPU builders and the system nodes, or says why EC2 sells it only by reservation", () => {
    for (const r of regions) {
      const t = PRICE_TABLE.regions[r];
      const cpu = [...COMPILE_HOSTS, ...CPU_BUILDERS].map((h) => h.type);
      for (const type of [...gpuInstanceTypes(), ...cpu, SYSTEM_NODES.instanceType]) {
        const usd = t?.ec2OnDemandHourly.usd[type];
        const why = t?.ec2NotOnDemand[type];
        expect(usd !== undefined || why !== undefined, `${r} ${type}`).toBe(true);
        if (usd === undefined) {
          // Only a family sold mainly through Capacity Blocks and reservations may lack an on-demand price.
          const family = findGpuInstance(type)?.family ?? "";
          expect(GPU_FAMILIES[family]?.capacity, `${r} ${type}: ${why}`).toBe("reservation");
        }
      }
    }
  });

  it("has every unit the estimate multiplies by, each citing a source with its dates", () => {
    for (const r of regions) {
      const units = PRICE_TABLE.regions[r]?.units;
      for (const k of UNIT_KEYS) expect(units?.[k].usd, `${r} ${k}`).toBeGreaterThan(0);
    }
    const cited = new Set(
      Object.values(PRICE_TABLE.regions).flatMap((r) => [
        r.ec2OnDemandHourly.source,
        ...Object.values(r.units).map((u) => u.source),
      ]),
    );
    for (const id of cited) {
      const s = PRICE_TABLE.sources[id];
      expect(s, id).toBeDefined();
      expect(s?.taken, id).toMatch(/^\d{4}-\d{2}(-\d{2})?$/);
      expect(s?.read, id).toMatch(/^\d{4}-\d{2}-\d{2}$/);
      expect(s?.url, id).toMatch(/^https:\/\//);
    }
  });

  it("reports a region it lacks instead of guessing", () => {
    const r = regionPrices("ap-south-2");
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.warning).toMatch(/no prices for ap-south-2.*refresh\.ts --region ap-south-2/);
    expect(regionPrices(undefined).ok).toBe(false);
  });
});

describe("Price List CSV reader", () => {
  it("splits quoted fields, doubled quotes and empty fields", () => {
    expect(parseCsvLine('"a","b ""c"", d",,e,"",')).toEqual(["a", 'b "c", d', "", "e", "", ""]);
    expect(() => parseCsvLine('"open')).toThrow(/unterminated/);
  });

  it("refuses an ambiguous selector instead of picking a row", () => {
    const row = (price: string, fam: string): Row =>
      new Map([
        ["usagetype", "USE1-LCUUsage"],
        ["priceperunit", price],
        ["productfamily", fam],
        ["unit", "LCU-Hrs"],
      ]);
    const loose = { ...UNIT_RULES.nlbLcuHour, where: {} };
    const rows = [row("0.006", "Load Balancer-Network"), row("0.008", "Load Balancer-Application")];
    expect(() => selectUnit(loose, rows, "nlb")).toThrow(/different prices \(0\.006, 0\.008\)/);
    expect(selectUnit(UNIT_RULES.nlbLcuHour, rows, "nlb")).toBe(0.006);
  });

  it("reads an offer file's metadata and keeps only on-demand rows a rule can use", () => {
    const file = path.join(FIXTURE, "offers/v1.0/aws/AmazonEC2/20261101000000/us-east-1/index.csv");
    const csv = new OfferCsv(usefulRow("AmazonEC2", new Set(["g5.xlarge", "t3.large"])));
    for (const line of fs.readFileSync(file, "utf8").split("\n")) csv.line(line);
    const { meta, rows } = csv.result();
    expect(meta).toEqual({
      offerCode: "AmazonEC2",
      version: "20261101000000",
      publicationDate: "2026-11-01T18:12:07Z",
    });
    const skus = rows.map((r) => r.get("sku"));
    // Decoys dropped as they stream: a reserved term, a Local Zone row, gp2 storage, provisioned-bandwidth NAT.
    for (const decoy of ["G5XL0RESERVED00", "G5XL0LOCALZONE0", "EBSGP20STORAGE0", "NATGW0PROVBW000"])
      expect(skus).not.toContain(decoy);
    expect(skus).toContain("G5XL0LINUX0SHRD");
  });
});

describe("scripts/prices/refresh.ts on the bulk-file fixture", () => {
  it("rebuilds a valid table: the right rows, the decoys refused, the missing type explained", async () => {
    const log: string[] = [];
    const table = await refresh(
      { base: FIXTURE, regions: ["us-east-1"], out: path.join(os.tmpdir(), "unused.json"), today: "2026-11-25" },
      (l) => log.push(l),
    );
    expect(() => priceTableSchema.parse(table)).not.toThrow();
    const r = table.regions["us-east-1"];
    // Linux, shared, used, no SQL: not the Windows, dedicated, unused-reservation or SQL rows.
    expect(r?.ec2OnDemandHourly.usd["g5.xlarge"]).toBe(1.006);
    expect(r?.ec2OnDemandHourly.usd["t3.large"]).toBe(0.0832);
    // Everything else the catalog has is absent from the fixture: each says so.
    expect(Object.keys(r?.ec2NotOnDemand ?? {})).toHaveLength(wantedInstanceTypes().length - 2);
    expect(r?.ec2NotOnDemand["p5e.48xlarge"]).toMatch(
      /no on-demand Linux shared-tenancy row in AmazonEC2 20261101000000/,
    );
    expect(r?.units.eksClusterHour.usd).toBe(0.1);
    expect(r?.units.eksClusterHourExtendedSupport.usd).toBe(0.6);
    expect(r?.units.nlbLcuHour.usd).toBe(0.006);
    expect(r?.units.ebsGp3ThroughputMonth.usd).toBe(0.04);
    expect(r?.units.valkeyServerlessGbHour.usd).toBe(0.084);
    expect(r?.units.valkeyServerlessMillionEcpu.usd).toBe(0.0023);
    const ec2 = table.sources["price-list:AmazonEC2:us-east-1"];
    expect(ec2).toMatchObject({ version: "AmazonEC2 20261101000000", taken: "2026-11-01", read: "2026-11-25" });
    expect(ec2?.url).toBe(
      "https://pricing.us-east-1.amazonaws.com/offers/v1.0/aws/AmazonEC2/20261101000000/us-east-1/index.csv",
    );
  });

  it("stops when a unit has no row, naming it", async () => {
    const copy = fs.mkdtempSync(path.join(os.tmpdir(), "prices-"));
    fs.cpSync(FIXTURE, copy, { recursive: true });
    const ecr = path.join(copy, "offers/v1.0/aws/AmazonECR/20260901000000/us-east-1/index.csv");
    fs.writeFileSync(ecr, fs.readFileSync(ecr, "utf8").replace(/^"ECR0STORAGE0000".*\n/m, ""));
    await expect(
      refresh({ base: copy, regions: ["us-east-1"], out: path.join(copy, "x.json"), today: "2026-11-25" }, () => {}),
    ).rejects.toThrow(/ecrStorageGbMonth \(AmazonECR/);
  });
});
