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
import { buildStackPlan, type StackPlan } from "../../infra/plan/stack";
import { modelPlanFingerprint, modelPlanOf, serializeModelPlan } from "../../infra/promotion/modelPlan";
import { REPO_ROOT, repoPathHasher } from "../../infra/repoFiles";

export const PROJECT = "triton-ft";
/** The file backend's organization: a stack reference there is `organization/<project>/<stack>`. */
export const ORG = "organization";

export type RawConfig = Record<string, Record<string, unknown>>;

/** The `triton-ft:` keys of a committed stack file, without the prefix. */
export function committedConfig(stack: string): RawConfig {
  return stackFileConfig(path.join(REPO_ROOT, `Pulumi.${stack}.yaml`));
}

function stackFileConfig(file: string): RawConfig {
  const doc = parseYaml(fs.readFileSync(file, "utf8")) as {
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

/** A committed test stack's config (test/stacks/<dir>/Pulumi.<stack>.yaml), as committedConfig reads the top-level ones. */
export function testStackConfig(dir: string, stack: string): RawConfig {
  return stackFileConfig(path.join(REPO_ROOT, "test/stacks", dir, `Pulumi.${stack}.yaml`));
}

/** `aws:region` of a committed test stack (the created cluster's provider needs it). */
export function testStackRegion(dir: string, stack: string): string {
  const doc = parseYaml(fs.readFileSync(path.join(REPO_ROOT, "test/stacks", dir, `Pulumi.${stack}.yaml`), "utf8")) as {
    config: Record<string, unknown>;
  };
  return String(doc.config["aws:region"] ?? "us-east-1");
}

/** The StorageClass the suite installs for the in-cluster store's volume (a created cluster has none by default). */
export const STORE_STORAGE_CLASS = "engine-suite-local";

/**
 * The promoted form of a building stack that creates its cluster: the build
 * section names the building stack (keeping its pins), the cluster and network
 * stay created (AWS is the fake cloud's, test/engine/fakeCloud.ts), autoscaling
 * stays on, and the gateway's store is the in-cluster one.
 */
export function promotedCreateForm(building: RawConfig, buildingStack: string): RawConfig {
  const cfg = structuredClone(building);
  const pins = Object.fromEntries(
    (["tritonVersion", "backendCommit", "ftCommit"] as const).flatMap((k) =>
      building.build?.[k] !== undefined ? [[k, building.build[k]]] : [],
    ),
  );
  cfg.build = { promoteFrom: { stackReference: `${ORG}/${PROJECT}/${buildingStack}` }, ...pins };
  // A stack that builds nothing has no deployer CIDRs to default the API endpoint's access from.
  cfg.cluster = { ...(cfg.cluster ?? {}), endpointAccess: "private" };
  // A created cluster has no default StorageClass: the suite installs this one (and a volume for it).
  cfg.serving = { ...(cfg.serving ?? {}), store: { mode: "inCluster", storageClassName: STORE_STORAGE_CLASS } };
  return cfg;
}

/** A stack of several models resolved and planned as the program does (throws with the problems). */
export function stackPlanOf(raw: RawConfig, stackName: string, region = "us-east-1"): StackPlan {
  const { models, problems } = resolveStack(raw, {}, { stackName, region });
  if (!models) throw new Error(`${stackName} does not resolve: ${JSON.stringify(problems, null, 2)}`);
  return buildStackPlan(models, stackName, repoPathHasher(REPO_ROOT));
}

/**
 * What a building stack of several models exports after its pulumi up: each
 * model's image by digest (`runs[id]`, else `run`, labels the build run that
 * baked it) and its model plan, computed by the real plan code.
 */
export function buildStackOutputs(
  building: RawConfig,
  stackName: string,
  run: string,
  runs: Record<string, string> = {},
): Record<string, unknown> {
  const sp = stackPlanOf(building, stackName);
  const registry = `123456789012.dkr.ecr.us-east-1.amazonaws.com/${stackName}`;
  const models = Object.fromEntries(
    sp.models.map((m) => {
      const mp = modelPlanOf(m.plan);
      const serverImage = `${registry}-${m.id}-server@sha256:${digest(`${runs[m.id] ?? run}:${m.id}:server`)}`;
      return [m.id, { serverImage, modelPlan: serializeModelPlan(mp), modelPlanFingerprint: modelPlanFingerprint(mp) }];
    }),
  );
  return {
    tritonWithFtImage: `${registry}-triton-with-ft@sha256:${digest(`${run}:triton-with-ft`)}`,
    gatewayImage: `${registry}-gateway@sha256:${digest(`${run}:gateway`)}`,
    models,
  };
}
