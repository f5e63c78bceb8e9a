/**
 * The gateway as Kubernetes resources: API keys per consumer (generated with
 * @pulumi/random, kept only as secret outputs; or held by the team, which
 * gives only the SHA-256, so the key never enters Pulumi state), their SHA-256
 * hashes in a Secret the gateway reads, its config, Deployment, the NLB Service (the only
 * thing behind the load balancer), metrics Service, PDB, and the namespace's
 * NetworkPolicies (render/gatewayManifests.ts).
 *
 * The gateway's Deployment waits for Triton (its readiness follows Triton's),
 * but its NLB Service does not: it waits only for the namespace and the load
 * balancer controller, so the NLB is provisioned while the images build, and
 * on a first deploy only the target registration follows the pods. Its await
 * is the NLB's hostname alone (`pulumi.com/waitFor`): Pulumi's default await
 * for a Service also waits for ready endpoints, which no pod gives before the
 * build is done.
 */
import { createHash } from "node:crypto";
import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import * as random from "@pulumi/random";
import { isDigestRef, notPinnedMessage } from "../imageRef";
import { renderKeysFile, type TeamLimitsFile } from "../plan/gatewayConfig";
import { renderGatewayManifests } from "../render/gatewayManifests";

import type { GatewayWorkloadInput } from "../plan/types";
export interface GatewayServiceArgs {
  /** The Triton workload it fronts plus the plan's gateway section: what its manifests are rendered from, but the image and keys. */
  readonly workload: GatewayWorkloadInput;
  /** Teams that call the endpoint (serving.consumers): each gets a generated API key, stored only as a hash in the cluster. */
  readonly consumers: readonly string[];
  /**
   * Entries whose team holds the key (keySha256): their hashes, used as given; no key is generated for them.
   * @default none: every entry's key is generated
   */
  readonly heldKeys?: Readonly<Record<string, readonly string[]>>;
  /**
   * Each team's own limits (serving.consumers' map form), written beside its key hashes.
   * @default none: every team takes the gateway's default limits
   */
  readonly teams?: Readonly<Record<string, TeamLimitsFile>>;
  /** Gateway image by digest, from the build pipeline. */
  readonly image: pulumi.Input<string>;
  /** The cluster's Kubernetes provider. */
  readonly provider: k8s.Provider;
  /** Triton's namespace, Deployment and Service: the gateway is ready only once they are. */
  readonly dependsOn: pulumi.Resource[];
  /** The namespace the gateway lives in: all its NLB Service waits for besides the controller. */
  readonly namespace: pulumi.Resource;
  /** The load balancer controller: without it nothing provisions the NLB. */
  readonly loadBalancerReady: pulumi.Resource[];
  /**
   * The shared store (components/sharedStore.ts): its address goes into the config, and the pods wait for it.
   * @default none: each gateway pod counts on its own (serving.store.mode none)
   */
  readonly store?: { host: pulumi.Input<string>; ready: pulumi.Resource[] };
}

/** Prefix of every generated key, so a leaked one is recognisable (secret scanners, logs). */
export const API_KEY_PREFIX = "tft-";
/** 48 random characters from [A-Za-z0-9]: about 285 bits. */
export const API_KEY_RANDOM_LENGTH = 48;
/** apiKeys.<entry> of a team that holds its own key: the stack has only the key's SHA-256. */
export const EXTERNAL_KEY = "external";
/**
 * The NLB Service's await: its hostname, which the AWS Load Balancer Controller
 * sets once the NLB exists, targets or not (pulumi-kubernetes's user-defined
 * await, pulumi/pulumi-kubernetes#3134, in the provider since 4.18).
 */
export const NLB_HOSTNAME_AWAIT = { "pulumi.com/waitFor": "jsonpath={.status.loadBalancer.ingress[0].hostname}" };
/** The synth placeholder passes the renderer's image check; pulumi up always renders the real digest. */
const PLACEHOLDER_IMAGE = "gateway:synth";

function sha256Hex(value: string): string {
  return createHash("sha256").update(value, "utf8").digest("hex");
}

/** The workload with the store's real address in the gateway's config (the plan knows only the in-cluster one). */
function withStoreHost(w: GatewayWorkloadInput, host: string | undefined): GatewayWorkloadInput {
  const store = w.config.store;
  if (!store || host === undefined) return w;
  return { ...w, config: { ...w.config, store: { ...store, host } } };
}

export class GatewayService extends pulumi.ComponentResource {
  readonly hostname: pulumi.Output<string>;
  /** `https://<host>` with a TLS certificate, else `http://<host>`. */
  readonly baseUrl: pulumi.Output<string>;
  /** Team name -> API key (secret). */
  readonly apiKeys: pulumi.Output<Record<string, string>>;
  /** The gateway Deployment: its await is the rollout that tags the deployed image. */
  readonly deployment: k8s.apps.v1.Deployment;

