/**
 * Pinned Helm charts of the cluster add-ons and of autoscaling, with where and
 * when each version was checked: the one place a chart version lives
 * (infra/catalog/pinReview.json records the newest release seen for each).
 * Moving a chart is a one-line change here plus, for the load balancer
 * controller and Karpenter, the IAM documents they publish with each release
 * (infra/data/aws-load-balancer-controller/<appVersion>/, infra/data/karpenter/v<appVersion>/);
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
  /** When it was last checked against upstream (ISO date; infra/catalog/pinReview.json). */
  checked: string;
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
    checked: "2026-11-25",
  },
  /** v0.20.0, the release of 2026-08-19. */
  devicePlugin: {
    chart: "nvidia-device-plugin",
    repo: "https://nvidia.github.io/k8s-device-plugin",
    version: "0.20.0",
    appVersion: "0.20.0",
    source: "https://github.com/NVIDIA/k8s-device-plugin/blob/v0.20.0/deployments/helm/nvidia-device-plugin/Chart.yaml",
    checked: "2026-11-25",
  },
  /** Queue-based scaling of the Triton pods and the gateway (serving.autoscaling). */
  keda: {
    chart: "keda",
    repo: "https://kedacore.github.io/charts",
    version: "2.20.2",
    appVersion: "2.20.2",
    source: "https://github.com/kedacore/charts/blob/v2.20.2/keda/Chart.yaml",
    checked: "2026-11-25",
  },
  /** The Prometheus a created cluster gets when it autoscales without one of its own (components/scaling.ts installMonitoring). */
  monitoring: {
    chart: "kube-prometheus-stack",
    repo: "https://prometheus-community.github.io/helm-charts",
    version: "88.5.3",
    appVersion: "v0.93.1",
    source:
      "https://github.com/prometheus-community/helm-charts/blob/kube-prometheus-stack-88.5.3/charts/kube-prometheus-stack/Chart.yaml",
    checked: "2026-11-25",
  },
  /** GPU nodes that follow the Triton pods; its IAM template is vendored per release (infra/data/karpenter/). */
  karpenter: {
    chart: "oci://public.ecr.aws/karpenter/karpenter",
    repo: "oci://public.ecr.aws/karpenter",
    version: "1.14.1",
    appVersion: "1.14.1",
    source: "https://github.com/aws/karpenter-provider-aws/releases/tag/v1.14.1",
    checked: "2026-11-25",
  },
} as const satisfies Record<string, ChartPin>;
