/**
 * The stack-output contract other teams build on: names, types, secrecy and
 * meaning of the outputs every stack exports. Changing an entry is a breaking
 * change for consumers; test/unit/serving.test.ts pins it, and the table of
 * docs/outputs.md is generated from it (`outputsMarkdownTable`).
 */
import type * as pulumi from "@pulumi/pulumi";
import type { ModelSource } from "./model/types";

/** The `modelSource` output: the pinned weights source in one string. */
export function modelSourceUri(source: ModelSource): string {
  return source.kind === "huggingface"
    ? `hf://${source.repo}@${source.revision}`
    : `${source.url}#sha256=${source.sha256}`;
}

interface OutputSpec {
  type: "string" | "number" | "string[]" | "object" | "object[]";
  secret: boolean;
  description: string;
}

export const STACK_OUTPUT_CONTRACT = {
  httpEndpoint: {
    type: "string",
    secret: false,
    description:
      "Base URL of the gateway behind the NLB: `https://<nlb-dns>` with `serving.tlsCertificateArn`, else `http://<nlb-dns>`. Serves each model's KServe v2 HTTP API (`<url>/v2/models/<model id>/infer`) with an API key.",
  },
  openaiBaseUrl: {
    type: "string",
    secret: false,
    description: "OpenAI-compatible base URL, `<httpEndpoint>/v1` (the `baseURL` of the official clients).",
  },
  modelIds: {
    type: "string[]",
    secret: false,
    description: "OpenAI `model` ids served (`GET /v1/models`): every model of the stack, first to last.",
  },
  models: {
    type: "object",
    secret: false,
    description:
      "Per model id: `{id, family, source, tensorParallel, instanceType, serverImage, tritonService, modelPlan, modelPlanFingerprint}` (`tritonService`: the in-cluster gRPC `host:port` of its Triton; `modelPlan` and its fingerprint: what its image is built from, which a stack promoted from this one compares per model). Every stack has it; the single-model outputs (`modelFamily`, `modelSource`, `tensorParallel`, `serverImage`, `modelPlan`, `modelPlanFingerprint`) describe the first model.",
  },
  apiKeys: {
    type: "object",
    secret: true,
    description:
      "API key per team of `serving.consumers` (`{<team>: <key>}`), sent as `Authorization: Bearer <key>`. The gateway holds only their SHA-256.",
  },
  gatewayImage: { type: "string", secret: false, description: "Gateway image, `<ecr-repo>@sha256:<digest>`." },
  modelName: {
    type: "string",
    secret: false,
    description: "Triton model to call: always `ensemble` (text in, text out).",
  },
  modelFamily: {
    type: "string",
    secret: false,
    description: "FT model family: `gptneox`, `gptj`, `gpt` or `codegen`.",
  },
  modelSource: {
    type: "string",
    secret: false,
    description: "Pinned weights source: `hf://<repo>@<commit>` or `<archive-url>#sha256=<hex>`.",
  },
  tensorParallel: { type: "number", secret: false, description: "GPUs per Triton pod (FT tensor-parallel size)." },
  serverImage: { type: "string", secret: false, description: "Served image, `<ecr-repo>@sha256:<digest>`." },
  tritonWithFtImage: {
    type: "string",
    secret: false,
    description: "Triton + FT backend base image, `<ecr-repo>@sha256:<digest>`.",
  },
  tritonWithFtBuilds: {
    type: "object[]",
    secret: false,
    description:
      "Per builder, what its triton_with_ft was built from and the image: `[{builder, tritonVersion, backendCommit, ftCommit, smList, recipe, image}]` (`recipe`: `sha256:<hex>` of the build script, its library and `images/triton_with_ft`; infra/plan/tritonWithFt.ts). A stack with `build.tritonWithFtFrom` naming this one takes `image` instead of compiling, only when all the other fields equal its own plan.",
  },
  buildStepTimes: {
    type: "object[]",
    secret: false,
    description:
      "What each build step took in its last real run, as its host recorded it (scripts/remote/measure-step.sh; infra/plan/measurements.ts): `[{step, inputHash, seconds, netBytes, measuredAt}]` (`inputHash`: the step's input hash in the plan, as plan.json has it; `netBytes`: bytes the host's network interfaces moved during the run, both directions; `measuredAt`: UTC). A step its host never timed is absent (a stack promoted from another builds nothing: empty). `npm run synth -- --measured <file>` and the stack's own preview use a step's entry in place of the catalog's assumed time while its input hash is unchanged (docs/cost.md).",
  },
  clusterName: { type: "string", secret: false, description: "EKS cluster name (created, or the existing cluster's)." },
  namespace: {
    type: "string",
    secret: false,
    description: "Kubernetes namespace of the Triton Deployment and Services.",
  },
  kubeconfig: {
    type: "string",
    secret: true,
    description:
      "Kubeconfig (JSON or YAML) of the cluster; in create mode the new cluster's, using `aws eks get-token`.",
  },
  modelPlan: {
    type: "string",
    secret: false,
    description:
      "What the first model's image is built from, as canonical JSON (infra/plan/fingerprint.ts): the bake step and every step it consumes (triton_with_ft, fetch, convert, gemm), each with its script and input files' hashes, its rendered files' hashes (config.pbtxt, expected weights) and its config entries, less the deploy-time values and the named builder-host entries. A stack promoted from this one (`build.promoteFrom`) must plan the same for each model (docs/delivery.md, Promotion).",
  },
  modelPlanFingerprint: {
    type: "string",
    secret: false,
    description:
      "`sha256:<64 hex>` of `modelPlan`: two stacks serve the same build only if their fingerprints are equal.",
  },
  secretFingerprints: {
    type: "object",
    secret: true,
    description:
      "Per secret config key set (`hfToken`, `sshPrivateKey`, `kubeconfig`): sha256 over the key and its value. The stack's own next preview reads it back to say what a changed secret does (infra/secretChanges.ts); not for other stacks.",
  },
} as const satisfies Record<string, OutputSpec>;

export type ContractOutputName = keyof typeof STACK_OUTPUT_CONTRACT;
type TsType<T extends OutputSpec["type"]> = T extends "number"
  ? number
  : T extends "string[]"
    ? string[]
    : T extends "object[]"
      ? Array<Record<string, unknown>>
      : T extends "object"
        ? Record<string, unknown>
        : string;

/** What the program returns for the contract: each output as an Input of its contract type. */
export type ContractOutputs = {
  [K in ContractOutputName]: pulumi.Input<TsType<(typeof STACK_OUTPUT_CONTRACT)[K]["type"]>>;
};

/** The outputs table of docs/outputs.md, generated so the documentation cannot drift from the contract. */
export function outputsMarkdownTable(): string {
  const rows = Object.entries(STACK_OUTPUT_CONTRACT).map(
    ([name, spec]) => `| \`${name}\` | ${spec.type}${spec.secret ? " (secret)" : ""} | ${spec.description} |`,
  );
  return ["| output | type | meaning |", "|---|---|---|", ...rows].join("\n");
}
