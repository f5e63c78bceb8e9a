/**
 * Each component on its own, without the program (as pulumi-awsx tests its
 * components): the narrow args in, the resources out. The program-level tests
 * (buildInfra, serving, buildSteps) cover the wiring.
 */
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { repositoryNames } from "../../infra/naming";
import { registryPlan } from "../../infra/plan/registry";
import { stepConfigPath, stepMarkerPath } from "../../infra/plan/stepGraph";
import { resolveStack } from "../../infra/resolve";
import type { TeamLimitsFile } from "../../infra/plan/gatewayConfig";
import { gpt2Config } from "../lib/fixtures";
import { ACCOUNT, REGION } from "../lib/mocks";
import { gatewayOf, planOf } from "../lib/plan";
import { runComponents } from "../lib/pulumi";

const ROOT = join(__dirname, "..", "..");
const DIGEST = `${ACCOUNT}.dkr.ecr.${REGION}.amazonaws.com/triton-ft-test/server@sha256:${"ab".repeat(32)}`;

function gpt2Plan() {
  const { stack } = resolveStack(gpt2Config(), {});
  if (!stack) throw new Error("fixture must resolve");
  return { stack, plan: planOf(stack, (p) => `h:${p}`), gateway: gatewayOf(stack, (p) => `h:${p}`) };
}

describe("Registry", () => {
  it("creates the immutable, scanned repositories named from the prefix (naming.ts), each with retention", async () => {
    const run = await runComponents(async () => {
      const { Registry } = await import("../../infra/components/registry");
      return () => {
        const r = new Registry("registry", {
          plan: registryPlan("triton-ft-unit", ["gpt2"]),
          tags: { team: "ml" },
          modelTags: { gpt2: { team: "ml" } },
        });
        return { server: r.server.repositoryUrl };
      };
    });
    // Blob mounting on for the registry, kept when the stack is destroyed (other stacks' bakes rely on it).
    const mounting = run.one("aws:ecr/accountSetting:AccountSetting");
    expect(mounting.inputs).toMatchObject({ name: "BLOB_MOUNTING", value: "ENABLED" });
    expect(mounting.options.retainOnDelete).toBe(true);
    const repos = run.byType("aws:ecr/repository:Repository");
    const names = Object.values(repositoryNames("triton-ft-unit")).sort();
    expect(names).toContain("triton-ft-unit/server");
    expect(names).toContain("triton-ft-unit/triton_with_ft");
    expect(repos.map((r) => r.inputs.name).sort()).toEqual(names);
    for (const r of repos) {
      // Immutable except the two protected deployment tags (cloud/ecr.ts: the retention policy must never expire them).
      expect(r.inputs).toMatchObject({
        imageTagMutability: "IMMUTABLE_WITH_EXCLUSION",
        imageTagMutabilityExclusionFilters: [
          { filter: "live", filterType: "WILDCARD" },
          { filter: "previous", filterType: "WILDCARD" },
          { filter: "deployed", filterType: "WILDCARD" },
          { filter: "deployed-previous", filterType: "WILDCARD" },
        ],
        imageScanningConfiguration: { scanOnPush: true },
      });
      expect(r.inputs.tags).toEqual({ team: "ml" });
    }
    expect(run.byType("aws:ecr/lifecyclePolicy:LifecyclePolicy")).toHaveLength(names.length);
    expect(run.outputs.server).toBe(`${ACCOUNT}.dkr.ecr.${REGION}.amazonaws.com/triton-ft-unit/server`);
    // Nothing but the component and its children: no program around it.
    expect(new Set(run.resources.map((r) => r.type))).toEqual(
      new Set([
        "aws:ecr/accountSetting:AccountSetting",
        "aws:ecr/lifecyclePolicy:LifecyclePolicy",
        "aws:ecr/repository:Repository",
        "triton-ft:registry:Registry",
      ]),
    );
    expect(run.resources).toHaveLength(2 * names.length + 2);
  });
});

