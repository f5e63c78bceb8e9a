/**
 * The support table of what each committed stack runs (catalog/support.ts):
 * Node of the program and the gateway image, the Triton image's Python, the
 * EKS version and every chart's Kubernetes range, with end dates and days
 * left. Run by the scheduled drift workflow, so an end date coming up shows
 * in its summary before a preview starts refusing.
 *
 * Exit 1 when any stack has a row past its end that is not acknowledged (or
 * outside a chart's range): the same rows a preview refuses. Exit 2 on usage.
 *
 *   npx tsx scripts/ci/support-table.ts [--today YYYY-MM-DD] [--markdown]
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { isoDate } from "../../infra/catalog/eks";
import { GATEWAY_NODE_IMAGE } from "../../infra/catalog/images";
import { daysUntil, refuses, supportRows, WARN_DAYS, type SupportRow } from "../../infra/catalog/support";
import { parseConfig } from "../../infra/config/schema";
import { parseStackFile } from "../../infra/synth/stackFile";

const ROOT = path.resolve(__dirname, "../..");

function mark(r: SupportRow): string {
  if (refuses(r)) return "REFUSED";
  if (r.state === "ended") return "ended (acknowledged)";
  if (r.state === "ending") return `ends within ${WARN_DAYS} days`;
  return r.state;
}

export function table(stack: string, rows: readonly SupportRow[], today: string, markdown: boolean): string[] {
  const cells = rows.map((r) => [
    r.what,
    r.end,
    r.end === "-" || r.end === "?" ? "" : String(daysUntil(r.end, today)),
    mark(r),
  ]);
  const head = ["what", "end", "days left", "status"];
  if (markdown) {
    return [
      `### Support dates: stack \`${stack}\` (${today})`,
      "",
      `| ${head.join(" | ")} |`,
      `|${head.map(() => "---").join("|")}|`,
      ...cells.map((c) => `| ${c.join(" | ")} |`),
      "",
    ];
  }
  const widths = head.map((h, i) => Math.max(h.length, ...cells.map((c) => (c[i] ?? "").length)));
  const line = (c: readonly string[]): string =>
    c
      .map((x, i) => x.padEnd(widths[i] ?? 0))
      .join("  ")
      .trimEnd();
  return [`stack ${stack} (${today}):`, line(head), ...cells.map(line), ""];
}

/** Rows of one committed stack file, as a preview of it would judge them. */
export function stackRows(stackFileText: string, fileName: string, today: string): SupportRow[] {
  const file = parseStackFile(stackFileText, fileName);
  const { config } = parseConfig(file.raw);
  if (!config) throw new Error(`${fileName}: the config does not parse; run npm run synth for the problems`);
  return supportRows(
    {
      programNode: process.versions.node,
      gatewayNode: GATEWAY_NODE_IMAGE.version,
      tritonVersion: config.build.tritonVersion,
      ...(config.cluster.mode === "create" ? { kubernetesVersion: config.cluster.kubernetesVersion } : {}),
    },
    today,
  );
}

function main(argv: readonly string[]): number {
  let today = isoDate(new Date());
  let markdown = false;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--markdown") markdown = true;
    else if (a === "--today" && /^\d{4}-\d{2}-\d{2}$/.test(argv[i + 1] ?? "")) today = argv[++i] as string;
    else {
      process.stderr.write(`usage: support-table.ts [--today YYYY-MM-DD] [--markdown] (got ${a ?? ""})\n`);
      return 2;
    }
  }
  let refused = 0;
  const stacks = fs
    .readdirSync(ROOT)
    .map((f) => /^Pulumi\.(.+)\.yaml$/.exec(f)?.[1])
    .filter((s): s is string => s !== undefined)
    .sort();
  for (const stack of stacks) {
    const fileName = `Pulumi.${stack}.yaml`;
    const rows = stackRows(fs.readFileSync(path.join(ROOT, fileName), "utf8"), fileName, today);
    process.stdout.write(table(stack, rows, today, markdown).join("\n") + "\n");
    for (const r of rows.filter(refuses)) {
      refused++;
      process.stderr.write(
        `support: stack ${stack}: ${r.what} ${r.state === "ended" ? `ended on ${r.end}` : r.state}; fix: ${r.fix}\n`,
      );
    }
  }
  return refused > 0 ? 1 : 0;
}

if (require.main === module) process.exit(main(process.argv.slice(2)));
