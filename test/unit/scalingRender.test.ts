import { describe, expect, it } from "vitest";
import { parse, parseAllDocuments } from "yaml";
import { ConfigMap } from "kubernetes-models/v1/ConfigMap";
import { Service } from "kubernetes-models/v1/Service";
import { DaemonSet } from "kubernetes-models/apps/v1/DaemonSet";
import { NetworkPolicy } from "kubernetes-models/networking.k8s.io/v1/NetworkPolicy";
import { resolveStack, formatProblems } from "../../infra/resolve";
import type { ResolvedStack } from "../../infra/config/stack";
import { crdObjects, scalingFiles, scrapeConfig, type StackScalingManifests } from "../../infra/render/scaling";
import { queueComputeRatioQuery } from "../../infra/render/prometheus";
import { capacityTypes } from "../../infra/render/karpenter";
import { GPU_NODE_AMI } from "../../infra/catalog/amis";
import { DCGM_COUNTERS, MODEL_SERIES_LABEL, nodeLabelMetaName } from "../../infra/render/observability";
import { INSTANCE_TYPE_LABEL } from "../../infra/render/scheduling";
import { planWorkload } from "../../infra/resolve/workload";
import { renderGatewayManifests } from "../../infra/render/gatewayManifests";
import { crdProvenance, CRD_FILES, validateCustomResource } from "../lib/crdSchema";
import { gpt2Config, withOverrides, type RawConfig } from "../lib/fixtures";
import {
  gptjAutoscaled,
  renderOneModelScaling,
  renderSeedModelsScaling,
  renderStackScaling,
  scalingView,
  seedModelsPlan,
  shippedQueries,
} from "../lib/scalingFixtures";
import { gatewayOf } from "../lib/plan";

import { MODEL_NODE_LABEL_KEY } from "../../infra/conventions/workload";
const NO_SECRETS = { hfToken: false, kubeconfig: false };
function resolved(cfg: RawConfig): ResolvedStack {
  const { stack, problems } = resolveStack(cfg, NO_SECRETS);
  if (!stack) throw new Error(formatProblems("t", problems));
  return stack;
}
const REFS = {
  role: "triton-ft-dev-gpu-nodes",
  subnetIds: ["subnet-0123456789abcdef0", "subnet-0fedcba9876543210"],
  securityGroupIds: ["sg-0123456789abcdef0"],
  tags: { project: "triton-ft" },
};

function scaled(extra: Record<string, unknown> = {}, monitor = true) {
  const cfg = gptjAutoscaled(extra);
  cfg.serving.serviceMonitor = monitor;
  return renderStackScaling(resolved(cfg), "dev", REFS);
}

describe("KEDA ScaledObject", () => {
  it("scales the Triton Deployment between min and max on the queue/compute ratio", () => {
    const m = scaled();
    const so = m.scaledObject;
    expect(so?.spec.scaleTargetRef).toEqual({ apiVersion: "apps/v1", kind: "Deployment", name: "triton-gpt-j-6b" });
    expect(so?.spec.minReplicaCount).toBe(2);
    expect(so?.spec.maxReplicaCount).toBe(8);
    const trigger = so?.spec.triggers[0];
    expect(trigger?.type).toBe("prometheus");
    expect(trigger?.metricType).toBe("Value");
    expect(trigger?.metadata.threshold).toBe("0.5");
    expect(trigger?.metadata.serverAddress).toBe("http://prometheus-operated.monitoring.svc:9090");
    expect(trigger?.metadata.query).toBe(
      'sum(rate(nv_inference_queue_duration_us{namespace="triton",service="triton-gpt-j-6b-metrics",model="fastertransformer"}[60s])) / clamp_min(sum(rate(nv_inference_compute_infer_duration_us{namespace="triton",service="triton-gpt-j-6b-metrics",model="fastertransformer"}[60s])), 1)',
    );
    expect(trigger?.metadata.ignoreNullValues).toBe("false");
    expect(so?.spec.advanced.horizontalPodAutoscalerConfig.behavior).toEqual({
      scaleUp: m.autoscaling?.scaleUp,
      scaleDown: m.autoscaling?.scaleDown,
    });
  });

  it("is absent for a fixed-size stack, which still gets the dashboard, DCGM and alerts", () => {
    const m = renderStackScaling(resolved(gpt2Config()));
    expect(m.scaledObject).toBeUndefined();
    expect(m.nodePool).toBeUndefined();
    expect(m.prometheusRule.spec.groups[0].rules.map((r) => r.alert)).not.toContain("TritonScalingAtMax");
    expect(m.dcgm.daemonSet.kind).toBe("DaemonSet");
  });

  it("matches the metric selector the ServiceMonitor and the plain scrape config produce", () => {
    const s = resolved(gpt2Config());
    const jobs = scrapeConfig([{ modelName: s.model.name, namespace: s.config.serving.namespace }])
      .scrape_configs as Array<{ relabel_configs: Array<{ target_label?: string }> }>;
    for (const j of jobs) {
      const targets = j.relabel_configs.map((r) => r.target_label).filter(Boolean);
      expect(targets).toEqual(["namespace", "service", "pod"]);
    }
    expect(queueComputeRatioQuery({ namespace: "ns", service: "svc" })).toContain('namespace="ns",service="svc"');
  });
});