  constructor(name: string, args: GatewayServiceArgs, opts?: pulumi.ComponentResourceOptions) {
    super("triton-ft:gatewayService:GatewayService", name, {}, opts);
    const opt = { parent: this, provider: args.provider };
    const w = args.workload;

    // A key is replaced only when its resource is (rotation: docs/consuming.md "API keys").
    // A held key (keySha256) has no resource: its hashes are all the stack ever sees.
    const held = args.heldKeys ?? {};
    const keys = args.consumers.map((entry) => {
      const hashes = held[entry];
      if (hashes) return { entry, key: pulumi.output(EXTERNAL_KEY), hashes: pulumi.output([...hashes]) };
      const password = new random.RandomPassword(
        `${name}-key-${entry.replace(":", "-")}`,
        { length: API_KEY_RANDOM_LENGTH, special: false },
        { parent: this },
      );
      const key = pulumi.secret(pulumi.interpolate`${API_KEY_PREFIX}${password.result}`);
      return { entry, key, hashes: key.apply((k) => [sha256Hex(k)]) };
    });
    this.apiKeys = pulumi.secret(
      pulumi
        .all(keys.map((k) => k.key))
        .apply((values) => Object.fromEntries(keys.map((k, i) => [k.entry, values[i]]))),
    );
    // `team:v2` is a second key of `team` (a rotation in progress): one consumer, several hashes.
    const keysJson = pulumi.secret(
      pulumi.all(keys.map((k) => k.hashes)).apply((hashes) =>
        renderKeysFile(
          keys.flatMap((k, i) => (hashes[i] ?? []).map((keySha256) => ({ entry: k.entry, keySha256 }))),
          args.teams,
        ),
      ),
    );

    // Everything but the pod template, the Secret's content and a managed store's address is known at preview.
    const known = renderGatewayManifests({ ...w, image: PLACEHOLDER_IMAGE, keysJson: "{}" });
    const workload = pulumi.output(args.store?.host).apply((host) => withStoreHost(w, host));
    const rendered = pulumi.all([args.image, keysJson, workload]).apply(([image, json, wl]) => {
      if (!isDigestRef(image)) {
        throw new pulumi.ResourceError(notPinnedMessage("gateway image", image), this);
      }
      return renderGatewayManifests({ ...wl, image, keysJson: json });
    });

    const after = { ...opt, dependsOn: [...args.dependsOn, ...(args.store?.ready ?? [])] };
    const config = new k8s.core.v1.ConfigMap(
      `${name}-config`,
      {
        metadata: known.configMap.metadata,
        data: workload.apply(
          (wl) => renderGatewayManifests({ ...wl, image: PLACEHOLDER_IMAGE, keysJson: "{}" }).configMap.data ?? {},
        ),
      },
      after,
    );
    const secret = new k8s.core.v1.Secret(
      `${name}-keys`,
      {
        metadata: known.keysSecret.metadata,
        type: known.keysSecret.type,
        stringData: keysJson.apply((json) => ({ "keys.json": json })),
      },
      after,
    );
    const policies = known.networkPolicies.map(
      (p) =>
        new k8s.networking.v1.NetworkPolicy(
          `${name}-${p.metadata?.name}`,
          p as k8s.types.input.networking.v1.NetworkPolicy,
          after,
        ),
    );
    const deployment = new k8s.apps.v1.Deployment(
      `${name}-deployment`,
      {
        metadata: known.deployment.metadata,
        spec: rendered.apply((m) => m.deployment.spec as k8s.types.input.apps.v1.DeploymentSpec),
      },
      { ...opt, dependsOn: [...args.dependsOn, ...(args.store?.ready ?? []), config, secret, ...policies] },
    );
    this.deployment = deployment;
    new k8s.core.v1.Service(`${name}-metrics`, known.metricsService, after);
    new k8s.policy.v1.PodDisruptionBudget(`${name}-pdb`, known.podDisruptionBudget, after);
    const service = new k8s.core.v1.Service(
      `${name}-service`,
      {
        ...known.service,
        metadata: {
          ...known.service.metadata,
          annotations: { ...known.service.metadata?.annotations, ...NLB_HOSTNAME_AWAIT },
        },
      },
      {
        ...opt,
        dependsOn: [args.namespace, ...args.loadBalancerReady],
        customTimeouts: { create: "15m", update: "15m" },
      },
    );

    this.hostname = service.status.loadBalancer.ingress.apply((ingress) => {
      const host = ingress?.[0]?.hostname ?? ingress?.[0]?.ip;
      if (!host) {
        throw new pulumi.ResourceError(
          "the gateway's load balancer Service has no address; check the AWS Load Balancer Controller's logs",
          this,
        );
      }
      return host;
    });
    const scheme = w.tlsCertificateArn ? "https" : "http";
    this.baseUrl = pulumi.interpolate`${scheme}://${this.hostname}`;
    this.registerOutputs({ hostname: this.hostname, baseUrl: this.baseUrl, apiKeys: this.apiKeys });
  }
}
