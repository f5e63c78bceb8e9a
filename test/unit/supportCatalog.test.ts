/**
 * Every chart, image and tool pin lives in infra/catalog/ and nowhere else in infra/, and the
 * data next to the pins stays equal to the pins themselves: the gateway Dockerfile's base image,
 * the fetch step's pip pin, each pin's pinReview.json entry and the support table's Kubernetes
 * ranges.
 */
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import * as amis from "../../infra/catalog/amis";
import * as charts from "../../infra/catalog/charts";
import * as images from "../../infra/catalog/images";
import * as tools from "../../infra/catalog/tools";
import { CHART_KUBE_RANGES, NODE_RELEASES, PYTHON_RELEASES } from "../../infra/catalog/support";
import review from "../../infra/catalog/pinReview.json";

const ROOT = path.resolve(__dirname, "../..");
const ISO = /^\d{4}-\d{2}-\d{2}$/;

/**
 * What a pin looks like in source: a registry digest, a Helm chart or tool version field, a dated
 * AMI alias, an image tag on a known registry. The catalog's own files are the only place for them.
 */
const PIN_SHAPES = [
  /sha256:[0-9a-f]{64}/,
  /\bversion: "v?\d+\.\d+/,
  /@v\d{8}\b/,
  /\b(nvcr\.io|docker\.io|quay\.io|ghcr\.io|public\.ecr\.aws|registry\.k8s\.io)\/[\w./-]+:v?\d/,
];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(full);
    return e.name.endsWith(".ts") ? [full] : [];
  });
}

/** The chart's own name, as the support table spells it (Karpenter's is an OCI reference). */
function chartName(chart: string): string {
  return chart.split("/").pop() ?? chart;
}

/** Every pin the catalog exports, as `[where, pinned]` in pinReview.json's spelling. */
function catalogPins(): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (const [key, c] of Object.entries(charts.CHARTS)) out.push([`infra/catalog/charts.ts CHARTS.${key}`, c.version]);
  for (const [name, value] of Object.entries(images)) {
    if (typeof value !== "object") continue;
    const pinned = "tag" in value ? value.tag : `${value.version}-${value.variant}`;
    out.push([`infra/catalog/images.ts ${name}`, pinned]);
  }
  for (const [name, value] of Object.entries(amis)) out.push([`infra/catalog/amis.ts ${name}`, value.alias]);
  for (const [name, value] of Object.entries(tools)) {
    if (typeof value === "object") out.push([`infra/catalog/tools.ts ${name}`, value.version]);
  }
  return out;
}

function catalogPinDates(): string[] {
  return [
    ...Object.values(charts.CHARTS).map((c) => c.checked),
    ...Object.values(images).flatMap((v) => (typeof v === "object" ? [v.checked] : [])),
    ...Object.values(amis).map((a) => a.checked),
    ...Object.values(tools).flatMap((v) => (typeof v === "object" ? [v.checked] : [])),
  ];
}

describe("support catalog", () => {
  it("every pin in the catalog has one pinReview.json entry, whose 'where' names it and whose 'pinned' is its value", () => {
    const fromReview = Object.fromEntries(review.pins.map((p) => [p.where, p.pinned]));
    expect(review.pins.map((p) => p.where).every((w) => w.startsWith("infra/catalog/"))).toBe(true);
    expect(fromReview).toEqual(Object.fromEntries(catalogPins()));
  });

  it("no chart, image or tool pin sits in infra/ outside infra/catalog/", () => {
    const strays: string[] = [];
    for (const file of sourceFiles(path.join(ROOT, "infra"))) {
      const rel = path.relative(ROOT, file);
      if (rel.startsWith("infra/catalog/")) continue;
      readFileSync(file, "utf8")
        .split("\n")
        .forEach((line, i) => {
          if (PIN_SHAPES.some((re) => re.test(line))) strays.push(`${rel}:${i + 1}: ${line.trim()}`);
        });
    }
    expect(strays).toEqual([]);
  });

  it("the fetch step installs exactly catalog/tools.ts's huggingface_hub pin, and no pip pin the catalog lacks", () => {
    const script = readFileSync(path.join(ROOT, tools.HUGGINGFACE_CLI.installedBy), "utf8");
    const pipPins = [...script.matchAll(/'([A-Za-z0-9_.[\]-]+==[^']+)'/g)].map((m) => m[1]);
    expect(pipPins).toEqual([tools.pipRequirement(tools.HUGGINGFACE_CLI)]);
  });

  it("the gateway Dockerfile's NODE_IMAGE is catalog/images.ts's pin, by a manifest-list digest", () => {
    const dockerfile = readFileSync(path.join(ROOT, "images/gateway/Dockerfile"), "utf8");
    expect(/^ARG NODE_IMAGE=(.+)$/m.exec(dockerfile)?.[1]).toBe(images.nodeImageRef());
    expect(images.GATEWAY_NODE_IMAGE.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(NODE_RELEASES.releases.map((r) => r.major)).toContain(
      Number(images.GATEWAY_NODE_IMAGE.version.split(".")[0]),
    );
  });

  it("every chart range names the pinned chart version", () => {
    const pinned = Object.fromEntries(Object.values(charts.CHARTS).map((c) => [chartName(c.chart), c.version]));
    expect(Object.fromEntries(CHART_KUBE_RANGES.charts.map((c) => [c.chart, c.version]))).toEqual(pinned);
  });

  it("every date is an ISO date", () => {
    const dates = [
      review.checked,
      ...catalogPinDates(),
      CHART_KUBE_RANGES.checked,
      NODE_RELEASES.lookup.checked,
      PYTHON_RELEASES.lookup.checked,
      ...NODE_RELEASES.releases.map((r) => r.end),
      ...PYTHON_RELEASES.releases.map((r) => r.end),
    ];
    for (const d of dates) expect(d).toMatch(ISO);
  });
});
