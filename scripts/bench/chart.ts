/**
 * The bench report as one self-contained HTML page (inline SVG, no scripts,
 * no network): throughput, output tokens/s, TTFT and latency percentiles
 * against concurrency, one line per target, plus the gateway's added
 * latency ratio.
 */
import type { LevelResult } from "./loadgen";

export interface BenchReport {
  createdAt: string;
  workload: { promptWords: number; maxTokens: number; durationSeconds: number; warmupRequests: number };
  environment: string;
  /** The gateway targets' HTTP client (bench/gatewayClient.ts). */
  client?: string;
  targets: Record<string, LevelResult[]>;
  /** Per concurrency: gateway latency p50 / direct latency p50 (and p95). */
  gatewayOverhead?: GatewayOverhead[];
  /** Per concurrency (--store): what the shared store adds to the gateway's latency, in ms and as ratios. */
  storeOverhead?: StoreOverhead[];
  /** Per gateway target and concurrency: what it adds over direct Triton, in ms and as ratios (interleaved runs). */
  gatewayAdded?: GatewayAdded[];
  /** (--store) the admission alone, against the store and in the pod's memory (bench/storeAdmission.ts). */
  storeAdmission?: { samples: number; storeMs: { p50: number; p99: number }; localMs: { p50: number; p99: number } };
}

export interface GatewayAdded {
  target: string;
  concurrency: number;
  latencyP50AddedMs: number;
  ttftP50AddedMs: number;
  latencyP50Ratio: number;
  ttftP50Ratio: number;
  /**
   * (interleaved runs) the median of each request's difference to the direct
   * request its client sent just before it, in ms and over the direct p50:
   * drift in the machine's load cancels out.
   */
  paired?: {
    pairs: number;
    latencyP50AddedMs: number;
    ttftP50AddedMs: number;
    latencyP50Ratio: number;
    ttftP50Ratio: number;
  };
}

export interface GatewayOverhead {
  concurrency: number;
  latencyP50Ratio: number;
  latencyP95Ratio: number;
  ttftP50Ratio: number;
}

export interface StoreOverhead {
  concurrency: number;
  latencyP50AddedMs: number;
  latencyP99AddedMs: number;
  ttftP50AddedMs: number;
  latencyP50Ratio: number;
  latencyP99Ratio: number;
}

const COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd"];
const W = 460;
const PLOT_H = 280;
const M = { left: 62, right: 16, top: 34, bottom: 44 };
const LEGEND_ROW = 15;

