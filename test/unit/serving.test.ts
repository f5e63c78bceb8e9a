import { createHash } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import { runProgram, type ProgramRun } from "../lib/pulumi";
import { REGION } from "../lib/mocks";
import { gpt2Config, withOverrides } from "../lib/fixtures";
import { STACK_OUTPUT_CONTRACT, outputsMarkdownTable } from "../../infra/outputs";
import { kubeconfigClusterName } from "../../infra/cloud/kubeconfig";
import { publishedLbControllerPolicy } from "../../infra/cloud/lbControllerIamPolicy";
import { findPreset } from "../../infra/model/catalog";
import { nodeDiskGiB } from "../../infra/model/sizing";
import { SYSTEM_NODE_LABEL } from "../../infra/cloud/eks";

const ECR_DIGEST_REF = /^\d{12}\.dkr\.ecr\.[a-z0-9-]+\.amazonaws\.com\/[^@\s]+@sha256:[0-9a-f]{64}$/;

type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj => (v ?? {}) as Obj;

describe("stack-output contract", () => {
  // The snapshot: renaming, removing or retyping an output must fail here first.
  const EXPECTED = {
    httpEndpoint: "string",
    openaiBaseUrl: "string",
    modelIds: "string[]",
    models: "object",
    apiKeys: "object (secret)",
    gatewayImage: "string",
    modelName: "string",
    modelFamily: "string",
    modelSource: "string",
    tensorParallel: "number",
    serverImage: "string",
    tritonWithFtImage: "string",
    clusterName: "string",
    namespace: "string",
    kubeconfig: "string (secret)",
    modelPlan: "string",
    modelPlanFingerprint: "string",
    tritonWithFtBuilds: "object[]",
    buildStepTimes: "object[]",
    secretFingerprints: "object (secret)",
  };

  it("declares exactly the documented names and types", () => {
    const declared = Object.fromEntries(
      Object.entries(STACK_OUTPUT_CONTRACT).map(([k, v]) => [k, `${v.type}${v.secret ? " (secret)" : ""}`]),
    );
    expect(declared).toEqual(EXPECTED);
  });

  let run: ProgramRun;
  beforeAll(async () => {
    run = await runProgram(withOverrides(gpt2Config(), { serving: { consumers: ["search", "ads"] } }));
  });

  it("exports every contract output with its type and secrecy", () => {
    const typeOf = (v: unknown): string =>
      Array.isArray(v)
        ? v.every((x) => typeof x === "string")
          ? "string[]"
          : v.every((x) => x !== null && typeof x === "object" && !Array.isArray(x))
            ? "object[]"
            : "array"
        : typeof v;
    for (const [name, spec] of Object.entries(STACK_OUTPUT_CONTRACT)) {
      expect(run.outputs, name).toHaveProperty(name);
      expect(typeOf(run.outputs[name]), name).toBe(spec.type);
      expect(run.secretOutputs.includes(name), `${name} secret`).toBe(spec.secret);
    }
  });

  it("has the documented value formats", () => {
    const o = run.outputs;
    expect(o.modelName).toBe("ensemble");
    expect(o.modelFamily).toBe("gpt");
    expect(o.modelSource).toBe("hf://openai-community/gpt2@607a30d783dfa663caf39e06633721c8d4cfcd7e");
    expect(o.tensorParallel).toBe(1);
    // The gateway's NLB, plain HTTP without serving.tlsCertificateArn; Triton itself has no external address.
    expect(o.httpEndpoint).toMatch(/^http:\/\/[a-z0-9.-]+$/);
    expect(o.openaiBaseUrl).toBe(`${String(o.httpEndpoint)}/v1`);
    expect(o.modelIds).toEqual(["gpt2"]);
    // The per-model map describes the one model exactly as the single-model outputs do.
    expect(o.models).toEqual({
      gpt2: {
        id: "gpt2",
        family: "gpt",
        source: o.modelSource,
        tensorParallel: 1,
        instanceType: "g5.xlarge",
        serverImage: o.serverImage,
        tritonService: "triton-gpt2.triton.svc.cluster.local:8001",
        modelPlan: o.modelPlan,
        modelPlanFingerprint: o.modelPlanFingerprint,
      },
    });
    const keys = o.apiKeys as Record<string, string>;
    expect(Object.keys(keys).sort()).toEqual(["ads", "search"]);
    for (const key of Object.values(keys)) expect(key).toMatch(/^tft-[A-Za-z0-9]{48}$/);
    expect(keys.ads).not.toBe(keys.search);
    expect(o.gatewayImage).toMatch(ECR_DIGEST_REF);
    expect(o.serverImage).toMatch(ECR_DIGEST_REF);
    expect(o.tritonWithFtImage).toMatch(ECR_DIGEST_REF);
    expect(o.namespace).toBe("triton");
    expect(o.clusterName).toMatch(/^cluster-eksCluster-/);
    expect(kubeconfigClusterName(String(o.kubeconfig))).toBe(o.clusterName);
  });

  it("generates the outputs table of docs/outputs.md from the contract", () => {
    const table = outputsMarkdownTable();
    for (const name of Object.keys(EXPECTED)) expect(table).toContain(`| \`${name}\` |`);
    expect(table).toContain("| `kubeconfig` | string (secret) |");
  });

  it("deploys the images the pipeline built, by digest", () => {
    const image = (name: string): unknown =>
      (
        obj(obj(obj(obj(run.one("kubernetes:apps/v1:Deployment", name).inputs.spec).template).spec)).containers as Obj[]
      )[0]?.image;
    expect(image("triton-deployment")).toBe(run.outputs.serverImage);
    expect(image("gateway-deployment")).toBe(run.outputs.gatewayImage);
  });

  it("runs the gateway on the system node group it labels, never on the GPU instance type", () => {
    const spec = obj(
      obj(obj(run.one("kubernetes:apps/v1:Deployment", "gateway-deployment").inputs.spec).template).spec,
    );
    const terms = obj(obj(obj(spec.affinity).nodeAffinity).requiredDuringSchedulingIgnoredDuringExecution)
      .nodeSelectorTerms as Obj[];
    expect(terms).toHaveLength(1);
    expect(terms[0].matchExpressions).toEqual([
      { key: SYSTEM_NODE_LABEL.key, operator: "In", values: [SYSTEM_NODE_LABEL.value] },
      { key: "node.kubernetes.io/instance-type", operator: "NotIn", values: ["g5.xlarge"] },
    ]);
    expect(spec.tolerations).toBeUndefined();
  });

  it("keeps only SHA-256 hashes of the keys in the gateway's Secret", () => {
    const secret = run.one("kubernetes:core/v1:Secret", "gateway-keys");
    const json = String(obj(secret.inputs.stringData)["keys.json"]);
    const keys = run.outputs.apiKeys as Record<string, string>;
    for (const key of Object.values(keys)) expect(json).not.toContain(key);
    const consumers = (JSON.parse(json) as { consumers: { name: string; keySha256: string[] }[] }).consumers;
    expect(consumers.map((c) => c.name).sort()).toEqual(["ads", "search"]);
    for (const c of consumers) expect(c.keySha256[0]).toBe(createHash("sha256").update(keys[c.name]).digest("hex"));
  });
});

