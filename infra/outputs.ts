/**
 * The stack-output contract other teams build on: names, types, secrecy and
 * meaning of the outputs every stack exports. Changing an entry is a breaking
 * change for consumers; test/unit/serving.test.ts pins it, and README's
 * "Stack outputs" table is generated from it (`outputsMarkdownTable`).
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
  type: "string" | "number";
  secret: boolean;
  description: string;
}

export const STACK_OUTPUT_CONTRACT = {
  httpEndpoint: {
    type: "string",
    secret: false,
    description: "KServe v2 HTTP base URL of the NLB, `http://<nlb-dns>:8000` (e.g. `<url>/v2/models/ensemble/infer`).",
  },
  grpcEndpoint: {
    type: "string",
    secret: false,
    description: "KServe v2 gRPC target of the NLB, `<nlb-dns>:8001` (plaintext).",
  },
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
} as const satisfies Record<string, OutputSpec>;

export type ContractOutputName = keyof typeof STACK_OUTPUT_CONTRACT;
type TsType<T extends OutputSpec["type"]> = T extends "number" ? number : string;

/** What the program returns for the contract: each output as an Input of its contract type. */
export type ContractOutputs = {
  [K in ContractOutputName]: pulumi.Input<TsType<(typeof STACK_OUTPUT_CONTRACT)[K]["type"]>>;
};

/** README's outputs table, generated so the documentation cannot drift from the contract. */
export function outputsMarkdownTable(): string {
  const rows = Object.entries(STACK_OUTPUT_CONTRACT).map(
    ([name, spec]) => `| \`${name}\` | ${spec.type}${spec.secret ? " (secret)" : ""} | ${spec.description} |`,
  );
  return ["| output | type | meaning |", "|---|---|---|", ...rows].join("\n");
}
