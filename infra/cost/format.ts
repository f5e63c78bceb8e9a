/**
 * The three figures as people read them: synth's summary lines, the Pulumi
 * program's info messages, `synth --diff`'s change line
 * ("+$2,140/month, first deploy 41 → 63 min, new replica 3.1 → 4.4 min") and
 * the pull-request comment's section, which shows the monthly sum as a bar
 * (low end solid, the autoscaling range shaded) before and after. Pure.
 */
import { ASSUMED } from "../catalog/timings";
import type { CostReport, ModelReport } from "./index";
import { basisLabel } from "./measured";
import { estimateChange, type Segment } from "./time";

/** Dollars: whole dollars with thousands separators from $100, cents below. */
export function usd(n: number): string {
  return n >= 100 ? `$${Math.round(n).toLocaleString("en-US")}` : `$${n.toFixed(2)}`;
}

/** A price per 1k tokens: two significant digits (these are fractions of a cent, and the error bars are wider). */
export function usdPer1k(n: number): string {
  return `$${n.toPrecision(2)}`;
}

export function minutes(seconds: number): string {
  const m = seconds / 60;
  return m >= 10 ? `${Math.round(m)} min` : `${m.toFixed(1)} min`;
}

const span = (r: { min: number; max: number }, f: (n: number) => string) =>
  r.min === r.max ? f(r.min) : `${f(r.min)}–${f(r.max)}`;

const signed = (n: number) => `${n < 0 ? "-" : "+"}${usd(Math.abs(n))}`;

function modelLine(m: ModelReport, priced: boolean): string {
  const tokens = m.usdPer1kTokens
    ? `${usdPer1k(m.usdPer1kTokens.central)}/1k tokens (${usdPer1k(m.usdPer1kTokens.low)}–${usdPer1k(m.usdPer1kTokens.high)})`
    : "$/1k tokens unpriced";
  const money = priced ? `${span(m.monthlyUsd, usd)}/month` : "unpriced";
  return `${m.id}: ${money} on ${span(m.nodes, String)} × ${m.instanceType}; first deploy ${minutes(m.firstDeploySeconds)}; new replica ${minutes(m.newReplicaSeconds)}; ${tokens}, ${Math.round(m.tokensPerSecondPerPod.central)} tok/s per pod`;
}

/** The path's segments with their minutes and how each is known: "fetch 3.0 min (measured on 2026-11-28) > …". */
export function criticalPathText(path: readonly Segment[]): string {
  return path
    .map((s) => {
      const label = basisLabel(s);
      return `${s.step} ${minutes(s.seconds)}${label ? ` (${label})` : ""}`;
    })
    .join(" > ");
}

/** synth's summary (`file`: where it wrote the report) and the program's info messages: the sum, each model's three figures, the warnings. */
export function summaryLines(r: CostReport, file?: string): string[] {
  const lines: string[] = [];
  if (r.priced)
    lines.push(
      `cost: ${span(r.monthlyUsd, usd)}/month in ${r.region ?? "?"}${r.monthlyUsd.min !== r.monthlyUsd.max ? ` (autoscaling min–max${r.models.some((m) => m.sleep) ? ", min with the models that sleep asleep" : ""})` : ""}, ${r.items.length} items${file ? ` -> ${file}` : ""}`,
    );
  for (const m of r.models) lines.push(`  ${modelLine(m, r.priced)}`);
  for (const m of r.models) lines.push(`  ${m.id} critical path: ${criticalPathText(m.criticalPath)}`);
  for (const m of r.models) {
    const line = sleepLine(m) ?? canaryLine(m, r);
    if (line) lines.push(`  ${line}`);
  }
  for (const b of r.buildRuns)
    if (b.usd !== undefined)
      lines.push(
        `  one build run on ${b.instanceType}${b.compiles ? " (compile host, triton_with_ft)" : ""}: ${b.hours.toFixed(1)} h, ${usd(b.usd)}`,
      );
  for (const w of r.warnings) lines.push(`  warning: ${w}`);
  return lines;
}

/**
 * A canary build: what it adds to the stack a month, and its minutes to serve
 * once added to the live stack: its own steps (the ones it shares with its
 * model's stable build have run), its new nodes and pods.
 */
export function canaryLine(m: ModelReport, r: CostReport): string | undefined {
  const c = m.canary;
  if (!c) return undefined;
  const added = canaryChange(
    m,
    r.models.find((x) => x.id === c.of),
  );
  const money = r.priced ? `${span(m.monthlyUsd, usd)}/month more` : "unpriced";
  return `${m.id} is a canary of ${c.of} (${c.weight} % of its new requests): ${money}; serving ${minutes(added.seconds)} after it is added (${added.changedSteps.length ? `runs ${added.changedSteps.join(", ")}` : "no build step: the stable's image"}): ${pathText(added.path)}`;
}

