/**
 * The catalog's data next to the pins stays equal to the pins themselves: the
 * gateway Dockerfile's base image, each chart version in pinReview.json and in
 * the support table's Kubernetes ranges.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { CHARTS } from "../../infra/catalog/charts";
import { GATEWAY_NODE_IMAGE, nodeImageRef } from "../../infra/catalog/images";
import { CHART_KUBE_RANGES, NODE_RELEASES, PYTHON_RELEASES } from "../../infra/catalog/support";
import { SCALING_CHARTS } from "../../infra/components/scaling";
import { DCGM_EXPORTER_TAG } from "../../infra/render/observability";
import review from "../../infra/catalog/pinReview.json";

const ROOT = path.resolve(__dirname, "../..");
const ISO = /^\d{4}-\d{2}-\d{2}$/;

describe("support catalog", () => {
  it("the gateway Dockerfile's NODE_IMAGE is catalog/images.ts's pin, by a manifest-list digest", () => {
    const dockerfile = readFileSync(path.join(ROOT, "images/gateway/Dockerfile"), "utf8");
    expect(/^ARG NODE_IMAGE=(.+)$/m.exec(dockerfile)?.[1]).toBe(nodeImageRef());
    expect(GATEWAY_NODE_IMAGE.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(NODE_RELEASES.releases.map((r) => r.major)).toContain(Number(GATEWAY_NODE_IMAGE.version.split(".")[0]));
  });

  it("every chart range names the pinned chart version", () => {
    const pinned: Record<string, string> = {
      "kube-prometheus-stack": SCALING_CHARTS.monitoring.version,
      keda: SCALING_CHARTS.keda.version,
      karpenter: SCALING_CHARTS.karpenter.version,
      "aws-load-balancer-controller": CHARTS.lbController.version,
      "nvidia-device-plugin": CHARTS.devicePlugin.version,
    };
    expect(Object.fromEntries(CHART_KUBE_RANGES.charts.map((c) => [c.chart, c.version]))).toEqual(pinned);
  });

  it("pinReview.json's pinned versions are the code's", () => {
    const byName = Object.fromEntries(review.pins.map((p) => [p.name, p.pinned]));
    expect(byName).toEqual({
      "kube-prometheus-stack": SCALING_CHARTS.monitoring.version,
      keda: SCALING_CHARTS.keda.version,
      karpenter: SCALING_CHARTS.karpenter.version,
      "aws-load-balancer-controller": CHARTS.lbController.version,
      "nvidia-device-plugin": CHARTS.devicePlugin.version,
      "dcgm-exporter image": DCGM_EXPORTER_TAG,
      "gateway Node base image": `${GATEWAY_NODE_IMAGE.version}-${GATEWAY_NODE_IMAGE.variant}`,
    });
  });

  it("every date is an ISO date", () => {
    const dates = [
      review.checked,
      GATEWAY_NODE_IMAGE.checked,
      CHART_KUBE_RANGES.checked,
      NODE_RELEASES.lookup.checked,
      PYTHON_RELEASES.lookup.checked,
      ...NODE_RELEASES.releases.map((r) => r.end),
      ...PYTHON_RELEASES.releases.map((r) => r.end),
    ];
    for (const d of dates) expect(d).toMatch(ISO);
  });
});