describe("Karpenter NodePool and EC2NodeClass", () => {
  it("provisions the serving instance type with the GPU taint and limits from max", () => {
    const m = scaled();
    const np = m.nodePool;
    const req = Object.fromEntries((np?.spec.template.spec.requirements ?? []).map((r) => [r.key, r.values]));
    expect(req["node.kubernetes.io/instance-type"]).toEqual(["g5.2xlarge"]);
    expect(req["karpenter.sh/capacity-type"]).toEqual(["on-demand"]);
    expect(np?.spec.template.spec.taints).toEqual([{ key: "nvidia.com/gpu", value: "true", effect: "NoSchedule" }]);
    // 8 pods + 1 surge at one pod per g5.2xlarge (8 vCPU, 32 GiB, 1 GPU).
    expect(np?.spec.limits).toEqual({ cpu: "72", memory: "288Gi", "nvidia.com/gpu": "9" });
    expect(np?.spec.disruption).toEqual({
      consolidationPolicy: "WhenEmpty",
      consolidateAfter: `${m.autoscaling?.consolidateAfterSeconds}s`,
      budgets: [{ nodes: "1" }],
    });
    expect(np?.spec.template.spec.nodeClassRef.name).toBe(m.ec2NodeClass?.metadata.name);
  });

  it("boots the pinned AL2023 AMI (NVIDIA variant by instance type) with the derived encrypted root volume and IMDSv2", () => {
    const s = resolved(gptjAutoscaled());
    const nc = renderStackScaling(s, "dev", REFS).ec2NodeClass;
    expect(nc?.spec.amiSelectorTerms).toEqual([{ alias: GPU_NODE_AMI.alias }]);
    expect(GPU_NODE_AMI.alias).toMatch(/^al2023@v\d{8}$/);
    expect(nc?.spec.blockDeviceMappings[0]).toMatchObject({
      deviceName: "/dev/xvda",
      rootVolume: true,
      ebs: { volumeSize: `${s.nodeDiskGiB}Gi`, volumeType: "gp3", encrypted: true },
    });
    expect(nc?.spec.metadataOptions).toMatchObject({ httpTokens: "required", httpPutResponseHopLimit: 1 });
    expect(nc?.spec.role).toBe(REFS.role);
    expect(nc?.spec.subnetSelectorTerms).toEqual(REFS.subnetIds.map((id) => ({ id })));
    expect(nc?.spec.capacityReservationSelectorTerms).toBeUndefined();
    expect(nc?.spec.userData).toContain("FastImagePull: true");
    expect(nc?.spec.blockDeviceMappings[0].ebs).toMatchObject({ throughput: 1000, iops: 16000 });
    expect(scaled({ fastImagePull: false }).ec2NodeClass?.spec.userData).toBeUndefined();
  });

  it("offers spot with on-demand fallback, and capacity reservations first", () => {
    expect(capacityTypes("spot", 0)).toEqual(["spot", "on-demand"]);
    expect(capacityTypes("on-demand", 1)).toEqual(["reserved", "on-demand"]);
    const m = scaled({ capacityReservationIds: ["cr-0123456789abcdef0"] });
    expect(m.ec2NodeClass?.spec.capacityReservationSelectorTerms).toEqual([{ id: "cr-0123456789abcdef0" }]);
  });
});