describe("Builder", () => {
  it("takes its instance type, disk and SSH CIDRs from its args; a provided key pair generates no login key (only the host key)", async () => {
    const run = await runComponents(async () => {
      const pulumi = await import("@pulumi/pulumi");
      const { Builder } = await import("../../infra/components/builder");
      return () => {
        const b = new Builder("builder", {
          instanceType: "g5.4xlarge",
          diskGiB: 321,
          amiId: "ami-0123456789abcdef0",
          sshAllowedCidrs: ["198.51.100.7/32", "203.0.113.0/28"],
          sshKey: { publicKey: "ssh-ed25519 AAAAtest unit", privateKey: pulumi.secret("private") },
          namePrefix: "triton-ft-unit",
          vpcId: "vpc-0123456789abcdef0",
          subnetId: "subnet-0123456789abcdef0",
          repositoryArns: [`arn:aws:ecr:${REGION}:${ACCOUNT}:repository/x`],
          tags: {},
        });
        return { ami: b.amiId, generated: String(b.generatedKey) };
      };
    });
    const instance = run.one("aws:ec2/instance:Instance", "builder");
    expect(instance.inputs).toMatchObject({ instanceType: "g5.4xlarge", ami: "ami-0123456789abcdef0" });
    expect((instance.inputs.rootBlockDevice as Record<string, unknown>).volumeSize).toBe(321);
    expect(
      run.byType("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule").map((r) => r.inputs.cidrIpv4),
    ).toEqual(["198.51.100.7/32", "203.0.113.0/28"]);
    // The one generated key is the pinned SSH host key; a provided login key pair generates none.
    expect(run.byType("tls:index/privateKey:PrivateKey").map((r) => r.name)).toEqual(["builder-host-key"]);
    expect(run.outputs).toMatchObject({ ami: "ami-0123456789abcdef0", generated: "false" });
  });
});

describe("Cluster", () => {
  it("kubeconfig mode: a provider and the cluster name from the secret, no EKS resources", async () => {
    const kubeconfig = JSON.stringify({
      contexts: [{ name: "c", context: { cluster: `arn:aws:eks:${REGION}:${ACCOUNT}:cluster/shared-gpu` } }],
      "current-context": "c",
    });
    const run = await runComponents(async () => {
      const pulumi = await import("@pulumi/pulumi");
      const { Cluster } = await import("../../infra/components/cluster");
      return () => {
        const c = new Cluster("cluster", {
          cluster: { mode: "kubeconfig", kubeconfig: pulumi.secret(kubeconfig) },
          tags: {},
        });
        return { name: c.clusterName, waits: String(c.gpuReady.length + c.loadBalancerReady.length) };
      };
    });
    expect(run.outputs).toEqual({ name: "shared-gpu", waits: "0" });
    expect(run.byType("pulumi:providers:kubernetes")).toHaveLength(1);
    expect(run.resources.filter((r) => r.type.startsWith("eks:") || r.type.startsWith("aws:"))).toEqual([]);
  });
});

describe("TritonService", () => {
  it("renders the Deployment with the image it is given, by digest, and sizes its timeouts from the plan", async () => {
    const { plan } = gpt2Plan();
    const run = await runComponents(async () => {
      const k8s = await import("@pulumi/kubernetes");
      const { TritonService } = await import("../../infra/components/tritonService");
      return () => {
        const provider = new k8s.Provider("k8s", { kubeconfig: "{}" });
        const t = new TritonService("triton", {
          workload: plan.renderInputs.triton,
          image: DIGEST,
          provider,
          gpuReady: [],
        });
        return { grpc: t.grpcTarget, namespace: t.namespace };
      };
    });
    const deployment = run.one("kubernetes:apps/v1:Deployment");
    const spec = deployment.inputs.spec as { template: { spec: { containers: Array<{ image: string }> } } };
    expect(spec.template.spec.containers.map((c) => c.image)).toEqual([DIGEST]);
    expect((deployment.inputs.metadata as Record<string, unknown>).name).toBe("triton-gpt2");
    // The rollout budgets of the plan, in whole minutes rounded up; the engine's default would be 10m.
    const t = plan.renderInputs.triton.workload.timeouts;
    expect(t.deploymentCreateSeconds).toBeGreaterThan(60);
    expect(deployment.options.customTimeouts).toEqual({
      create: `${Math.ceil(t.deploymentCreateSeconds / 60)}m`,
      update: `${Math.ceil(t.deploymentUpdateSeconds / 60)}m`,
    });
    // Created after its namespace, never before.
    expect(deployment.options.dependsOn).toContain("kubernetes:core/v1:Namespace::triton-ns");
    expect(run.outputs.namespace).toBe("triton");
    expect(run.outputs.grpc).toMatch(/:8001$/);
  });
});

