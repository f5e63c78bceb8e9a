/**
 * The Helm charts a created cluster installs (device plugin, load balancer
 * controller, KEDA, Karpenter, kube-prometheus-stack), stood in for the engine
 * suite: this machine cannot download them, and their controllers could not
 * run on kwok nodes anyway. Each Release keeps its resource, name, namespace,
 * version and values, and the Kubernetes provider installs it for real with
 * Helm; only its chart is an empty local chart of the same name and version.
 * So the engine's plan for the releases (create, update on a values change,
 * nothing on a re-preview) is the real one, and what a chart would install is
 * not on the API server (its CRDs are: the k8s suite's vendored ones).
 */
import * as fs from "node:fs";
import * as path from "node:path";
import type * as pulumi from "@pulumi/pulumi";

const RELEASE = "kubernetes:helm.sh/v3:Release";

/** The chart's name as Helm knows it: the last segment of an OCI reference, else the chart field. */
function chartName(chart: string): string {
  return chart.split("/").at(-1) ?? chart;
}

/** Writes an empty chart `<dir>/<name>-<version>` (Chart.yaml only) once, and returns its path. */
function emptyChart(dir: string, name: string, version: string): string {
  const chartDir = path.join(dir, `${name}-${version}`);
  if (!fs.existsSync(path.join(chartDir, "Chart.yaml"))) {
    fs.mkdirSync(path.join(chartDir, "templates"), { recursive: true });
    fs.writeFileSync(
      path.join(chartDir, "Chart.yaml"),
      `apiVersion: v2\nname: ${name}\nversion: ${version}\ndescription: engine-suite stand-in for ${name} ${version}\n`,
    );
  }
  return chartDir;
}

/** A stack transform: every Helm Release's chart becomes the empty local chart of its name and version. */
export function chartStandIn(dir: string): pulumi.ResourceTransform {
  return (args) => {
    if (args.type !== RELEASE) return undefined;
    const props = { ...args.props } as Record<string, unknown>;
    const chart = String(props.chart);
    const version = String(props.version ?? "0.0.0");
    props.chart = emptyChart(dir, chartName(chart), version);
    delete props.repositoryOpts;
    return { props, opts: args.opts };
  };
}
