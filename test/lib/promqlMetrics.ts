/**
 * PromQL through the Prometheus project's own grammar (@prometheus-io/lezer-promql,
 * the parser of Prometheus' web UI): a syntax error is an error, and the metric
 * names an expression reads are the identifiers of its vector selectors.
 */
import { parser } from "@prometheus-io/lezer-promql";

export class PromQLSyntaxError extends Error {}

/** The metric names an expression selects; throws PromQLSyntaxError on invalid PromQL. */
export function metricNames(expr: string): string[] {
  const tree = parser.parse(expr);
  const names = new Set<string>();
  const errors: number[] = [];
  tree.iterate({
    enter(node) {
      if (node.type.isError) errors.push(node.from);
      if (node.name === "Identifier" && node.node.parent?.name === "VectorSelector") {
        names.add(expr.slice(node.from, node.to));
      }
    },
  });
  if (errors.length > 0) {
    throw new PromQLSyntaxError(
      `invalid PromQL at offset ${errors[0]}: ${expr.slice(Math.max(0, errors[0] - 20), errors[0] + 20)}`,
    );
  }
  return [...names].sort();
}
