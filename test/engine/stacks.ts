/**
 * The configs the engine suite runs the real program with: a committed
 * stack's config (Pulumi.<stack>.yaml), its promoted kubeconfig-mode form,
 * and the outputs its building stack would export (what the publisher stack
 * stands in for: building needs AWS, which the engine cannot reach here).
 */
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { parse as parseYaml } from "yaml";
import { resolveStack } from "../../infra/resolve";
import { buildPlan, type Plan } from "../../infra/plan";
import { modelPlanFingerprint, modelPlanOf, serializeModelPlan } from "../../infra/promotion/modelPlan";
import { REPO_ROOT, repoPathHasher } from "../../infra/repoFiles";

export const PROJECT = "triton-ft";
/** The file backend's organization: a stack reference there is `organization/<project>/<stack>`. */
export const ORG = "organization";

export type RawConfig = Record<string, Record<string, unknown>>;

/** The `triton-ft:` keys of a committed stack file, without the prefix. */
export function committedConfig(stack: string): RawConfig {
  const doc = parseYaml(fs.readFileSync(path.join(REPO_ROOT, `Pulumi.${stack}.yaml`), "utf8")) as {
    config: Record<string, unknown>;
  };
  const out: RawConfig = {};
  for (const [k, v] of Object.entries(doc.config))
    if (k.startsWith(`${PROJECT}:`)) out[k.slice(PROJECT.length + 1)] = v as Record<string, unknown>;
  return out;
}

/**
 * The promoted form of a building stack's config: the build section names the
 * stack that built the images (keeping the Triton release the images carry),
 * the cluster is an existing one reached through the `kubeconfig` secret, and
 * autoscaling (which needs a created cluster) becomes its floor of fixed replicas.
 */
export function promotedForm(building: RawConfig, buildingStack: string): RawConfig {
  const cfg = structuredClone(building);
  // The pins the images carry are part of the model plan promotion compares (PROMOTED_BUILD_KEYS).
  const pins = Object.fromEntries(
    (["tritonVersion", "backendCommit", "ftCommit"] as const).flatMap((k) =>
      building.build?.[k] !== undefined ? [[k, building.build[k]]] : [],
    ),
  );
  cfg.build = { promoteFrom: { stackReference: `${ORG}/${PROJECT}/${buildingStack}` }, ...pins };
  cfg.cluster = { mode: "kubeconfig" };
  delete cfg.network;
  const serving = { ...(cfg.serving ?? {}) };
  const autoscaling = serving.autoscaling as { min?: number } | undefined;
  if (autoscaling) {
    delete serving.autoscaling;
    serving.replicas = autoscaling.min ?? 1;
  }
  // No shared store: the in-cluster one generates its TLS certificate and password with the tls and random
  // providers, which cannot be had on this machine (docs/development.md, the engine suite).
  serving.store = { mode: "none" };
  cfg.serving = serving;
  return cfg;
}

/** The plan of a config, as the program computes it (throws with the problems when it does not resolve). */
export function planOf(raw: RawConfig, stackName: string, secrets: Record<string, boolean> = {}): Plan {
  const { stack, problems } = resolveStack(raw, secrets, { stackName });
  if (!stack) throw new Error(`${stackName} does not resolve: ${JSON.stringify(problems, null, 2)}`);
  return buildPlan(stack, stackName, repoPathHasher(REPO_ROOT));
}

function digest(seed: string): string {
  return createHash("sha256").update(seed).digest("hex");
}

/** What a building stack exports that promotion reads: its images, and each model's image and model plan. */
export interface BuiltOutputs {
  serverImage: string;
  tritonWithFtImage: string;
  gatewayImage: string;
  modelPlan: string;
  modelPlanFingerprint: string;
  models: Record<string, { serverImage: string; modelPlan: string; modelPlanFingerprint: string }>;
}

/**
 * The outputs a building stack exports after its pulumi up, for `build`
 * (a label standing for one run of the build): its images by digest, and its
 * model plan computed by the real plan code from its config.
 */
export function buildOutputs(building: RawConfig, stackName: string, build: string): BuiltOutputs {
  const plan = planOf(building, stackName);
  const mp = modelPlanOf(plan);
  const repo = `123456789012.dkr.ecr.us-east-1.amazonaws.com/${stackName}-${plan.model.name}`;
  const serverImage = `${repo}-server@sha256:${digest(`${build}:server`)}`;
  const modelPlan = serializeModelPlan(mp);
  const fingerprint = modelPlanFingerprint(mp);
  return {
    serverImage,
    tritonWithFtImage: `${repo}-triton-with-ft@sha256:${digest(`${build}:triton-with-ft`)}`,
    gatewayImage: `${repo}-gateway@sha256:${digest(`${build}:gateway`)}`,
    modelPlan,
    modelPlanFingerprint: fingerprint,
    models: { [plan.model.name]: { serverImage, modelPlan, modelPlanFingerprint: fingerprint } },
  };
}

/** A key a team holds in its own secret store, and the SHA-256 the stack is given. */
export function heldKey(seed: string): { key: string; sha256: string } {
  const key = `team-held-${digest(`key:${seed}`).slice(0, 40)}`;
  return { key, sha256: createHash("sha256").update(key, "utf8").digest("hex") };
}