describe("API key rotation", () => {
  it("a second key of a team (`team:v2`) works beside the first: one consumer, two hashes", async () => {
    const run = await runProgram(
      withOverrides(gpt2Config(), { serving: { consumers: ["search", "search:v2", "ads"] } }),
    );
    const keys = run.outputs.apiKeys as Record<string, string>;
    expect(Object.keys(keys).sort()).toEqual(["ads", "search", "search:v2"]);
    const json = String(obj(run.one("kubernetes:core/v1:Secret", "gateway-keys").inputs.stringData)["keys.json"]);
    const consumers = (JSON.parse(json) as { consumers: { name: string; keySha256: string[] }[] }).consumers;
    const search = consumers.find((c) => c.name === "search");
    expect(search?.keySha256.sort()).toEqual(
      [keys.search, keys["search:v2"]].map((k) => createHash("sha256").update(k).digest("hex")).sort(),
    );
    expect(consumers.map((c) => c.name).sort()).toEqual(["ads", "search"]);
  });
});

describe("create mode: EKS with a GPU node group", () => {
  let run: ProgramRun;
  beforeAll(async () => {
    run = await runProgram(gpt2Config());
  });

  it("creates the cluster in the network's subnets, API auth, OIDC for IRSA", () => {
    const c = run.one("eks:index:Cluster");
    const vpc = run.one("awsx:ec2:Vpc");
    expect(c.inputs.vpcId).toBe(vpc.state.vpcId);
    expect(c.inputs.privateSubnetIds).toEqual(vpc.state.privateSubnetIds);
    expect(c.inputs.publicSubnetIds).toEqual(vpc.state.publicSubnetIds);
    expect(c.inputs).toMatchObject({
      version: "1.35",
      skipDefaultNodeGroup: true,
      authenticationMode: "API",
      createOidcProvider: true,
      nodeAssociatePublicIpAddress: false,
    });
  });

  it("runs GPU nodes of the serving type on the NVIDIA AMI, tainted, in private subnets, with the derived disk", () => {
    const gpu = run.one("eks:index:ManagedNodeGroup", "cluster-gpu");
    const vpc = run.one("awsx:ec2:Vpc");
    expect(gpu.inputs).toMatchObject({
      amiType: "AL2023_x86_64_NVIDIA",
      instanceTypes: ["g5.xlarge"],
      capacityType: "ON_DEMAND",
      taints: [{ key: "nvidia.com/gpu", value: "true", effect: "NO_SCHEDULE" }],
      // replicas 1 + the rolling update's surge pod, one GPU each.
      scalingConfig: { minSize: 2, desiredSize: 2, maxSize: 2 },
    });
    expect(gpu.inputs.subnetIds).toEqual(vpc.state.privateSubnetIds);
    // nodeDiskGiB: two server images (triton_with_ft base + fp16 weights) with headroom.
    const preset = findPreset("gpt2");
    if (!preset) throw new Error("gpt2 preset missing");
    // The disk is the launch template's encrypted root volume; IMDS is v2-only with hop limit 1.
    const lt = run.one("aws:ec2/launchTemplate:LaunchTemplate", "cluster-gpu");
    expect(gpu.inputs.launchTemplate).toEqual({ id: lt.id, version: "1" });
    expect(gpu.inputs.diskSize).toBeUndefined();
    const root = (lt.inputs.blockDeviceMappings as Obj[])[0] ?? {};
    expect(root.deviceName).toBe("/dev/xvda");
    expect(obj(root.ebs)).toMatchObject({ volumeType: "gp3", encrypted: "true" });
    expect(obj(root.ebs).volumeSize).toBe(nodeDiskGiB(preset.family, preset.arch));
    expect(obj(root.ebs).volumeSize).toBeGreaterThan(60);
    expect(lt.inputs.metadataOptions).toEqual({
      httpEndpoint: "enabled",
      httpTokens: "required",
      httpPutResponseHopLimit: 1,
    });
    const system = run.one("eks:index:ManagedNodeGroup", "cluster-system");
    expect(system.inputs.taints).toBeUndefined();
    expect(system.inputs.labels).toEqual({ [SYSTEM_NODE_LABEL.key]: SYSTEM_NODE_LABEL.value });
    expect(system.inputs.amiType).toBe("AL2023_x86_64_STANDARD");
    expect(system.inputs.launchTemplate).toEqual({
      id: run.one("aws:ec2/launchTemplate:LaunchTemplate", "cluster-system").id,
      version: "1",
    });
  });

  it("logs the control plane, encrypts secrets with its own rotating KMS key, enforces NetworkPolicies", () => {
    const cluster = run.one("eks:index:Cluster");
    const key = run.one("aws:kms/key:Key", "cluster-secrets");
    expect(key.inputs).toMatchObject({ enableKeyRotation: true, deletionWindowInDays: 30 });
    expect(cluster.inputs.encryptionConfigKeyArn).toBe(key.state.arn);
    expect(cluster.inputs.enabledClusterLogTypes).toEqual(["api", "audit", "authenticator"]);
    expect(cluster.inputs.vpcCniOptions).toMatchObject({ enableNetworkPolicy: true });
  });

  it("opens the API endpoint only to the machine that runs pulumi up (build.sshAllowedCidrs)", () => {
    const cluster = run.one("eks:index:Cluster");
    expect(cluster.inputs).toMatchObject({
      endpointPrivateAccess: true,
      endpointPublicAccess: true,
      publicAccessCidrs: ["198.51.100.7/32"],
    });
  });

  it("gives nodes only the worker, CNI and ECR read-only policies", () => {
    const arns = run
      .byType("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
      .filter((r) => r.name.startsWith("cluster-nodes-"))
      .map((r) => r.inputs.policyArn);
    expect(arns.sort()).toEqual([
      "arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryReadOnly",
      "arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy",
      "arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy",
    ]);
  });

  it("installs the NVIDIA device plugin on the GPU nodes, pinned", () => {
    const r = run.one("kubernetes:helm.sh/v3:Release", "cluster-nvidia-device-plugin");
    expect(r.inputs).toMatchObject({ chart: "nvidia-device-plugin", version: "0.20.0", namespace: "kube-system" });
    const values = obj(r.inputs.values);
    expect(values.tolerations).toEqual([{ key: "nvidia.com/gpu", operator: "Exists", effect: "NoSchedule" }]);
    expect(JSON.stringify(values.affinity)).toContain('"values":["g5.xlarge"]');
  });

  it("installs the AWS Load Balancer Controller with an IRSA role bound to its service account", () => {
    const r = run.one("kubernetes:helm.sh/v3:Release", "cluster-aws-load-balancer-controller");
    const c = run.one("eks:index:Cluster");
    const clusterName = obj(c.state.eksCluster).name;
    expect(r.inputs).toMatchObject({
      chart: "aws-load-balancer-controller",
      version: "3.5.0",
      namespace: "kube-system",
    });
    const values = obj(r.inputs.values);
    expect(values).toMatchObject({ clusterName, region: REGION, enableServiceMutatorWebhook: false });
    const role = run.one("aws:iam/role:Role", "cluster-lb-controller");
    expect(obj(obj(values.serviceAccount).annotations)["eks.amazonaws.com/role-arn"]).toBe(role.state.arn);
    const trust = JSON.parse(String(role.inputs.assumeRolePolicy)) as {
      Statement: Array<{ Principal: Obj; Condition: { StringEquals: Obj } }>;
    };
    const issuer = String(c.state.oidcIssuer);
    expect(trust.Statement[0]?.Principal).toEqual({ Federated: c.state.oidcProviderArn });
    expect(trust.Statement[0]?.Condition.StringEquals).toEqual({
      [`${issuer}:sub`]: "system:serviceaccount:kube-system:aws-load-balancer-controller",
      [`${issuer}:aud`]: "sts.amazonaws.com",
    });
  });

  it("gives the controller its own published policy, whose tag-mutating statements are conditioned", () => {
    const policy = run.one("aws:iam/policy:Policy", "cluster-lb-controller");
    const doc = JSON.parse(String(policy.inputs.policy));
    expect(doc).toEqual(publishedLbControllerPolicy("aws"));
    for (const s of doc.Statement as Array<{
      Action: string | string[];
      Resource: string | string[];
      Condition?: unknown;
    }>) {
      const actions = [s.Action].flat();
      expect(actions.filter((a) => a === "ec2:*" || a === "elasticloadbalancing:*")).toEqual([]);
      const onLbOrSg = [s.Resource].flat().some((r) => /:(loadbalancer|targetgroup|security-group)\//.test(r));
      if (actions.some((a) => /^(ec2:(Create|Delete)Tags|elasticloadbalancing:(Add|Remove)Tags)$/.test(a)) && onLbOrSg)
        expect(s.Condition, JSON.stringify(actions)).toBeDefined();
    }
  });

  it("applies the workload through the cluster's one Kubernetes provider", () => {
    const d = run.one("kubernetes:apps/v1:Deployment", "triton-deployment");
    const svc = run.byType("kubernetes:core/v1:Service").find((r) => obj(r.inputs.spec).type === "LoadBalancer");
    expect(svc).toBeDefined();
    // Every Kubernetes resource of the workload goes through the cluster's provider.
    const provider = run.one("pulumi:providers:kubernetes");
    expect(d.provider).toContain(provider.name);
    expect(svc?.provider).toContain(provider.name);
  });
});

describe("workload under mocks", () => {
  let run: ProgramRun;
  beforeAll(async () => {
    run = await runProgram(
      withOverrides(gpt2Config(), {
        serving: {
          instanceType: "g5.xlarge",
          loadBalancerScheme: "internet-facing",
          allowedCidrs: ["203.0.113.0/24"],
          tlsCertificateArn: "arn:aws:acm:us-east-1:123456789012:certificate/abc",
          consumers: ["search"],
          replicas: 2,
        },
      }),
    );
  });

  it("registers namespace, Deployments, Services and PDBs in the configured namespace; only the gateway has a load balancer", () => {
    expect(run.one("kubernetes:core/v1:Namespace").inputs.metadata).toMatchObject({ name: "triton" });
    const d = run.one("kubernetes:apps/v1:Deployment", "triton-deployment");
    expect(obj(d.inputs.metadata)).toMatchObject({ name: "triton-gpt2", namespace: "triton" });
    expect(obj(d.inputs.spec).replicas).toBe(2);
    expect(
      run
        .byType("kubernetes:core/v1:Service")
        .filter((r) => !r.name.includes("dcgm")) // the GPU metrics exporter's own Service (render/observability.ts)
        .map((r) => obj(r.inputs.spec).type)
        .sort(),
    ).toEqual(["ClusterIP", "ClusterIP", "ClusterIP", "LoadBalancer"]);
    const lb = run.byType("kubernetes:core/v1:Service").find((r) => obj(r.inputs.spec).type === "LoadBalancer");
    expect(lb?.name).toBe("gateway-service");
    expect(obj(run.one("kubernetes:policy/v1:PodDisruptionBudget", "triton-pdb").inputs.spec).minAvailable).toBe(1);
    // The gateway's three, plus the DCGM exporter's.
    expect(
      run.byType("kubernetes:networking.k8s.io/v1:NetworkPolicy").filter((r) => !r.name.includes("dcgm")),
    ).toHaveLength(3);
  });

  it("creates the gateway's NLB Service during the build: it waits for the namespace and the controller, not the pipeline or the pods", () => {
    const svc = run.one("kubernetes:core/v1:Service", "gateway-service");
    const after = svc.options.dependsOn;
    expect(after).toContain("kubernetes:core/v1:Namespace::triton-ns");
    expect(after).toContain("kubernetes:helm.sh/v3:Release::cluster-aws-load-balancer-controller");
    // Nothing the build pipeline registers (its remote commands, copies, instance states), no Deployment or pod.
    for (const d of after) {
      expect(d, d).not.toMatch(
        /^command:|^aws:ec2transitgateway\/instanceState|Deployment::|^kubernetes:core\/v1:Pod::/,
      );
    }
    // Its await is the NLB's hostname alone: Pulumi's default would wait for ready endpoints, i.e. for the pods.
    expect(obj(obj(svc.inputs.metadata).annotations)["pulumi.com/waitFor"]).toBe(
      "jsonpath={.status.loadBalancer.ingress[0].hostname}",
    );
    // The gateway's Deployment still follows Triton's.
    expect(run.one("kubernetes:apps/v1:Deployment", "gateway-deployment").options.dependsOn).toContain(
      "kubernetes:apps/v1:Deployment::triton-deployment",
    );
  });

  it("passes the scheme, source ranges and TLS certificate to the gateway's NLB Service", () => {
    const svc = run.byType("kubernetes:core/v1:Service").find((r) => obj(r.inputs.spec).type === "LoadBalancer");
    const annotations = obj(obj(svc?.inputs.metadata).annotations);
    expect(annotations["service.beta.kubernetes.io/aws-load-balancer-scheme"]).toBe("internet-facing");
    expect(annotations["service.beta.kubernetes.io/aws-load-balancer-ssl-cert"]).toBe(
      "arn:aws:acm:us-east-1:123456789012:certificate/abc",
    );
    expect(obj(svc?.inputs.spec).loadBalancerSourceRanges).toEqual(["203.0.113.0/24"]);
    expect(run.outputs.httpEndpoint).toMatch(/^https:\/\//);
  });

  it("applies GPU, probe and shm settings from the renderer", () => {
    const d = run.one("kubernetes:apps/v1:Deployment", "triton-deployment");
    const pod = obj(obj(obj(d.inputs.spec).template).spec);
    const c = (pod.containers as Obj[])[0] ?? {};
    expect(obj(obj(c.resources).limits)["nvidia.com/gpu"]).toBe("1");
    expect(obj(obj(c.startupProbe).httpGet).path).toBe("/v2/health/ready");
    expect(obj(obj(c.livenessProbe).httpGet).path).toBe("/v2/health/live");
    expect(pod.volumes).toEqual([
      { name: "dshm", emptyDir: { medium: "Memory", sizeLimit: "256Mi" } },
      { name: "tmp", emptyDir: { sizeLimit: "1Gi" } },
    ]);
    expect(obj(pod.securityContext).runAsUser).toBe(1000);
    expect(obj(c.securityContext).readOnlyRootFilesystem).toBe(true);
  });
});

describe("existing clusters", () => {
  it("kubeconfig mode: uses the secret, creates no EKS, exports the cluster named by the kubeconfig", async () => {
    const kubeconfig = [
      "apiVersion: v1",
      "clusters:",
      "- name: arn:aws:eks:us-east-1:123456789012:cluster/team-gpu",
      "  cluster: {server: 'https://example'}",
      "contexts:",
      "- name: team",
      "  context: {cluster: 'arn:aws:eks:us-east-1:123456789012:cluster/team-gpu', user: u}",
      "current-context: team",
      "users: [{name: u, user: {}}]",
    ].join("\n");
    const run = await runProgram(withOverrides(gpt2Config(), { cluster: { mode: "kubeconfig" } }), {
      secrets: { kubeconfig },
    });
    expect(run.byType("eks:index:Cluster")).toHaveLength(0);
    expect(run.byType("kubernetes:helm.sh/v3:Release")).toHaveLength(0);
    expect(run.one("pulumi:providers:kubernetes").inputs.kubeconfig).toBe(kubeconfig);
    expect(run.outputs.clusterName).toBe("team-gpu");
    expect(run.outputs.kubeconfig).toBe(kubeconfig);
    expect(run.secretOutputs).toContain("kubeconfig");
    expect(run.outputs.httpEndpoint).toMatch(/^http:\/\/.+$/);
  });

  it("stackReference mode: reads the named outputs of the other stack", async () => {
    const run = await runProgram(
      withOverrides(gpt2Config(), { cluster: { mode: "stackReference", stackReference: "acme/platform/prod" } }),
    );
    expect(run.one("pulumi:pulumi:StackReference", "cluster-ref").inputs.name).toBe("acme/platform/prod");
    expect(run.byType("eks:index:Cluster")).toHaveLength(0);
    expect(run.outputs.clusterName).toBe("shared-gpu");
    expect(kubeconfigClusterName(String(run.outputs.kubeconfig))).toBe("shared-gpu");
    expect(run.secretOutputs).toContain("kubeconfig");
  });
});

describe("kubeconfigClusterName", () => {
  it("takes the current context's cluster and strips an EKS ARN", () => {
    const k = JSON.stringify({
      contexts: [
        { name: "a", context: { cluster: "plain" } },
        { name: "b", context: { cluster: "arn:aws:eks:eu-west-1:123456789012:cluster/x-y" } },
      ],
      "current-context": "b",
    });
    expect(kubeconfigClusterName(k)).toBe("x-y");
  });

  it("refuses a kubeconfig without a usable current context", () => {
    expect(() => kubeconfigClusterName("contexts: []\n")).toThrow(/no current-context/);
  });
});