describe("alerts and dashboard", () => {
  it("alerts on queue time, errors, GPU memory, pods not ready, absent metrics and scaling at max", () => {
    const m = scaled();
    const rules = m.prometheusRule.spec.groups[0].rules;
    expect(rules.map((r) => r.alert)).toEqual([
      "TritonQueueTimeHigh",
      "TritonErrorRateHigh",
      "TritonGpuMemoryNearFull",
      "TritonPodsNotReady",
      "TritonMetricsAbsent",
      "GatewayServerErrorsHigh",
      "GatewayStoreDegraded",
      "TritonScalingAtMax",
    ]);
    const byName = Object.fromEntries(rules.map((r) => [r.alert, r]));
    // Any gateway pod without the shared store for over a minute (the default managed store here).
    expect(byName.GatewayStoreDegraded.for).toBe("1m");
    expect(byName.GatewayStoreDegraded.expr).toBe(
      '(sum(triton_ft_gateway_store_degraded{namespace="triton",service="triton-gpt-j-6b-gateway-metrics"})) > 0',
    );
    // Not-ready only counts once a cold start is over.
    expect(byName.TritonPodsNotReady.for).toBe(`${Math.ceil((m.autoscaling?.coldStartBudgetSeconds ?? 0) / 60)}m`);
    expect(byName.TritonGpuMemoryNearFull.expr).toMatch(/> 0\.92$/);
    expect(byName.TritonScalingAtMax.expr).toContain(">= 8");
  });

  it("has panels for every signal the issue names, with queries only", () => {
    const d = scaled().dashboard;
    expect(d.panels.map((p) => p.title)).toEqual([
      "Queue / compute time ratio",
      "Requests per second",
      "Mean request and queue time",
      "Time to first token (gateway)",
      "Request latency p50 / p95 (gateway)",
      "Tokens per second (gateway)",
      "Gateway: requests by status, in flight, pods",
      "Tokens per team (gateway)",
      "Refused per team (429) and the shared store",
      "Error ratio",
      "Pending requests and batch size",
      "GPU utilisation",
      "GPU memory used",
      "Replicas and GPU nodes",
      "$ per 1k generated tokens (live)",
      "GPU $/hour by team (share of generated tokens)",
    ]);
    for (const p of d.panels) expect(p.type === "row" ? [] : p.targets).not.toHaveLength(0);
    const perTeam = d.panels
      .flatMap((p) => (p.type === "row" ? [] : [p]))
      .find((p) => p.title === "Tokens per team (gateway)")!;
    expect(perTeam.targets.map((t) => t.legendFormat)).toEqual(["{{consumer}} prompt", "{{consumer}} generated"]);
    for (const t of perTeam.targets) expect(t.expr).toMatch(/^sum by \(consumer\)/);
  });

  it("has no store alert or store series without a shared store (serving.store.mode none)", () => {
    const m = renderStackScaling(
      resolved(withOverrides(gptjAutoscaled(), { serving: { store: { mode: "none" } } })),
      "dev",
      REFS,
    );
    expect(m.prometheusRule.spec.groups[0].rules.map((r) => r.alert)).not.toContain("GatewayStoreDegraded");
    expect(JSON.stringify(m.dashboard)).not.toContain("store_degraded");
  });

  it("prices the live cost panels at the serving instance's table price: GPU-hours paid ÷ tokens served", () => {
    const panels = scaled().dashboard.panels.flatMap((p) => (p.type === "row" ? [] : [p]));
    const perToken = panels.find((p) => p.title === "$ per 1k generated tokens (live)");
    // gptjAutoscaled serves on g5.2xlarge: the table's us-east-1 price, times the GPU nodes DCGM reports.
    expect(perToken?.targets[0]?.expr).toMatch(
      /^\(count\(count by \(Hostname\) \(DCGM_FI_DEV_GPU_UTIL\{namespace="[^"]+"\}\)\) \* 1\.212\) \/ clamp_min\(sum\(rate\(triton_ft_gateway_output_tokens_total\{[^}]+\}\[\d+s\]\)\) \* 3600, 1e-9\) \* 1000$/,
    );
    expect(perToken?.description).toContain("g5.2xlarge at $1.212/h");
    const byTeam = panels.find((p) => p.title === "GPU $/hour by team (share of generated tokens)");
    expect(byTeam?.targets[0]?.expr).toContain("sum by (consumer)");
    expect(byTeam?.targets[0]?.legendFormat).toBe("{{consumer}}");
  });
});

describe("restricted pod security profile", () => {
  it("runs the DCGM exporter non-root, without capabilities, host paths or a service account token", () => {
    const ds = scaled().dcgm.daemonSet;
    const pod = ds.spec?.template.spec;
    expect(pod?.automountServiceAccountToken).toBe(false);
    expect(pod?.securityContext).toMatchObject({ runAsNonRoot: true, seccompProfile: { type: "RuntimeDefault" } });
    expect(pod?.hostNetwork).toBeUndefined();
    expect(pod?.hostPID).toBeUndefined();
    for (const v of pod?.volumes ?? []) expect(v.hostPath).toBeUndefined();
    for (const c of pod?.containers ?? []) {
      expect(c.securityContext).toMatchObject({
        allowPrivilegeEscalation: false,
        readOnlyRootFilesystem: true,
        runAsNonRoot: true,
        capabilities: { drop: ["ALL"] },
      });
      expect(c.securityContext?.capabilities?.add).toBeUndefined();
      expect(c.resources?.limits?.memory).toBeDefined();
    }
    expect(Object.keys(ds.metadata?.labels ?? {})).toEqual(
      expect.arrayContaining(["app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/managed-by"]),
    );
  });

  it("collects only non-profiling DCGM fields (no SYS_ADMIN needed)", () => {
    for (const [field] of DCGM_COUNTERS) expect(field).not.toMatch(/^DCGM_FI_PROF_/);
  });
});

describe("schemas", () => {
  const autoscaled = (extra: Record<string, unknown> = {}) => {
    const cfg = gptjAutoscaled(extra);
    cfg.serving.serviceMonitor = true;
    return renderOneModelScaling(resolved(cfg), "dev", REFS);
  };
  const variants: Array<[string, () => StackScalingManifests]> = [
    ["on-demand", () => autoscaled()],
    ["spot", () => autoscaled({ capacityType: "spot" })],
    ["reservations", () => autoscaled({ capacityReservationIds: ["cr-0123456789abcdef0"] })],
    ["fixed size", () => renderOneModelScaling(resolved(gpt2Config()))],
    // The stack's DCGM (node metadata, relabeling), dashboard and alerts, and every model's own objects.
    ["several models", () => renderSeedModelsScaling()],
  ];
  for (const [label, make] of variants) {
    it(`validates every CRD-based object against its vendored CRD (${label})`, () => {
      for (const obj of crdObjects(make())) validateCustomResource(obj);
    });
    it(`validates the built-in objects with kubernetes-models (${label})`, () => {
      const m = make().shared;
      new ConfigMap(m.dcgm.configMap).validate();
      new DaemonSet(m.dcgm.daemonSet).validate();
      new Service(m.dcgm.service).validate();
      new NetworkPolicy(m.dcgm.networkPolicy).validate();
      new ConfigMap(m.dashboardConfigMap).validate();
    });
  }

  it("the CRD check rejects a wrong type, an unknown field and a bad enum", () => {
    const m = scaled();
    const so = structuredClone(m.scaledObject) as unknown as { spec: Record<string, unknown> };
    so.spec.minReplicaCount = "two";
    expect(() => validateCustomResource(so as never)).toThrow(/minReplicaCount/);
    const np = structuredClone(m.nodePool) as unknown as { spec: { disruption: Record<string, unknown> } };
    np.spec.disruption.consolidationPolicy = "WhenIdle";
    expect(() => validateCustomResource(np as never)).toThrow(/consolidationPolicy/);
    const nc = structuredClone(m.ec2NodeClass) as unknown as { spec: Record<string, unknown> };
    nc.spec.amiSelector = [];
    expect(() => validateCustomResource(nc as never)).toThrow(/additional properties.*amiSelector/);
  });

  it("every vendored CRD names its source and version", () => {
    for (const file of Object.values(CRD_FILES)) {
      const p = crdProvenance(file);
      expect(p.source).toMatch(/^https:\/\/github\.com\/[^/]+\/[^/]+\/blob\/[\w.-]*\d+\.\d+\.\d+\//);
      expect(p.version).toMatch(/^v?\d+\.\d+\.\d+ \(commit [0-9a-f]{40}[;)]/);
    }
  });
});

describe("synth files", () => {
  it("writes operator objects when the operator is present, plain Prometheus config otherwise", () => {
    const s = resolved(gptjAutoscaled());
    const w = [{ modelName: s.model.name, namespace: s.config.serving.namespace }];
    const withOp = scalingFiles(
      renderOneModelScaling({ ...s, config: { ...s.config, serving: { ...s.config.serving, serviceMonitor: true } } }),
      w,
    );
    expect(Object.keys(withOp).sort()).toEqual([
      "dashboards/triton-gpt-j-6b.json",
      "k8s/70-dcgm-exporter.yaml",
      "k8s/71-dcgm-servicemonitor.yaml",
      "k8s/71-gateway-servicemonitor.yaml",
      "k8s/72-dashboard-configmap.yaml",
      "k8s/73-prometheusrule.yaml",
      "k8s/80-gateway-scaledobject.yaml",
      "k8s/80-scaledobject.yaml",
      "k8s/81-ec2nodeclass.yaml",
      "k8s/82-nodepool.yaml",
    ]);
    const plain = scalingFiles(renderOneModelScaling(s), w);
    expect(Object.keys(plain)).toContain("prometheus/scrape-config.yaml");
    expect(Object.keys(plain)).toContain("prometheus/rules.yaml");
    expect(Object.keys(plain)).not.toContain("k8s/73-prometheusrule.yaml");
    expect(
      parseAllDocuments(plain["k8s/70-dcgm-exporter.yaml"] ?? "").map((d) => (d.toJS() as { kind: string }).kind),
    ).toEqual(["ConfigMap", "DaemonSet", "Service", "NetworkPolicy"]);
    const dash = JSON.parse(plain["dashboards/triton-gpt-j-6b.json"] ?? "{}") as { panels: unknown[] };
    // 12 panels, the two per-team ones (tokens, refusals with the store) and the two live cost ones.
    expect(dash.panels).toHaveLength(16);
    // The plain scrape config covers the gateway too (its series carry the same namespace/service labels).
    const jobs = (
      parse(plain["prometheus/scrape-config.yaml"] ?? "") as { scrape_configs: Array<{ job_name: string }> }
    ).scrape_configs;
    expect(jobs.map((j) => j.job_name)).toEqual([
      "triton/triton-gpt-j-6b-metrics",
      "triton/triton-gpt-j-6b-gateway-metrics",
      "triton/triton-gpt-j-6b-dcgm-exporter",
    ]);
    expect((parse(plain["prometheus/rules.yaml"] ?? "") as { groups: unknown[] }).groups).toHaveLength(1);
  });

  it("stays consistent with the workload plan", () => {
    const s = resolved(gptjAutoscaled());
    const w = planWorkload(s);
    const m = renderStackScaling(s);
    expect(m.autoscaling?.coldStartBudgetSeconds).toBe(180 + w.pullSeconds + w.startupBudgetSeconds);
    expect(withOverrides).toBeDefined();
  });
});

describe("the gateway's ServiceMonitor and ScaledObject", () => {
  it("select the gateway's real metrics Service and Deployment", () => {
    const s = resolved(gptjAutoscaled());
    const m = renderStackScaling(s, "dev", REFS);
    const g = renderGatewayManifests({
      ...gatewayOf(s, (p) => `h:${p}`, "dev").workload,
      image: "gateway:synth",
      keysJson: "{}",
    });
    const svcLabels = g.metricsService.metadata?.labels ?? {};
    for (const [k, v] of Object.entries(m.gatewayServiceMonitor.spec.selector.matchLabels))
      expect(svcLabels[k], k).toBe(v);
    // Not the Triton or DCGM metrics Services: the component tells them apart.
    expect(m.gatewayServiceMonitor.spec.selector.matchLabels["app.kubernetes.io/component"]).toBe("gateway-metrics");
    expect(m.gatewayServiceMonitor.spec.endpoints[0].port).toBe(g.metricsService.spec?.ports?.[0]?.name);
    const so = m.gatewayScaledObject;
    expect(so?.spec.scaleTargetRef.name).toBe(g.deployment.metadata?.name);
    expect(so?.spec.triggers[0].metadata.query).toBe(
      `sum(triton_ft_gateway_inflight_requests{namespace="triton",service="${g.metricsService.metadata?.name}"})`,
    );
    // An empty result (broken scrape) is an error that holds the size, as for Triton.
    expect(so?.spec.triggers[0].metadata.ignoreNullValues).toBe("false");
    expect(g.deployment.spec?.replicas).toBeUndefined();
    expect(g.podDisruptionBudget.spec).toMatchObject({ maxUnavailable: 1 });
  });

  it("has no gateway ScaledObject at a fixed size", () => {
    expect(renderStackScaling(resolved(gpt2Config())).gatewayScaledObject).toBeUndefined();
  });
});

describe("a stack of several models (test/stacks/models)", () => {
  const { plan } = seedModelsPlan();
  const shared = renderSeedModelsScaling().shared;
  const models = plan.models.map((e) => ({
    id: e.id,
    deployment: `triton-${e.id}`,
    metricsService: `triton-${e.id}-metrics`,
    instanceType: e.plan.serving.instanceType,
    autoscaling: e.plan.autoscaling,
  }));
  /** Every `metric{matchers}` of an expression, with its equality matchers. */
  const selectors = (expr: string) =>
    [...expr.matchAll(/([A-Za-z_:][A-Za-z0-9_:]*)\{([^}]*)\}/g)].map(([, metric, body]) => ({
      metric: metric ?? "",
      labels: Object.fromEntries([...(body ?? "").matchAll(/(\w+)="([^"]*)"/g)].map(([, k, v]) => [k, v])),
    }));
  /** The selectors of one model's expression select that model's series only; returns which exporters it read. */
  const onlyOwnSeries = (expr: string, m: (typeof models)[number]): Set<string> => {
    const read = new Set<string>();
    for (const s of selectors(expr)) {
      const where = `${s.metric} in ${expr}`;
      if (s.metric.startsWith("nv_")) expect(s.labels.service, where).toBe(m.metricsService);
      else if (s.metric.startsWith("triton_ft_gateway_")) expect(s.labels.model, where).toBe(m.id);
      else if (s.metric.startsWith("DCGM_")) expect(s.labels.model, where).toBe(m.id);
      else if (s.metric.startsWith("kube_deployment_")) expect(s.labels.deployment, where).toBe(m.deployment);
      else throw new Error(`unexpected series ${where}`);
      read.add(s.metric.split("_")[0] ?? "");
    }
    return read;
  };

  it("has three models on two GPU instance types (what the checks below rely on)", () => {
    expect(models.map((m) => m.id)).toEqual(["h2ogpt-6-9b", "kogpt-6b", "codegen-2b-mono"]);
    expect(new Set(models.map((m) => m.instanceType)).size).toBe(2);
    expect(models.filter((m) => m.autoscaling).map((m) => m.id)).toEqual(["codegen-2b-mono"]);
  });

  it("runs the DCGM exporter on every model's GPU instance types and labels its series with the node's model", () => {
    const terms =
      shared?.dcgm.daemonSet.spec?.template.spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution
        ?.nodeSelectorTerms;
    expect(terms?.[0]?.matchExpressions).toEqual([
      { key: INSTANCE_TYPE_LABEL, operator: "In", values: [...new Set(models.map((m) => m.instanceType))] },
    ]);
    // Prometheus names a node label in service discovery with every character outside [A-Za-z0-9_] as `_`.
    expect(nodeLabelMetaName(MODEL_NODE_LABEL_KEY)).toBe("__meta_kubernetes_node_label_triton_ft_io_model");
    const monitor = shared?.dcgm.serviceMonitor.spec;
    expect(monitor?.attachMetadata).toEqual({ node: true });
    expect(monitor?.endpoints[0]?.relabelings).toEqual([
      { sourceLabels: [nodeLabelMetaName(MODEL_NODE_LABEL_KEY)], targetLabel: MODEL_SERIES_LABEL, action: "replace" },
    ]);
    // The label the relabeling reads is on every model's GPU nodes: its pods require it, its NodePool sets it.
    for (const e of plan.models)
      expect(e.plan.renderInputs.triton.modelNodeLabel).toEqual({ key: MODEL_NODE_LABEL_KEY, value: e.id });
    const codegen = renderSeedModelsScaling().models[2];
    expect(codegen?.nodePool?.spec.template.metadata.labels[MODEL_NODE_LABEL_KEY]).toBe("codegen-2b-mono");
  });

  it("gives every model a dashboard row: queue/compute ratio, TTFT, tokens/s, requests, replicas, GPU utilisation, on its own series", () => {
    const panels = shared?.dashboard.panels ?? [];
    const rows = panels.flatMap((p, n) => (p.type === "row" ? [n] : []));
    expect(rows).toHaveLength(models.length);
    for (const [r, m] of models.entries()) {
      const start = rows[r] ?? 0;
      expect(panels[start]?.title.startsWith(`${m.id} (`)).toBe(true);
      const own = panels.slice(start + 1, rows[r + 1] ?? panels.length);
      expect(own.map((p) => p.title)).toEqual([
        "Queue / compute time ratio",
        "Time to first token (gateway)",
        "Tokens per second (gateway)",
        "Requests per second",
        "Replicas and GPU nodes",
        "GPU utilisation",
      ]);
      const read = new Set<string>();
      for (const p of own)
        for (const t of p.type === "row" ? [] : p.targets) for (const x of onlyOwnSeries(t.expr, m)) read.add(x);
      expect([...read].sort()).toEqual(["DCGM", "kube", "nv", "triton"]);
      const ratio = own[0]?.type === "row" ? [] : (own[0]?.targets ?? []);
      expect(ratio.map((t) => t.expr).includes(`vector(${m.autoscaling?.target})`)).toBe(m.autoscaling !== undefined);
    }
    // Unique panel ids, and no two panels on the same grid cell.
    expect(new Set(panels.map((p) => p.id)).size).toBe(panels.length);
    expect(new Set(panels.map((p) => `${p.gridPos.x},${p.gridPos.y}`)).size).toBe(panels.length);
  });

  it("prices each model's row at its own GPU nodes' price, over its own tokens", () => {
    const priced = renderSeedModelsScaling(true).shared;
    const panels = priced?.dashboard.panels ?? [];
    const rows = panels.flatMap((p, n) => (p.type === "row" ? [n] : []));
    const prices = new Set<string>();
    for (const [r, m] of models.entries()) {
      const own = panels
        .slice((rows[r] ?? 0) + 1, rows[r + 1] ?? panels.length)
        .flatMap((p) => (p.type === "row" ? [] : [p]));
      const cost = own.filter((p) => p.fieldConfig.defaults.unit === "currencyUSD");
      expect(
        cost.map((p) => p.title),
        m.id,
      ).toEqual(["$ per 1k generated tokens (live)", "GPU $/hour by team (share of generated tokens)"]);
      for (const p of cost) for (const t of p.targets) onlyOwnSeries(t.expr, m);
      // Its instance type's price: `(count(... its GPU nodes ...) * <price>)`.
      const price = /\* ([0-9.]+)\)/.exec(cost[0]?.targets[0]?.expr ?? "")?.[1] ?? "";
      expect(cost[0]?.description, m.id).toContain(`${m.instanceType} at $${price}/h`);
      prices.add(`${m.instanceType} ${price}`);
    }
    // Two instance types, two prices.
    expect(new Set([...prices].map((p) => p.split(" ")[1])).size).toBe(2);
    // No stack-wide cost panel mixes the models' prices.
    expect(
      panels.slice(0, rows[0]).some((p) => p.type !== "row" && p.fieldConfig.defaults.unit === "currencyUSD"),
    ).toBe(false);
  });

  it("fires alerts per model: one group each, on its own series and thresholds, labelled with the model", () => {
    const groups = shared?.prometheusRule.spec.groups ?? [];
    expect(groups.map((g) => g.name)).toEqual([
      ...models.map((m) => `${m.deployment}.rules`),
      "triton-h2ogpt-6-9b-gateway.rules",
    ]);
    for (const [n, m] of models.entries()) {
      const rules = groups[n]?.rules ?? [];
      for (const r of rules) {
        expect(r.labels.model).toBe(m.id);
        onlyOwnSeries(r.expr, m);
      }
      const byName = Object.fromEntries(rules.map((r) => [r.alert, r]));
      expect(Object.keys(byName).includes("TritonScalingAtMax")).toBe(m.autoscaling !== undefined);
      if (m.autoscaling) expect(byName.TritonScalingAtMax?.expr).toContain(`>= ${m.autoscaling.maxReplicas}`);
      expect(byName.TritonQueueTimeHigh?.for).toBe(
        m.autoscaling ? `${Math.ceil(m.autoscaling.scaleUpLatencySeconds / 60)}m` : "10m",
      );
      expect(byName.GatewayServerErrorsHigh).toBeDefined();
    }
    // Requests the gateway routed to no model: `model=""` matches the series without the label.
    const [gatewayRule] = groups.at(-1)?.rules ?? [];
    expect(gatewayRule?.alert).toBe("GatewayServerErrorsHigh");
    for (const s of selectors(gatewayRule?.expr ?? "")) expect(s.labels.model).toBe("");
  });

  it("scrapes each model's Triton, the gateway and DCGM (with the node's model) without the Operator", () => {
    const config = scrapeConfig(plan.models.map((e) => e.plan.renderInputs.triton)) as {
      scrape_configs: Array<{
        job_name: string;
        kubernetes_sd_configs: Array<{ attach_metadata?: { node: boolean } }>;
        relabel_configs: Array<{ source_labels?: string[]; target_label?: string }>;
      }>;
    };
    expect(config.scrape_configs.map((j) => j.job_name)).toEqual([
      ...models.map((m) => `triton/${m.metricsService}`),
      "triton/triton-h2ogpt-6-9b-gateway-metrics",
      "triton/triton-h2ogpt-6-9b-dcgm-exporter",
    ]);
    const dcgm = config.scrape_configs.at(-1);
    expect(dcgm?.kubernetes_sd_configs[0]?.attach_metadata).toEqual({ node: true });
    expect(dcgm?.relabel_configs.at(-1)).toEqual({
      source_labels: [nodeLabelMetaName(MODEL_NODE_LABEL_KEY)],
      target_label: MODEL_SERIES_LABEL,
    });
    for (const j of config.scrape_configs.slice(0, -1))
      expect(j.kubernetes_sd_configs[0]?.attach_metadata).toBeUndefined();
  });

  it("decides the Prometheus Operator for the stack: the autoscaled model installs it, every model gets its ServiceMonitor", () => {
    expect(plan.models.map((e) => e.plan.renderInputs.triton.serviceMonitor)).toEqual([true, true, true]);
    expect(shared?.operatorPresent).toBe(true);
  });

  it("leaves a one-model stack's DCGM, dashboard and alerts without rows or model matchers", () => {
    const stack = renderOneModelScaling(resolved(gpt2Config()));
    const m = scalingView(stack);
    expect(m.dashboard.panels.some((p) => p.type === "row")).toBe(false);
    expect(m.dcgm.serviceMonitor.spec.attachMetadata).toBeUndefined();
    expect(m.prometheusRule.spec.groups).toHaveLength(1);
    for (const q of shippedQueries(stack))
      for (const s of selectors(q.expr))
        if (!s.metric.startsWith("nv_")) expect(s.labels.model, q.where).toBeUndefined();
  });
});