describe("Network", () => {
  /** The errors the component's outputs fail with, from a child process (test/lib/componentFailure.ts). */
  function failures(
    network: Record<string, unknown>,
  ): Array<{ resourceError: boolean; urn?: string; message: string }> {
    const r = spawnSync(
      process.execPath,
      [
        join(ROOT, "node_modules/tsx/dist/cli.mjs"),
        join(ROOT, "test/lib/componentFailure.ts"),
        "network-existing",
        JSON.stringify(network),
      ],
      { cwd: ROOT, encoding: "utf8", timeout: 120_000 },
    );
    return JSON.parse(r.stdout.trim().split("\n").pop() ?? "") as ReturnType<typeof failures>;
  }
  // The mock's subnets belong to vpc-0123456789abcdef0, in the AZ their last hex digit picks (test/lib/mocks.ts).
  const subnets = { publicSubnetIds: ["subnet-0000000000000000a", "subnet-0000000000000000b"] };

  it("existing mode: ids that do not form one usable network fail as a ResourceError of the component", () => {
    const seen = failures({
      mode: "existing",
      vpcId: "vpc-0fedcba987654321f",
      ...subnets,
      privateSubnetIds: ["subnet-0000000000000000c", "subnet-0000000000000000d"],
    });
    expect(seen.length).toBeGreaterThan(0);
    for (const e of seen) {
      expect(e).toMatchObject({ resourceError: true, urn: expect.stringMatching(/::triton-ft:network:Network::net$/) });
      expect(e.message).toMatch(/existing network is not usable:\n {2}- .*not in network\.vpcId vpc-0fedcba987654321f/);
    }
    // The same subnets in their own VPC form a usable network.
    expect(
      failures({
        mode: "existing",
        vpcId: "vpc-0123456789abcdef0",
        ...subnets,
        privateSubnetIds: ["subnet-0000000000000000c", "subnet-0000000000000000d"],
      }),
    ).toEqual([]);
  });
});

describe("BuildPipeline", () => {
  it("one remote command per planned step, triggered by its input hash; configs get the deploy values, the token only fetch", async () => {
    const { plan } = gpt2Plan();
    const registry = `${ACCOUNT}.dkr.ecr.${REGION}.amazonaws.com`;
    const run = await runComponents(async () => {
      const pulumi = await import("@pulumi/pulumi");
      const { BuildPipeline } = await import("../../infra/components/buildPipeline");
      const { REPO_ROOT, stageTree } = await import("../../infra/repoFiles");
      return () => {
        const p = new BuildPipeline("build", {
          steps: plan.buildSteps,
          connection: { host: "203.0.113.10", user: "ubuntu", privateKey: pulumi.secret("key") },
          instanceId: "i-0123456789abcdef0",
          region: REGION,
          ecrRegistry: registry,
          tritonWithFtRepositoryUrl: `${registry}/unit/triton_with_ft`,
          serverRepositoryUrl: `${registry}/unit/server`,
          gatewayRepositoryUrl: `${registry}/unit/gateway`,
          secretEnv: { HF_TOKEN: pulumi.secret("hf_unit_token") },
          stopBuilderWhenDone: false,
          stageTree: (tree) => stageTree(REPO_ROOT, tree),
          compileHost: {
            connection: { host: "203.0.113.20", user: "ubuntu", privateKey: pulumi.secret("key") },
            instanceId: "i-0fedcba9876543210",
            instanceType: "c7i.48xlarge",
            requiredFreeGiB: 60,
          },
        });
        return { triton: p.tritonWithFtImage, server: p.serverImage, gateway: p.gatewayImage, times: p.stepTimes };
      };
    });
    // What each step's timer printed (the mock prints one measurement for every command), by the plan's input hash.
    expect(run.outputs.times).toEqual(
      plan.buildSteps.map((s) => ({
        step: s.id,
        inputHash: s.inputHash,
        seconds: 60,
        netBytes: 1048576,
        measuredAt: "2026-01-02T03:04:05Z",
      })),
    );
    const commands = run.byType("command:remote:Command");
    const byName = (n: string) => {
      const c = commands.find((r) => r.name === n);
      if (!c) throw new Error(`no command ${n}`);
      return c;
    };
    for (const step of plan.buildSteps) {
      const cmd = byName(`build-${step.id}`);
      expect(cmd.inputs.create).toBe(
        `bash /opt/triton-ft/scripts/remote/measure-step.sh ${stepMarkerPath(step.id)} bash /opt/triton-ft/${step.script} ${stepConfigPath(step.id)}`,
      );
      // A step on the compile host is keyed to that host, the others to the builder.
      const host = step.host === "compiler" ? "i-0fedcba9876543210" : "i-0123456789abcdef0";
      expect((cmd.inputs.triggers as string[]).slice(0, 2)).toEqual([host, step.inputHash]);
      const address = step.host === "compiler" ? "203.0.113.20" : "203.0.113.10";
      expect((cmd.inputs.connection as { host?: string }).host, step.id).toBe(address);
      const env = (cmd.inputs.environment ?? {}) as Record<string, string>;
      expect(env.HF_TOKEN, step.id).toBe(step.id === "fetch" ? "hf_unit_token" : undefined);
      expect(String(byName(`build-config-${step.id}`).inputs.stdin)).not.toContain("hf_unit_token");
    }
    // The convert config names the image the triton-with-ft step printed; the others their repositories.
    expect(run.outputs.triton).toMatch(new RegExp(`^${registry}/build-triton-with-ft@sha256:[0-9a-f]{64}$`));
    expect(String(byName("build-config-convert").inputs.stdin)).toContain(`IMAGE='${String(run.outputs.triton)}'`);
    expect(String(byName("build-config-bake").inputs.stdin)).toContain(`ECR_REPOSITORY_URL='${registry}/unit/server'`);
    expect(String(byName("build-config-host-ready").inputs.stdin)).toContain(`AWS_REGION='${REGION}'`);
    // The compile host is prepared and checked before its step, with its own copies of the scripts.
    expect(byName("build-compiler-ready").inputs.create).toBe(
      "bash /opt/triton-ft/scripts/remote/compile-host-ready.sh /opt/triton-ft 60",
    );
    // It waits for its own host's check, not the GPU builder's (which its hash still covers); gemm, on the builder, does.
    expect(byName("build-triton-with-ft").options.dependsOn).toContain("command:remote:Command::build-compiler-ready");
    expect(byName("build-triton-with-ft").options.dependsOn).not.toContain("command:remote:Command::build-host-ready");
    expect(byName("build-gemm").options.dependsOn).toEqual(
      expect.arrayContaining([
        "command:remote:Command::build-host-ready",
        "command:remote:Command::build-triton-with-ft",
      ]),
    );
    expect(String(byName("build-config-convert").inputs.stdin)).not.toContain("@{");
    expect(run.outputs.server).toMatch(/\/build-bake@sha256:[0-9a-f]{64}$/);
    // No builder stop/start without stopBuilderWhenDone.
    expect(run.byType("aws:ec2transitgateway/instanceState:InstanceState")).toEqual([]);
  });
});

