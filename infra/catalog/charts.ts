/**
 * Pinned Helm charts of the cluster add-ons, with where each version was
 * checked. Moving a chart is a one-line change here plus, for the load
 * balancer controller, its published IAM policy (infra/data/aws-load-balancer-controller/<appVersion>/);
 * a unit test fails while the two disagree.
 */

export interface ChartPin {
  chart: string;
  repo: string;
  version: string;
  /** The application version the chart deploys. */
  appVersion: string;
  /** Where the version was checked: the upstream tag holding the chart's Chart.yaml. */
  source: string;
}

export const CHARTS = {
  /** v2.10+ is needed for NLB listener attributes (the idle timeout); 3.5.0 is the release of 2026-08-03. */
  lbController: {
    chart: "aws-load-balancer-controller",
    repo: "https://aws.github.io/eks-charts",
    version: "3.5.0",
    appVersion: "v3.5.0",
    source:
      "https://github.com/kubernetes-sigs/aws-load-balancer-controller/blob/v3.5.0/helm/aws-load-balancer-controller/Chart.yaml",
  },
  /** v0.20.0, the release of 2026-08-19. */
  devicePlugin: {
    chart: "nvidia-device-plugin",
    repo: "https://nvidia.github.io/k8s-device-plugin",
    version: "0.20.0",
    appVersion: "0.20.0",
    source: "https://github.com/NVIDIA/k8s-device-plugin/blob/v0.20.0/deployments/helm/nvidia-device-plugin/Chart.yaml",
  },
} as const satisfies Record<string, ChartPin>;
