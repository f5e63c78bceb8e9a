/**
 * The gateway's shared store (serving.store), where team limits are counted
 * across gateway pods and usage is kept:
 *
 * - managed: an ElastiCache Serverless cache (Valkey) in the private subnets,
 *   TLS always on (ElastiCache Serverless has no plain port), AUTH as an
 *   ElastiCache user whose key patterns cover the gateway's prefix only, in a
 *   user group with the mandatory `default` user switched off; a security
 *   group admitting the cluster's nodes (and pods: the VPC CNI gives them the
 *   nodes' group) on 6379 only, and nothing out.
 * - inCluster: one Valkey pod beside the gateway (render/storeManifests.ts),
 *   its TLS certificate from a CA generated here (@pulumi/tls) for the
 *   Service's names, its data on a volume.
 *
 * Either way the password is generated here (@pulumi/random, a Pulumi secret)
 * and lands in one Kubernetes Secret the gateway reads as an environment
 * variable; it is never in a ConfigMap, a log or an output.
 */
import * as aws from "@pulumi/aws";
import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import * as random from "@pulumi/random";
import * as tls from "@pulumi/tls";
import { namePrefix } from "../naming";

import { renderStoreManifests, storeAuthData, type StoreRenderInput } from "../render/storeManifests";
import type { Cluster, ClusterNetwork } from "./cluster";

import { MANAGED_USER, STORE_CA_FILE, STORE_PORT } from "../conventions/store";
import type { GatewayWorkloadInput } from "../plan/types";
import type { StorePlan } from "../plan/types";
/** What a managed store needs from the stack's network and cluster. */
export interface ManagedStoreNetwork {
  vpcId: pulumi.Input<string>;
  /** The cache's subnets: the private ones, where the nodes are. */
  subnetIds: pulumi.Input<string[]>;
  /** The EKS cluster security group of the nodes: the only source admitted. */
  nodeSecurityGroupId: pulumi.Input<string>;
  /** Prefix of AWS names (naming.ts namePrefix). */
  namePrefix: string;
  tags: Record<string, string>;
}

export interface SharedStoreArgs {
  /** The plan's store (plan/store.ts): which kind, its names, the gateway's view of it. */
  readonly plan: StorePlan;
  /** The workload it serves (names, labels, the system nodes): the gateway's render input. */
  readonly workload: Omit<StoreRenderInput, "store">;
  /** The cluster's Kubernetes provider. */
  readonly provider: k8s.Provider;
  /** The namespace (Triton's service): the store's Kubernetes objects go in it. */
  readonly dependsOn: pulumi.Resource[];
  /**
   * Required with plan.mode managed.
   * @default none: the store is in-cluster or off (plan.mode inCluster or none)
   */
  readonly managed?: ManagedStoreNetwork;
}

/**
 * ElastiCache Serverless bounds, a cost guard: counters and usage hashes take
 * kilobytes, and a request costs a handful of ECPUs. Raising them is safe.
 */
export const MANAGED_LIMITS = { dataStorageGiB: 1, ecpuPerSecond: 5000 } as const;
/** Valkey major version of the managed cache. */
export const MANAGED_MAJOR_VERSION = "8";
/** Validity of the in-cluster store's certificates; pulumi up replaces the server's in its last year. */
const CERT_VALIDITY_HOURS = 5 * 365 * 24;
const CERT_EARLY_RENEWAL_HOURS = 365 * 24;

/**
 * The gateway user's ACL: its key prefix only, no pub/sub channels, the
 * command groups the limiter, the permits and the usage ledger use, nothing
 * dangerous but the two commands the client's handshake needs.
 */
export function gatewayAccessString(keyPrefix: string): string {
  return [
    "on",
    `~${keyPrefix}*`,
    "resetchannels",
    "-@all",
    "+@read",
    "+@write",
    "+@scripting",
    "+@transaction",
    "+@connection",
    "-@dangerous",
    "+info",
    "+cluster|slots",
    "+cluster|shards",
  ].join(" ");
}

export class SharedStore extends pulumi.ComponentResource {
  /** Where the gateway connects: the cache's endpoint, or the in-cluster Service's name. */
  readonly host: pulumi.Output<string>;
  /** What the gateway must wait for: the password Secret and the store itself. */
  readonly ready: pulumi.Resource[];

