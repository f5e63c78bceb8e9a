/**
 * Series names a Prometheus text exposition offers, from its `# TYPE` lines: a
 * counter or gauge by its name, a histogram by `_bucket`, `_sum` and `_count`,
 * a summary by its name, `_sum` and `_count`. PromQL selects these names.
 */
export function exportedSeriesNames(exposition: string): Set<string> {
  const out = new Set<string>();
  for (const m of exposition.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    const [, name, type] = m;
    if (type === "histogram") for (const s of ["_bucket", "_sum", "_count"]) out.add(name + s);
    else if (type === "summary") for (const s of ["", "_sum", "_count"]) out.add(name + s);
    else out.add(name);
  }
  return out;
}