/** A canary added beside its live model: the steps that hash as the model's have run; its nodes and pods are new. */
function canaryChange(m: ModelReport, stable: ModelReport | undefined): ReturnType<typeof estimateChange> {
  const base = stable ? { ...stable.change, instanceType: "", rolloutHash: "" } : undefined;
  return estimateChange(base, m.change, ASSUMED.builderLaunchSeconds);
}

/** The path as the summary prints it: "image pull 12 min (assumed) > model load 1.7 min (assumed)". */
const pathText = (path: ModelReport["criticalPath"]) =>
  path.map((s) => `${s.step} ${minutes(s.seconds)}${s.basis ? ` (${s.basis})` : ""}`).join(" > ");

/** Zero to first token, expected and the long end: "6.1 min (up to 9.9 min)". */
const wakeText = (z: NonNullable<ModelReport["sleep"]>) =>
  `${minutes(z.zeroToFirstTokenSeconds.expected)} (up to ${minutes(z.zeroToFirstTokenSeconds.high)})`;

/** A model that sleeps: $/month awake and asleep, what an hour asleep saves, and the minutes from zero to its first token. */
export function sleepLine(m: ModelReport): string | undefined {
  const z = m.sleep;
  if (!z) return undefined;
  const money =
    z.awakeUsd !== undefined && z.asleepUsd !== undefined && z.savedPerHourUsd !== undefined
      ? `${usd(z.awakeUsd)}/month awake, ${usd(z.asleepUsd)} asleep (each hour asleep saves ${usd(z.savedPerHourUsd)}; asleep it keeps ${z.remains})`
      : "unpriced";
  const t = z.zeroToFirstTokenSeconds;
  return `${m.id} sleeps after ${z.idleMinutes} min idle: ${money}; zero to first token ${minutes(t.expected)} (up to ${minutes(t.high)} at the serial pull rate): ${pathText(z.path)}`;
}

/**
 * What moved a model's first-deploy total between two estimates: each
 * critical-path segment whose minutes changed, joined or left the path.
 * Undefined when the total did not move.
 */
export function pathChange(before: ModelReport | undefined, after: ModelReport): string | undefined {
  if (!before || Math.abs(before.firstDeploySeconds - after.firstDeploySeconds) < 30) return undefined;
  const old = new Map(before.criticalPath.map((s) => [s.step, s.seconds]));
  const now = new Map(after.criticalPath.map((s) => [s.step, s.seconds]));
  const moves: string[] = [];
  for (const [step, seconds] of now) {
    const was = old.get(step);
    if (was === undefined) moves.push(`${step} ${minutes(seconds)} (now on the path)`);
    else if (minutes(was) !== minutes(seconds)) moves.push(`${step} ${minutes(was)} → ${minutes(seconds)}`);
  }
  for (const [step, seconds] of old) if (!now.has(step)) moves.push(`${step} ${minutes(seconds)} (off the path)`);
  return `${after.id} first deploy ${minutes(before.firstDeploySeconds)} → ${minutes(after.firstDeploySeconds)}: ${moves.length ? moves.join(", ") : "the same segments"}`;
}