  constructor(name: string, args: SharedStoreArgs, opts?: pulumi.ComponentResourceOptions) {
    super("triton-ft:sharedStore:SharedStore", name, {}, opts);
    const plan = args.plan;
    const k8sOpts = { parent: this, provider: args.provider, dependsOn: args.dependsOn };
    const manifests = renderStoreManifests({ ...args.workload, store: plan });
    // Alphanumeric: ElastiCache refuses some punctuation in passwords, and 48 characters are about 285 bits.
    const password = new random.RandomPassword(`${name}-password`, { length: 48, special: false }, { parent: this });
    const authSecret = new k8s.core.v1.Secret(
      `${name}-auth`,
      {
        metadata: manifests.authSecret.metadata,
        type: "Opaque",
        stringData: pulumi.secret(password.result.apply(storeAuthData)),
      },
      k8sOpts,
    );
    if (plan.mode === "managed") {
      if (!args.managed) throw new pulumi.ResourceError("a managed store needs the stack's network and cluster", this);
      const cache = this.managedCache(name, plan, args.managed, password.result);
      this.host = cache.endpoints.apply((e) => {
        const address = e?.[0]?.address;
        if (!address) throw new pulumi.ResourceError("the ElastiCache Serverless cache has no endpoint", this);
        return address;
      });
      this.ready = [authSecret, cache];
    } else {
      const store = this.inCluster(name, plan, manifests, k8sOpts);
      this.host = pulumi.output(plan.gateway.host);
      this.ready = [authSecret, ...store];
    }
    this.registerOutputs({ host: this.host });
  }

  private managedCache(
    name: string,
    plan: StorePlan,
    net: ManagedStoreNetwork,
    password: pulumi.Output<string>,
  ): aws.elasticache.ServerlessCache {
    const parent = { parent: this };
    const tags = net.tags;
    const group = new aws.ec2.SecurityGroup(
      `${name}-cache`,
      {
        vpcId: net.vpcId,
        description: `triton-ft gateway store (${net.namePrefix}): Valkey from the cluster's nodes only`,
        ingress: [
          {
            description: "Valkey (TLS) from the EKS nodes and pods",
            protocol: "tcp",
            fromPort: STORE_PORT,
            toPort: STORE_PORT,
            securityGroups: [net.nodeSecurityGroupId],
          },
        ],
        // The cache initiates nothing.
        egress: [],
        tags,
      },
      parent,
    );
    // ElastiCache user groups must hold a user named `default`: this one can never log in.
    const disabledDefault = new random.RandomPassword(
      `${name}-default-password`,
      { length: 48, special: false },
      parent,
    );
    const defaultUser = new aws.elasticache.User(
      `${name}-default`,
      {
        userId: `${net.namePrefix}-store-default`,
        userName: "default",
        engine: "valkey",
        accessString: "off resetkeys resetchannels -@all",
        authenticationMode: { type: "password", passwords: [disabledDefault.result] },
        tags,
      },
      parent,
    );
    const gatewayUser = new aws.elasticache.User(
      `${name}-gateway`,
      {
        userId: `${net.namePrefix}-store-gateway`,
        userName: MANAGED_USER,
        engine: "valkey",
        accessString: gatewayAccessString(plan.gateway.keyPrefix),
        authenticationMode: { type: "password", passwords: [password] },
        tags,
      },
      parent,
    );
    const users = new aws.elasticache.UserGroup(
      `${name}-users`,
      {
        userGroupId: `${net.namePrefix}-store`,
        engine: "valkey",
        userIds: [defaultUser.userId, gatewayUser.userId],
        tags,
      },
      parent,
    );
    return new aws.elasticache.ServerlessCache(
      `${name}-cache`,
      {
        name: `${net.namePrefix}-store`,
        description: `triton-ft gateway store (${net.namePrefix}): team limits across gateway pods, usage per team`,
        engine: "valkey",
        majorEngineVersion: MANAGED_MAJOR_VERSION,
        subnetIds: net.subnetIds,
        securityGroupIds: [group.id],
        userGroupId: users.userGroupId,
        cacheUsageLimits: {
          dataStorage: { maximum: MANAGED_LIMITS.dataStorageGiB, unit: "GB" },
          ecpuPerSeconds: [{ maximum: MANAGED_LIMITS.ecpuPerSecond }],
        },
        // A daily snapshot kept a week: usage survives even a deleted cache for that long.
        snapshotRetentionLimit: 7,
        tags,
      },
      { parent: this, dependsOn: [users] },
    );
  }

