/**
 * synth writer for the Kubernetes manifests: `<out>/k8s/*.yaml`, exactly what
 * the TritonService component applies; the workload numbers (sizing, probe
 * budgets, timeouts) are the plan's `kubernetes` section.
 *
 * In a stack of several models each model's Triton workload and its own
 * scaling objects (ScaledObject, NodePool) go to `models/<id>/k8s/`, and what
 * the models share (the namespace, the gateway, the DCGM exporter, the
 * dashboard, the alerts) to the top-level `k8s/`: the same split as the
 * program's TritonService per model and one GatewayService and Scaling.
 *
 * The server image digest exists only after the remote bake, so synth writes a
 * digest-less `<ecr-repo-name>:synth` reference (no registry host). It marks the
 * files as offline renders; the deployed Deployment always carries
 * `<registry>/<repo>@sha256:<digest>`, and the renderer refuses anything else
 * but this marker.
 */
import { synthImageRef } from "../imageRef";
import { namePrefix, repositoryNames } from "../naming";
import { manifestFiles, renderManifests } from "../render/tritonManifests";
import { PRE_PULL_FILE, renderPrePull } from "../render/prePull";
import { prePullOnNodes } from "../resolve/workload";
import { stringify } from "yaml";
import {
  modelScalingFiles,
  renderModelScaling,
  renderStackScaling,
  scalingFiles,
  sharedScalingFiles,
  sharedScalingInput,
} from "../render/scaling";
import { gatewayManifestFiles, renderGatewayManifests } from "../render/gatewayManifests";
import { renderKeysFile } from "../plan/gatewayConfig";
import { renderStoreManifests, storeManifestFiles } from "../render/storeManifests";
import type { Plan } from "../plan";
import type { GatewayPlan } from "../plan/gateway";

import { gpuPricing } from "../cost";
import { costReport, stackCostReport } from "./costArtifacts";

import type { GatewayWorkloadInput } from "../plan/types";
import type { ArtifactWriter, SynthContext, SynthFile } from "./types";
export const K8S_OUT = "k8s";
/** The Triton namespace's file: the first model creates it, so in a stack of several it is the stack's. */
const NAMESPACE_FILE = "00-namespace.yaml";

/** The ECR repository of the server image without registry host or digest, tagged `synth`. */
export function synthServerImage(stackName: string): string {
  return synthImageRef(repositoryNames(namePrefix(stackName)).server);
}

function header(stackName: string): string {
  const image = synthServerImage(stackName);
  return `# Rendered offline by \`npm run synth\`: the image ${image} is a placeholder;\n# pulumi up deploys the server image by digest.\n`;
}

/** Triton's manifests of one model, by file name (`00-namespace.yaml` included). */
function tritonFiles(ctx: SynthContext): Record<string, string> {
  const w = ctx.plan.renderInputs.triton;
  const files = manifestFiles(renderManifests({ ...w, image: synthServerImage(ctx.stackName) }));
  // A model (not a canary) whose nodes carry the pre-pull (resolve/workload.ts), as the program decides (program.ts).
  const canary = ctx.stackPlan.canaries.some((c) => c.plan === ctx.plan);
  if (!canary && prePullOnNodes(ctx.stack)) {
    const image = synthImageRef(repositoryNames(namePrefix(ctx.stackName)).tritonWithFt);
    files[PRE_PULL_FILE] = stringify(renderPrePull(w, image), { aliasDuplicateObjects: false });
  }
  // Apply order: the files' number prefixes.
  return Object.fromEntries(Object.entries(files).sort(([a], [b]) => a.localeCompare(b)));
}

/** The gateway's manifests, by file name, after its shared store's (serving.store), if any. */
function gatewayFiles(stackName: string, plan: GatewayPlan, workload: GatewayWorkloadInput): Record<string, string> {
  const gatewayImage = synthImageRef(repositoryNames(namePrefix(stackName)).gateway);
  // Keys are generated at pulumi up; synth shows the Secret's shape with one placeholder hash per team.
  const keysJson = renderKeysFile(
    plan.consumers.map((entry) => ({ entry, keySha256: "<sha256 of the generated key>" })),
    plan.teams,
  );
  const store = workload.store;
  const storeFiles = store ? storeManifestFiles(renderStoreManifests({ ...workload, store }), store.mode) : {};
  return {
    ...storeFiles,
    ...gatewayManifestFiles(renderGatewayManifests({ ...workload, image: gatewayImage, keysJson })),
  };
}

/** `k8s/<name>` files with the offline header; scaling's own paths (`k8s/…`, `dashboards/…`, `prometheus/…`) as they are. */
function withHeader(stackName: string, k8s: Record<string, string>, scaling: Record<string, string>): SynthFile[] {
  const h = header(stackName);
  const files = Object.entries(k8s).map(([name, content]) => ({ path: `${K8S_OUT}/${name}`, content: h + content }));
  for (const [path, content] of Object.entries(scaling))
    files.push({ path, content: path.startsWith(`${K8S_OUT}/`) ? h + content : content });
  return files;
}

