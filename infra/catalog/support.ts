/**
 * End-of-support dates of what the stack runs, with where each was looked up:
 * the Node majors (the gateway image's and the Pulumi program's), the Python of
 * the NGC Triton images (the server and the checkpoint converter run in the same
 * triton_with_ft image), and each pinned chart's supported Kubernetes range.
 * EKS versions keep their own table (catalog/eks.ts, the one place those dates
 * live); this module judges them with the same rule.
 *
 * The rule: within WARN_DAYS of an end date a warning, past it a refusal with
 * the fix, unless the entry carries an acknowledgement (something this stack
 * cannot move, e.g. the Python inside the Triton base that FasterTransformer's
 * backend pins): then a warning that says why.
 *
 * Pure: `today` (ISO date) and the program's Node version are passed in.
 */
import semver from "semver";
import { EKS_VERSIONS, DEFAULT_KUBERNETES_VERSION, standardVersions } from "./eks";
import { GATEWAY_NODE_IMAGE } from "./images";

/** How long before an end date a preview starts warning. */
export const WARN_DAYS = 90;

export interface Lookup {
  source: string;
  /** ISO date the source was read. */
  checked: string;
}

export interface NodeRelease {
  major: number;
  /** Last day of upstream support (ISO date). */
  end: string;
}

/** Node.js release schedule (https://github.com/nodejs/Release, schedule.json), majors this stack has run on. */
export const NODE_RELEASES: { lookup: Lookup; releases: readonly NodeRelease[] } = {
  lookup: {
    source:
      "https://github.com/nodejs/Release/blob/main/schedule.json; 26.x LTS 'Lithium' since 26.13.0 " +
      "(https://github.com/nodejs/node/releases/tag/v26.13.0: 'updates through to the end of April 2029')",
    checked: "2026-11-25",
  },
  releases: [
    { major: 26, end: "2029-04-30" },
    { major: 24, end: "2028-04-30" },
    { major: 22, end: "2027-04-30" },
    { major: 20, end: "2026-04-30" },
  ],
};

export interface PythonRelease {
  version: string;
  /** Last day of upstream support (ISO date); python.org gives the month, so the month's last day. */
  end: string;
}

export const PYTHON_RELEASES: { lookup: Lookup; releases: readonly PythonRelease[] } = {
  lookup: {
    source:
      "https://devguide.python.org/versions/ (release-cycle.json: 3.10 end_of_life 2026-10, PEP 619) and " +
      "https://endoflife.date/python (3.10 eol 2026-10-31)",
    checked: "2026-11-25",
  },
  releases: [
    { version: "3.12", end: "2028-10-31" },
    { version: "3.11", end: "2027-10-31" },
    { version: "3.10", end: "2026-10-31" },
  ],
};

export interface TritonPython {
  tritonVersion: string;
  python: string;
  /** Why a past-end Python here is a warning, not a refusal; absent: it is refused like anything else. */
  acknowledged?: string;
}

/**
 * The Python each NGC Triton base ships (Ubuntu 22.04's python3 for 22.x-23.x),
 * from NVIDIA's Triton release notes / framework support matrix
 * (https://docs.nvidia.com/deeplearning/frameworks/support-matrix/index.html).
 */
export const TRITON_PYTHON: { lookup: Lookup; images: readonly TritonPython[] } = {
  lookup: {
    source:
      "https://docs.nvidia.com/deeplearning/frameworks/support-matrix/index.html (Triton 22.12 and 23.05: Ubuntu 22.04, Python 3.10)",
    checked: "2026-11-25",
  },
  images: [
    {
      tritonVersion: "23.05",
      python: "3.10",
      acknowledged:
        "FasterTransformer's Triton backend builds against Triton 23.05 at the newest (upstream's final commits, " +
        "2023-10; catalog/upstream.ts), and the image cannot take another Python without rebuilding Triton; " +
        "the builder and the server are private (no public port)",
    },
    {
      tritonVersion: "22.12",
      python: "3.10",
      acknowledged: "the backend's v1.4 release builds against Triton 22.12 only (catalog/upstream.ts)",
    },
  ],
};

export interface ChartKubeRange {
  chart: string;
  version: string;
  /** Semver range of supported Kubernetes versions (Chart.yaml kubeVersion, or the project's compatibility matrix). */
  kubeVersion: string;
  source: string;
}