function esc(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

function niceMax(v: number): number {
  if (!(v > 0)) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

interface Series {
  name: string;
  color: string;
  dash?: string;
  points: { x: number; y: number }[];
}

function lineChart(title: string, unit: string, xs: number[], series: Series[]): string {
  // The legend goes under the plot, so it never hides a line.
  const H = PLOT_H + Math.ceil(series.length / 2) * LEGEND_ROW + 6;
  const bottom = H - PLOT_H + M.bottom;
  const maxY = niceMax(Math.max(...series.flatMap((s) => s.points.map((p) => (Number.isFinite(p.y) ? p.y : 0)))));
  const xIndex = (x: number): number => xs.indexOf(x);
  const px = (x: number): number =>
    M.left + (xs.length === 1 ? 0.5 : xIndex(x) / (xs.length - 1)) * (W - M.left - M.right);
  const py = (y: number): number => H - bottom - (y / maxY) * (PLOT_H - M.top - M.bottom);
  const parts: string[] = [];
  parts.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" role="img" aria-label="${esc(title)}">`,
  );
  parts.push(`<rect width="${W}" height="${H}" fill="#fff"/>`);
  parts.push(`<text x="${W / 2}" y="20" text-anchor="middle" font-size="14" font-weight="bold">${esc(title)}</text>`);
  for (let i = 0; i <= 4; i++) {
    const y = (maxY * i) / 4;
    parts.push(`<line x1="${M.left}" x2="${W - M.right}" y1="${py(y)}" y2="${py(y)}" stroke="#e5e5e5"/>`);
    parts.push(`<text x="${M.left - 6}" y="${py(y) + 4}" text-anchor="end" font-size="11">${+y.toPrecision(3)}</text>`);
  }
  for (const x of xs) {
    parts.push(`<text x="${px(x)}" y="${H - bottom + 16}" text-anchor="middle" font-size="11">${x}</text>`);
  }
  parts.push(
    `<text x="${(M.left + W - M.right) / 2}" y="${PLOT_H - 8}" text-anchor="middle" font-size="11">concurrent clients</text>`,
  );
  parts.push(
    `<text transform="translate(14 ${(M.top + H - bottom) / 2}) rotate(-90)" text-anchor="middle" font-size="11">${esc(unit)}</text>`,
  );
  parts.push(`<line x1="${M.left}" x2="${M.left}" y1="${M.top}" y2="${H - bottom}" stroke="#333"/>`);
  parts.push(`<line x1="${M.left}" x2="${W - M.right}" y1="${H - bottom}" y2="${H - bottom}" stroke="#333"/>`);
  series.forEach((s, i) => {
    const pts = s.points.filter((p) => Number.isFinite(p.y));
    if (pts.length > 0) {
      parts.push(
        `<polyline fill="none" stroke="${s.color}" stroke-width="2"${s.dash ? ` stroke-dasharray="${s.dash}"` : ""} points="${pts.map((p) => `${px(p.x)},${py(p.y)}`).join(" ")}"/>`,
      );
      for (const p of pts)
        parts.push(
          `<circle cx="${px(p.x)}" cy="${py(p.y)}" r="3" fill="${s.color}"><title>${esc(s.name)}: ${p.y}</title></circle>`,
        );
    }
    const lx = 12 + (i % 2) * (W / 2);
    const ly = PLOT_H + 4 + Math.floor(i / 2) * LEGEND_ROW;
    parts.push(
      `<line x1="${lx}" x2="${lx + 20}" y1="${ly}" y2="${ly}" stroke="${s.color}" stroke-width="2"${s.dash ? ` stroke-dasharray="${s.dash}"` : ""}/>`,
    );
    parts.push(`<text x="${lx + 24}" y="${ly + 4}" font-size="11">${esc(s.name)}</text>`);
  });
  parts.push("</svg>");
  return parts.join("");
}

export function renderHtml(report: BenchReport): string {
  const names = Object.keys(report.targets);
  const xs = [...new Set(names.flatMap((n) => report.targets[n].map((l) => l.concurrency)))].sort((a, b) => a - b);
  const series = (pick: (l: LevelResult) => number, suffix = "", dash?: string): Series[] =>
    names.map((name, i) => ({
      name: `${name}${suffix}`,
      color: COLORS[i % COLORS.length],
      dash,
      points: report.targets[name].map((l) => ({ x: l.concurrency, y: pick(l) })),
    }));
  const charts = [
    lineChart(
      "Throughput",
      "requests / s",
      xs,
      series((l) => l.requestsPerSecond),
    ),
    lineChart(
      "Output tokens",
      "tokens / s",
      xs,
      series((l) => l.outputTokensPerSecond),
    ),
    lineChart("Time to first token", "ms", xs, [
      ...series((l) => l.ttftMs.p50, " p50"),
      ...series((l) => l.ttftMs.p95, " p95", "5 4"),
    ]),
    lineChart("Request latency", "ms", xs, [
      ...series((l) => l.latencyMs.p50, " p50"),
      ...series((l) => l.latencyMs.p95, " p95", "5 4"),
      ...series((l) => l.latencyMs.p99, " p99", "2 3"),
    ]),
  ];
  if (report.gatewayOverhead) {
    const o = report.gatewayOverhead;
    charts.push(
      lineChart("Gateway latency ÷ direct latency", "ratio", xs, [
        { name: "latency p50", color: COLORS[0], points: o.map((r) => ({ x: r.concurrency, y: r.latencyP50Ratio })) },
        {
          name: "latency p95",
          color: COLORS[1],
          dash: "5 4",
          points: o.map((r) => ({ x: r.concurrency, y: r.latencyP95Ratio })),
        },
        { name: "TTFT p50", color: COLORS[2], points: o.map((r) => ({ x: r.concurrency, y: r.ttftP50Ratio })) },
      ]),
    );
  }
  if (report.storeOverhead) {
    const o = report.storeOverhead;
    charts.push(
      lineChart("Added by the shared store (gateway with ÷ without)", "ratio", xs, [
        { name: "latency p50", color: COLORS[0], points: o.map((r) => ({ x: r.concurrency, y: r.latencyP50Ratio })) },
        {
          name: "latency p99",
          color: COLORS[1],
          dash: "2 3",
          points: o.map((r) => ({ x: r.concurrency, y: r.latencyP99Ratio })),
        },
      ]),
    );
  }
  const rows = names
    .flatMap((name) =>
      report.targets[name].map(
        (l) =>
          `<tr><td>${esc(name)}</td><td>${l.concurrency}</td><td>${l.requests}</td><td>${l.errors}</td><td>${l.requestsPerSecond}</td><td>${l.outputTokensPerSecond}</td><td>${l.ttftMs.p50} / ${l.ttftMs.p95} / ${l.ttftMs.p99}</td><td>${l.latencyMs.p50} / ${l.latencyMs.p95} / ${l.latencyMs.p99}</td></tr>`,
      ),
    )
    .join("\n");
  const w = report.workload;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>triton-ft bench</title>
<style>body{font-family:system-ui,sans-serif;margin:24px;color:#222}.grid{display:flex;flex-wrap:wrap;gap:12px}
table{border-collapse:collapse;margin-top:16px;font-size:13px}td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}</style></head>
<body><h1>triton-ft bench</h1>
<p>${esc(report.createdAt)} · ${esc(report.environment)} · prompt ≈ ${w.promptWords} words, max_tokens ${w.maxTokens}, ${w.durationSeconds} s per level, after ${w.warmupRequests} warm-up requests per target</p>
<div class="grid">${charts.join("\n")}</div>
<table><tr><th>target</th><th>clients</th><th>requests</th><th>errors</th><th>req/s</th><th>out tok/s</th><th>TTFT ms p50/p95/p99</th><th>latency ms p50/p95/p99</th></tr>
${rows}</table></body></html>
`;
}