  /** The Valkey pod, its Service, volume, NetworkPolicy and TLS material. */
  private inCluster(
    name: string,
    plan: StorePlan,
    m: ReturnType<typeof renderStoreManifests>,
    k8sOpts: pulumi.CustomResourceOptions,
  ): pulumi.Resource[] {
    const parent = { parent: this };
    const caKey = new tls.PrivateKey(`${name}-ca`, { algorithm: "ECDSA", ecdsaCurve: "P256" }, parent);
    const ca = new tls.SelfSignedCert(
      `${name}-ca`,
      {
        privateKeyPem: caKey.privateKeyPem,
        isCaCertificate: true,
        subject: { commonName: `${plan.name} CA (triton-ft)` },
        validityPeriodHours: CERT_VALIDITY_HOURS,
        allowedUses: ["cert_signing", "crl_signing"],
      },
      parent,
    );
    const serverKey = new tls.PrivateKey(`${name}-server`, { algorithm: "ECDSA", ecdsaCurve: "P256" }, parent);
    const ns = plan.namespace;
    const request = new tls.CertRequest(
      `${name}-server`,
      {
        privateKeyPem: serverKey.privateKeyPem,
        subject: { commonName: `${plan.name}.${ns}.svc` },
        dnsNames: [plan.name, `${plan.name}.${ns}`, `${plan.name}.${ns}.svc`, `${plan.name}.${ns}.svc.cluster.local`],
      },
      parent,
    );
    const cert = new tls.LocallySignedCert(
      `${name}-server`,
      {
        certRequestPem: request.certRequestPem,
        caPrivateKeyPem: caKey.privateKeyPem,
        caCertPem: ca.certPem,
        validityPeriodHours: CERT_VALIDITY_HOURS,
        earlyRenewalHours: CERT_EARLY_RENEWAL_HOURS,
        allowedUses: ["digital_signature", "key_encipherment", "server_auth"],
      },
      parent,
    );
    const tlsSecret = new k8s.core.v1.Secret(
      `${name}-tls`,
      {
        metadata: m.tlsSecret.metadata,
        type: "kubernetes.io/tls",
        stringData: pulumi.secret(
          pulumi
            .all([cert.certPem, serverKey.privateKeyPem, ca.certPem])
            .apply(([crt, key, caPem]) => ({ "tls.crt": crt, "tls.key": key, [STORE_CA_FILE]: caPem })),
        ),
      },
      k8sOpts,
    );
    const caMap = new k8s.core.v1.ConfigMap(
      `${name}-ca`,
      { metadata: m.caConfigMap.metadata, data: { [STORE_CA_FILE]: ca.certPem } },
      k8sOpts,
    );
    const claim = new k8s.core.v1.PersistentVolumeClaim(
      `${name}-data`,
      {
        ...(m.volumeClaim as k8s.types.input.core.v1.PersistentVolumeClaim),
        // Classes that bind on first use (EBS's) bind only once the pod is scheduled: waiting here would deadlock.
        metadata: { ...m.volumeClaim.metadata, annotations: { "pulumi.com/skipAwait": "true" } },
      },
      k8sOpts,
    );
    const policy = new k8s.networking.v1.NetworkPolicy(
      `${name}-policy`,
      m.networkPolicy as k8s.types.input.networking.v1.NetworkPolicy,
      k8sOpts,
    );
    const deployment = new k8s.apps.v1.Deployment(
      `${name}-deployment`,
      m.deployment as k8s.types.input.apps.v1.Deployment,
      { ...k8sOpts, dependsOn: [...(k8sOpts.dependsOn as pulumi.Resource[]), tlsSecret, claim, policy] },
    );
    const service = new k8s.core.v1.Service(`${name}-service`, m.service as k8s.types.input.core.v1.Service, k8sOpts);
    return [deployment, service, caMap];
  }
}

/**
 * The program's one call: the gateway's store, if any (the stack plan's
 * gateway input, `sp.gateway.workload`: one gateway and one store for every
 * model), in the cluster and network the stack has. A managed store outside
 * create mode was refused at preview.
 */
export function sharedStoreOf(
  gateway: GatewayWorkloadInput,
  /** `network` is absent for a promoted stack on an existing cluster, where a managed store was refused at preview. */
  on: { cluster: Cluster; network?: ClusterNetwork; namespace: pulumi.Resource; tags: Record<string, string> },
): SharedStore | undefined {
  const store = gateway.store;
  if (!store) return undefined;
  const sg = on.cluster.nodeSecurityGroupId;
  return new SharedStore("store", {
    plan: store,
    workload: gateway,
    provider: on.cluster.provider,
    dependsOn: [on.namespace],
    ...(store.mode === "managed" && sg && on.network
      ? {
          managed: {
            vpcId: on.network.vpcId,
            subnetIds: on.network.privateSubnetIds,
            nodeSecurityGroupId: sg,
            namePrefix: namePrefix(gateway.triton.stackName),
            tags: on.tags,
          },
        }
      : {}),
  });
}