/** Supported Kubernetes per pinned chart; "*" where upstream states no range. */
export const CHART_KUBE_RANGES: { checked: string; charts: readonly ChartKubeRange[] } = {
  checked: "2026-11-25",
  charts: [
    {
      chart: "kube-prometheus-stack",
      version: "88.5.3",
      kubeVersion: ">=1.25.0-0",
      source:
        "https://github.com/prometheus-community/helm-charts/blob/kube-prometheus-stack-88.5.3/charts/kube-prometheus-stack/Chart.yaml",
    },
    {
      chart: "keda",
      version: "2.20.2",
      kubeVersion: ">=v1.23.0-0",
      source: "https://github.com/kedacore/charts/blob/v2.20.2/keda/Chart.yaml",
    },
    {
      chart: "karpenter",
      version: "1.14.1",
      // No kubeVersion in the chart; the compatibility matrix's newest column (1.36) lists 1.13.x+.
      kubeVersion: ">=1.30.0-0 <1.37.0-0",
      source:
        "https://github.com/aws/karpenter-provider-aws/blob/v1.14.1/website/content/en/docs/upgrading/compatibility.md",
    },
    {
      chart: "aws-load-balancer-controller",
      version: "3.5.0",
      kubeVersion: "*",
      source:
        "https://github.com/kubernetes-sigs/aws-load-balancer-controller/blob/v3.5.0/helm/aws-load-balancer-controller/Chart.yaml (no kubeVersion)",
    },
    {
      chart: "nvidia-device-plugin",
      version: "0.20.0",
      kubeVersion: ">= 1.10.0-0",
      source:
        "https://github.com/NVIDIA/k8s-device-plugin/blob/v0.20.0/deployments/helm/nvidia-device-plugin/Chart.yaml",
    },
  ],
};

export type SupportState = "supported" | "ending" | "ended";

/** Whole days from `today` to `end` (both ISO dates); negative once past. */
export function daysUntil(end: string, today: string): number {
  return Math.round((Date.parse(`${end}T00:00:00Z`) - Date.parse(`${today}T00:00:00Z`)) / 86_400_000);
}

/** `end` is the last supported day. */
export function supportState(end: string, today: string, warnDays = WARN_DAYS): SupportState {
  const d = daysUntil(end, today);
  if (d < 0) return "ended";
  return d <= warnDays ? "ending" : "supported";
}

/** What the stack runs, as the support check needs it. */
export interface SupportInput {
  /** Node version of the Pulumi program (process.versions.node). */
  programNode: string;
  /** Node version of the gateway image; catalog/images.ts by default. */
  gatewayNode?: string;
  tritonVersion: string;
  /** The EKS version of a created cluster; absent for an existing cluster (its owner's matter). */
  kubernetesVersion?: string;
}

export interface SupportRow {
  what: string;
  version: string;
  end: string;
  state: SupportState | "unknown" | "outside range";
  /** Set when a past end is a warning by decision. */
  acknowledged?: string;
  source: string;
  /** Config key the row judges, and its value there, for findings. */
  key: string;
  value: string;
  fix: string;
}

function nodeRow(what: string, key: string, version: string, fix: string, today: string): SupportRow {
  const major = semver.major(semver.coerce(version) ?? "0.0.0");
  const r = NODE_RELEASES.releases.find((n) => n.major === major);
  const source = NODE_RELEASES.lookup.source;
  if (!r) return { what, version, end: "?", state: "unknown", source, key, value: version, fix };
  return { what, version, end: r.end, state: supportState(r.end, today), source, key, value: version, fix };
}

