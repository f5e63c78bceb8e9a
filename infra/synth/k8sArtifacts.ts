/**
 * synth writer for the Kubernetes manifests: `<out>/k8s/*.yaml`, exactly what
 * the TritonService component applies, and the workload numbers (sizing,
 * probe budgets, timeouts) in plan.json under `kubernetes`.
 *
 * The server image digest exists only after the remote bake, so synth writes a
 * digest-less `<ecr-repo-name>:synth` reference (no registry host). It marks the
 * files as offline renders; the deployed Deployment always carries
 * `<registry>/<repo>@sha256:<digest>`, and the renderer refuses anything else
 * but this marker.
 */
import { PROJECT } from "../config";
import { repositoryNames } from "../components/registry";
import { manifestFiles, renderManifests } from "../render/k8s";
import type { ArtifactWriter } from "./artifacts";

export const K8S_OUT = "k8s";

/** The ECR repository of the server image without registry host or digest, tagged `synth`. */
export function synthImageRef(stackName: string): string {
  const prefix = `${PROJECT}-${stackName}`.toLowerCase().replace(/[^a-z0-9-]+/g, "-");
  return `${repositoryNames(prefix).server}:synth`;
}

export const k8sManifestsWriter: ArtifactWriter = {
  name: "kubernetes",
  owns: [K8S_OUT],
  write(ctx) {
    const image = synthImageRef(ctx.stackName);
    const m = renderManifests({
      stack: ctx.stack,
      stackName: ctx.stackName,
      image,
      launch: ctx.plan.launch,
      serviceMonitor: ctx.stack.config.serving.serviceMonitor,
    });
    const header = `# Rendered offline by \`npm run synth\`: the image ${image} is a placeholder;\n# pulumi up deploys the server image by digest.\n`;
    const files = Object.entries(manifestFiles(m)).map(([name, content]) => ({
      path: `${K8S_OUT}/${name}`,
      content: header + content,
    }));
    const p = m.plan;
    return {
      files,
      plan: { kubernetes: { image, ...p } },
      summary: [
        `kubernetes: ${p.replicas} pod(s) × ${p.tensorParallel} GPU on ${p.gpuNodes} node(s) (${p.podsPerNode}/node), startup budget ${p.startupBudgetSeconds}s, rollout ${p.podRolloutSeconds}s/pod -> ${K8S_OUT}/ (${files.length} manifests)`,
      ],
    };
  },
};