/** The change between two estimates of one stack, as `synth --diff` prints it. */
export function diffLines(before: CostReport | undefined, after: CostReport | undefined): string[] {
  if (!after) return before ? [`cost: stack removed (was ${span(before.monthlyUsd, usd)}/month)`] : [];
  const lines: string[] = [];
  const same = (a: number, b: number) => Math.abs(a - b) < 0.005;
  const money = !before
    ? `${span(after.monthlyUsd, usd)}/month (no estimate on the other side)`
    : same(before.monthlyUsd.min, after.monthlyUsd.min) && same(before.monthlyUsd.max, after.monthlyUsd.max)
      ? `unchanged (${span(after.monthlyUsd, usd)}/month)`
      : after.monthlyUsd.min === after.monthlyUsd.max && before.monthlyUsd.min === before.monthlyUsd.max
        ? `${signed(after.monthlyUsd.min - before.monthlyUsd.min)}/month (${usd(before.monthlyUsd.min)} → ${usd(after.monthlyUsd.min)})`
        : `${signed(after.monthlyUsd.min - before.monthlyUsd.min)}/month at min, ${signed(after.monthlyUsd.max - before.monthlyUsd.max)} at max (${span(before.monthlyUsd, usd)} → ${span(after.monthlyUsd, usd)})`;
  lines.push(`cost: ${money}`);
  for (const m of after.models) {
    const old = before?.models.find((x) => x.id === m.id);
    // "a → b" where the figure moved, just "b" where it did not.
    const moved = (label: string, a: string | undefined, b: string) =>
      `${label} ${a !== undefined && a !== b ? `${a} → ` : ""}${b}`;
    const parts = [
      ...(m.canary
        ? [`canary of ${m.canary.of} (${m.canary.weight} % of its new requests), ${span(m.monthlyUsd, usd)}/month`]
        : []),
      moved("first deploy", old && minutes(old.firstDeploySeconds), minutes(m.firstDeploySeconds)),
      moved("new replica", old && minutes(old.newReplicaSeconds), minutes(m.newReplicaSeconds)),
    ];
    if (m.usdPer1kTokens)
      parts.push(
        moved(
          "$/1k tokens",
          old?.usdPer1kTokens && usdPer1k(old.usdPer1kTokens.central),
          usdPer1k(m.usdPer1kTokens.central),
        ),
      );
    // A new canary: the steps it shares with its model's live build do not run again.
    const canaryOf = m.canary && !old ? after.models.find((x) => x.id === m.canary?.of) : undefined;
    const change =
      canaryOf && before?.models.some((x) => x.id === canaryOf.id)
        ? canaryChange(m, canaryOf)
        : estimateChange(old?.change, m.change, ASSUMED.builderLaunchSeconds);
    const what = [
      ...(change.changedSteps.length ? [`re-runs ${change.changedSteps.join(", ")}`] : []),
      ...(change.rollout ? [`rolls ${m.change.replicas} pod(s)`] : []),
    ];
    if (m.sleep) {
      const z = m.sleep;
      const was = old?.sleep;
      parts.push(
        z.awakeUsd !== undefined && z.asleepUsd !== undefined
          ? moved(
              "sleeps: awake/asleep",
              was?.awakeUsd !== undefined && was.asleepUsd !== undefined
                ? `${usd(was.awakeUsd)}/${usd(was.asleepUsd)}`
                : undefined,
              `${usd(z.awakeUsd)}/${usd(z.asleepUsd)} a month`,
            )
          : "sleeps",
        moved("zero to first token", was && wakeText(was), wakeText(z)),
      );
    } else if (old?.sleep) parts.push("no longer sleeps");
    parts.push(
      `this change: ${what.length ? `${minutes(change.seconds)} (${what.join("; ")})` : "no build or rollout"}`,
    );
    lines.push(`  ${m.id}: ${parts.join(", ")}`);
    const path = pathChange(old, m);
    if (path) lines.push(`    ${path}`);
  }
  for (const m of before?.models ?? [])
    if (!after.models.some((x) => x.id === m.id))
      lines.push(`  ${m.id}: removed (was ${span(m.monthlyUsd, usd)}/month)`);
  // The lines that moved most, so a reviewer sees where the money goes.
  if (before) {
    const key = (i: { scope: string; id: string }) => `${i.scope}/${i.id}`;
    const old = new Map(before.items.map((i) => [key(i), i]));
    const moved = after.items
      .map((i) => ({ label: i.label, delta: i.monthlyUsd.max - (old.get(key(i))?.monthlyUsd.max ?? 0) }))
      .concat(
        before.items
          .filter((i) => !after.items.some((j) => key(j) === key(i)))
          .map((i) => ({ label: `${i.label} (gone)`, delta: -i.monthlyUsd.max })),
      )
      .filter((x) => Math.abs(x.delta) >= 0.005)
      .sort((a, b) => Math.abs(b.delta) - Math.abs(a.delta))
      .slice(0, 3);
    for (const x of moved) lines.push(`  ${signed(x.delta)}/month  ${x.label}`);
  }
  for (const w of after.warnings) lines.push(`  warning: ${w}`);
  return lines;
}

const BAR_WIDTH = 28;

/** A bar: solid to the low end, shaded to the high end, on a common scale. */
function bar(r: { min: number; max: number }, scale: number): string {
  const cells = (n: number) => (scale > 0 ? Math.round((n / scale) * BAR_WIDTH) : 0);
  const solid = cells(r.min);
  const shaded = Math.max(0, cells(r.max) - solid);
  return "█".repeat(solid) + "░".repeat(shaded) + " ".repeat(Math.max(0, BAR_WIDTH - solid - shaded));
}

/** The pull-request comment's section for one stack: the change line, the bars, and the figures. */
export function diffMarkdown(stack: string, before: CostReport | undefined, after: CostReport | undefined): string {
  const lines = diffLines(before, after);
  const head = lines[0]?.replace(/^cost: /, "") ?? "no estimate";
  const out = [`**${stack}**: ${head}`];
  const scale = Math.max(before?.monthlyUsd.max ?? 0, after?.monthlyUsd.max ?? 0);
  const chart: string[] = [];
  if (before) chart.push(`before ${bar(before.monthlyUsd, scale)} ${span(before.monthlyUsd, usd)}/month`);
  if (after) chart.push(`after  ${bar(after.monthlyUsd, scale)} ${span(after.monthlyUsd, usd)}/month`);
  if (chart.length) out.push("```", ...chart, "```");
  out.push(...lines.slice(1).map((l) => `- ${l.trim()}`));
  // Each step's minutes and whether they are the stack's own measurement or the catalog's assumption.
  for (const m of after?.models ?? []) out.push(`- ${m.id} critical path: ${criticalPathText(m.criticalPath)}`);
  return out.join("\n");
}