describe("GatewayService", () => {
  const image = `${ACCOUNT}.dkr.ecr.${REGION}.amazonaws.com/triton-ft-test/gateway@sha256:${"cd".repeat(32)}`;
  const sha = (v: string) => createHash("sha256").update(v, "utf8").digest("hex");
  /** One GatewayService for the teams search (with a second key, search:v2) and chat. */
  const runGateway = (teams?: Record<string, TeamLimitsFile>) => {
    const { gateway } = gpt2Plan();
    return runComponents(async () => {
      const k8s = await import("@pulumi/kubernetes");
      const { GatewayService } = await import("../../infra/components/gatewayService");
      return () => {
        const provider = new k8s.Provider("k8s", { kubeconfig: "{}" });
        const g = new GatewayService("gateway", {
          workload: gateway.workload,
          consumers: ["search", "search:v2", "chat"],
          ...(teams ? { teams } : {}),
          image,
          provider,
          dependsOn: [],
          namespace: new k8s.core.v1.Namespace("ns", { metadata: { name: "triton" } }, { provider }),
          loadBalancerReady: [],
        });
        return { keys: g.apiKeys, url: g.baseUrl };
      };
    });
  };

  it("one key per consumer; the Secret holds only their hashes, per team; the Deployment runs the image it is given", async () => {
    const run = await runGateway();
    const keys = run.outputs.keys as Record<string, string>;
    expect(Object.keys(keys).sort()).toEqual(["chat", "search", "search:v2"]);
    for (const k of Object.values(keys)) expect(k).toMatch(/^tft-[A-Za-z0-9]{48}$/);
    const secret = run.one("kubernetes:core/v1:Secret");
    const stored = String((secret.inputs.stringData as Record<string, string>)["keys.json"]);
    expect(JSON.parse(stored)).toEqual({
      consumers: [
        { name: "search", keySha256: [sha(keys.search ?? ""), sha(keys["search:v2"] ?? "")] },
        { name: "chat", keySha256: [sha(keys.chat ?? "")] },
      ],
    });
    for (const k of Object.values(keys)) expect(stored).not.toContain(k);
    const deployment = run.one("kubernetes:apps/v1:Deployment");
    const spec = deployment.inputs.spec as { template: { spec: { containers: Array<{ image: string }> } } };
    expect(spec.template.spec.containers.map((c) => c.image)).toEqual([image]);
    expect(run.outputs.url).toMatch(/^http:\/\/\S+/);
  });

  it("writes each team's own limits and model scope beside its key hashes (serving.consumers' map form), and nothing for a team without", async () => {
    const run = await runGateway({
      search: { requestsPerMinute: 120, tokensPerMinute: 50_000, maxConcurrent: 4, share: 3, models: ["gpt2"] },
    });
    const keys = run.outputs.keys as Record<string, string>;
    const secret = run.one("kubernetes:core/v1:Secret");
    const stored = JSON.parse(String((secret.inputs.stringData as Record<string, string>)["keys.json"]));
    expect(stored).toEqual({
      consumers: [
        {
          name: "search",
          keySha256: [sha(keys.search ?? ""), sha(keys["search:v2"] ?? "")],
          requestsPerMinute: 120,
          tokensPerMinute: 50_000,
          maxConcurrent: 4,
          share: 3,
          models: ["gpt2"],
        },
        { name: "chat", keySha256: [sha(keys.chat ?? "")] },
      ],
    });
  });
});
