/**
 * synth writer for the Kubernetes manifests: `<out>/k8s/*.yaml`, exactly what
 * the TritonService component applies; the workload numbers (sizing, probe
 * budgets, timeouts) are the plan's `kubernetes` section.
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
import { renderScaling, scalingFiles } from "../render/scaling";
import { gatewayManifestFiles, renderGatewayManifests } from "../render/gatewayManifests";
import { renderKeysFile } from "../render/gatewayConfig";
import { renderStoreManifests, storeManifestFiles } from "../render/storeManifests";
import type { ArtifactWriter } from "./artifacts";

export const K8S_OUT = "k8s";

/** The ECR repository of the server image without registry host or digest, tagged `synth`. */
export function synthServerImage(stackName: string): string {
  return synthImageRef(repositoryNames(namePrefix(stackName)).server);
}

export const k8sManifestsWriter: ArtifactWriter = {
  name: "kubernetes",
  owns: [K8S_OUT, "dashboards", "prometheus"],
  write(ctx) {
    const image = synthServerImage(ctx.stackName);
    const inputs = ctx.plan.renderInputs;
    const m = renderManifests({ ...inputs.triton, image });
    const header = `# Rendered offline by \`npm run synth\`: the image ${image} is a placeholder;\n# pulumi up deploys the server image by digest.\n`;
    const gatewayImage = synthImageRef(repositoryNames(namePrefix(ctx.stackName)).gateway);
    // Keys are generated at pulumi up; synth shows the Secret's shape with one placeholder hash per team.
    const keysJson = renderKeysFile(
      ctx.plan.gateway.consumers.map((entry) => ({ entry, keySha256: "<sha256 of the generated key>" })),
      ctx.plan.gateway.teams,
    );
    const g = renderGatewayManifests({ ...inputs.gateway, image: gatewayImage, keysJson });
    const store = inputs.gateway.store;
    const storeFiles = store ? storeManifestFiles(renderStoreManifests({ ...inputs.gateway, store }), store.mode) : {};
    const files = Object.entries({ ...manifestFiles(m), ...storeFiles, ...gatewayManifestFiles(g) }).map(
      ([name, content]) => ({
        path: `${K8S_OUT}/${name}`,
        content: header + content,
      }),
    );
    // Autoscaling, GPU nodes and observability (render/scaling.ts), applied after the workload.
    for (const [path, content] of Object.entries(scalingFiles(renderScaling(inputs.scaling), inputs.triton)))
      files.push({ path, content: path.startsWith(`${K8S_OUT}/`) ? header + content : content });
    const p = ctx.plan.kubernetes;
    const a = ctx.plan.autoscaling;
    return {
      files,
      summary: [
        `kubernetes: ${p.replicas} pod(s) × ${p.tensorParallel} GPU on ${p.gpuNodes} node(s) (${p.podsPerNode}/node), startup budget ${p.startupBudgetSeconds}s, rollout ${p.podRolloutSeconds}s/pod -> ${K8S_OUT}/ (${files.length} files)`,
        ...(a
          ? [
              `autoscaling: ${a.minReplicas}..${a.maxReplicas} pods on ratio ${a.target}, <= ${a.nodeLimits.nodes} GPU nodes, cold start ${a.expectedColdStartSeconds}s expected / ${a.coldStartBudgetSeconds}s worst, scale-down window ${a.scaleDown.stabilizationWindowSeconds}s`,
            ]
          : []),
      ],
    };
  },
};