/** Every dated thing the stack runs, judged at `today`. */
export function supportRows(input: SupportInput, today: string): SupportRow[] {
  const newestNode = Math.max(...NODE_RELEASES.releases.map((r) => r.major));
  const rows: SupportRow[] = [
    nodeRow(
      "Node (Pulumi program)",
      "runtime",
      input.programNode,
      `run pulumi with Node ${newestNode} (package.json engines)`,
      today,
    ),
    nodeRow(
      "Node (gateway image)",
      "images/gateway/Dockerfile",
      input.gatewayNode ?? GATEWAY_NODE_IMAGE.version,
      `move ARG NODE_IMAGE to node:${newestNode}.x.y-bookworm-slim by its manifest-list digest (catalog/images.ts)`,
      today,
    ),
  ];

  const image = TRITON_PYTHON.images.find((i) => i.tritonVersion === input.tritonVersion);
  if (image) {
    const py = PYTHON_RELEASES.releases.find((p) => p.version === image.python);
    rows.push({
      what: `Python ${image.python} (Triton ${image.tritonVersion} image: server and converter)`,
      version: image.python,
      end: py?.end ?? "?",
      state: py ? supportState(py.end, today) : "unknown",
      ...(image.acknowledged ? { acknowledged: image.acknowledged } : {}),
      source: "https://devguide.python.org/versions/",
      key: "build.tritonVersion",
      value: input.tritonVersion,
      fix: image.acknowledged
        ? 'none while FasterTransformer\'s backend needs this Triton; docs/build.md, "Support dates"'
        : "use a Triton release whose Python is supported",
    });
  }

  const k = input.kubernetesVersion;
  if (k !== undefined) {
    const use = `use ${standardVersions(today).join(", ") || DEFAULT_KUBERNETES_VERSION} (default ${DEFAULT_KUBERNETES_VERSION})`;
    const eks = EKS_VERSIONS.find((v) => v.version === k);
    const source = "https://docs.aws.amazon.com/eks/latest/userguide/kubernetes-versions.html (catalog/eks.ts)";
    if (eks) {
      // Standard support ending only warns (extended support follows, billed); extended support's end refuses.
      const std = supportState(eks.standardEnd, today);
      if (std !== "ended") {
        rows.push({
          what: `EKS ${k} standard support`,
          version: k,
          end: eks.standardEnd,
          state: std,
          acknowledged: "extended support (billed per cluster hour) follows for 12 months",
          source,
          key: "cluster.kubernetesVersion",
          value: k,
          fix: use,
        });
      }
      rows.push({
        what: `EKS ${k} extended support`,
        version: k,
        end: eks.extendedEnd,
        state: supportState(eks.extendedEnd, today),
        source,
        key: "cluster.kubernetesVersion",
        value: k,
        fix: use,
      });
    }
    const minor = semver.coerce(k);
    for (const c of CHART_KUBE_RANGES.charts) {
      const inside = minor !== null && semver.satisfies(minor, c.kubeVersion, { includePrerelease: true });
      rows.push({
        what: `${c.chart} ${c.version} on Kubernetes ${k}`,
        version: c.kubeVersion,
        end: "-",
        state: inside ? "supported" : "outside range",
        source: c.source,
        key: "cluster.kubernetesVersion",
        value: k,
        fix: `use a Kubernetes version in ${c.kubeVersion}, or move the ${c.chart} chart`,
      });
    }
  }
  return rows;
}

/**
 * True when a preview refuses the stack for this row: past an unacknowledged end,
 * or outside a chart's range. (An EKS version past extended support is refused
 * by kubernetesVersionFinding in catalog/eks.ts, not by supportFindings.)
 */
export function refuses(r: SupportRow): boolean {
  return r.state === "outside range" || (r.state === "ended" && r.acknowledged === undefined);
}

export interface SupportFinding {
  key: string;
  value: string;
  message: string;
  fix: string;
}

/**
 * Findings for preview: past an end (or outside a chart's range) an error,
 * within WARN_DAYS a warning; an acknowledged row is at most a warning.
 * EKS versions past extended support, unknown or unreleased are left to
 * kubernetesVersionFinding (catalog/eks.ts), which already refuses them.
 */
export function supportFindings(
  input: SupportInput,
  today: string,
): { errors: SupportFinding[]; warnings: SupportFinding[] } {
  const errors: SupportFinding[] = [];
  const warnings: SupportFinding[] = [];
  for (const r of supportRows(input, today)) {
    const eksEnded = r.what.startsWith("EKS ") && r.state === "ended";
    if (r.state === "supported" || r.state === "unknown" || eksEnded) continue;
    const f: SupportFinding = { key: r.key, value: r.value, message: "", fix: r.fix };
    if (r.state === "outside range") {
      errors.push({
        ...f,
        message: `${r.what}: outside the chart's supported Kubernetes range ${r.version} (${r.source})`,
      });
    } else if (r.state === "ending") {
      const note = r.acknowledged ? `; after it a warning, not a refusal: ${r.acknowledged}` : "";
      warnings.push({
        ...f,
        message: `${r.what} ends on ${r.end}, in ${daysUntil(r.end, today)} days${note} (${r.source})`,
      });
    } else if (r.acknowledged) {
      warnings.push({
        ...f,
        message: `${r.what} ended on ${r.end}; acknowledged, not refused: ${r.acknowledged} (${r.source})`,
      });
    } else {
      errors.push({ ...f, message: `${r.what} ended on ${r.end} (${r.source})` });
    }
  }
  return { errors, warnings };
}