/** The plan's workload and autoscaling numbers, as the summary prints them. */
function workloadSummary(plan: Plan, where: string): string[] {
  const p = plan.kubernetes;
  const a = plan.autoscaling;
  return [
    `kubernetes: ${p.replicas} pod(s) × ${p.tensorParallel} GPU on ${p.gpuNodes} node(s) (${p.podsPerNode}/node), startup budget ${p.startupBudgetSeconds}s, rollout ${p.podRolloutSeconds}s/pod -> ${where}`,
    ...(a
      ? [
          `autoscaling: ${a.minReplicas}..${a.maxReplicas} pods on ratio ${a.target}, <= ${a.nodeLimits.nodes} GPU nodes, cold start ${a.expectedColdStartSeconds}s expected / ${a.coldStartBudgetSeconds}s worst, scale-down window ${a.scaleDown.stabilizationWindowSeconds}s`,
        ]
      : []),
  ];
}

export const k8sManifestsWriter: ArtifactWriter = {
  name: "kubernetes",
  owns: [K8S_OUT, "dashboards", "prometheus"],
  write(ctx) {
    const inputs = ctx.plan.renderInputs;
    // Autoscaling, GPU nodes and observability (render/scaling.ts), applied after the workload.
    // The dashboard's live cost panels price the serving instance as the estimate does (cost.json).
    const pricing = gpuPricing(costReport(ctx));
    const scaling = scalingFiles(
      renderStackScaling(
        sharedScalingInput(ctx.stackPlan.gateway.plan, [{ ...inputs.scaling, ...(pricing ? { pricing } : {}) }]),
      ),
      [inputs.triton],
    );
    const files = withHeader(
      ctx.stackName,
      {
        ...tritonFiles(ctx),
        ...gatewayFiles(ctx.stackName, ctx.stackPlan.gateway.plan, ctx.stackPlan.gateway.workload),
      },
      scaling,
    );
    // plan.json shows the stack's gateway beside the model's plan, as before the gateway became the stack's.
    return {
      files,
      plan: { gateway: ctx.stackPlan.gateway.plan },
      summary: workloadSummary(ctx.plan, `${K8S_OUT}/ (${files.length} files)`),
    };
  },
  // Several models: this model's Triton workload (the namespace is the stack's) and its own ScaledObject and NodePool.
  writeModel(ctx) {
    const triton = tritonFiles(ctx);
    delete triton[NAMESPACE_FILE];
    // A model's ScaledObject and NodePool depend on it alone; the shared objects are writeShared's.
    const files = withHeader(
      ctx.stackName,
      triton,
      modelScalingFiles(renderModelScaling(ctx.plan.renderInputs.scaling)),
    );
    return { files, summary: workloadSummary(ctx.plan, `${K8S_OUT}/ (${files.length} files)`) };
  },
  // Several models: the namespace, the gateway in front of every model, and the observability they share.
  writeShared(stack) {
    const first = stack.stackPlan.models[0];
    const firstStack = stack.models[0];
    if (!first || !firstStack) throw new Error("synth: a stack plan has at least one model");
    // Each model's row prices its own GPU nodes, as the stack's estimate (cost.json) does.
    const report = stackCostReport(stack);
    const scalingInputs = stack.stackPlan.models.map((e) => {
      const pricing = gpuPricing(report, e.id);
      return { ...e.plan.renderInputs.scaling, ...(pricing ? { pricing } : {}) };
    });
    const shared = renderStackScaling(sharedScalingInput(stack.stackPlan.gateway.plan, scalingInputs)).shared;
    const ctx: SynthContext = { ...stack, stack: firstStack, plan: first.plan };
    const namespace = tritonFiles(ctx)[NAMESPACE_FILE] ?? "";
    const files = withHeader(
      stack.stackName,
      {
        [NAMESPACE_FILE]: namespace,
        ...gatewayFiles(stack.stackName, stack.stackPlan.gateway.plan, stack.stackPlan.gateway.workload),
      },
      sharedScalingFiles(
        shared,
        stack.stackPlan.models.map((e) => e.plan.renderInputs.triton),
      ),
    );
    const types = [...new Set(stack.stackPlan.models.map((e) => e.plan.serving.instanceType))];
    const groups = shared.prometheusRule.spec.groups;
    return {
      files,
      summary: [
        `kubernetes (shared): namespace, gateway in front of ${stack.stackPlan.models.length} models, DCGM exporter on ${types.join(", ")}, dashboard with a row per model, alerts in ${groups.length} groups (${groups.map((g) => g.name).join(", ")}) -> ${K8S_OUT}/ (${files.length} files)`,
      ],
    };
  },
};
