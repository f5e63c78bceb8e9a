import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runProgram, type ProgramRun, type RecordedResource } from "../lib/pulumi";
import { gpt2Config, withOverrides } from "../lib/fixtures";
import { ACCOUNT, REGION } from "../lib/mocks";
import { findPreset } from "../../infra/model/catalog";
import { builderDiskGiB } from "../../infra/model/sizing";
import { existingNetworkProblems } from "../../infra/resolve/network";
import { stackSmList, stepMinutes } from "../../infra/plan/steps";
import { resolveStack } from "../../infra/resolve";
import { buildSteps } from "../lib/plan";
import { runOrder } from "../../infra/plan/stepGraph";

const ROOT = join(__dirname, "..", "..");
const COMMAND = "command:remote:Command";
const stepCmd = (run: ProgramRun, id: string) => run.one(COMMAND, `build-${id}`);

interface PolicyStatement {
  Sid?: string;
  Effect: string;
  Action: string | string[];
  Resource: string | string[];
}

describe("network", () => {
  it("create mode: one awsx VPC with private and public subnets across the configured AZs, tagged for load balancers", async () => {
    const run = await runProgram(
      withOverrides(gpt2Config(), { network: { availabilityZones: 3, vpcCidr: "10.8.0.0/16" } }),
    );
    const vpc = run.one("awsx:ec2:Vpc");
    expect(vpc.inputs.cidrBlock).toBe("10.8.0.0/16");
    expect(vpc.inputs.numberOfAvailabilityZones).toBe(3);
    expect(vpc.inputs.natGateways).toEqual({ strategy: "Single" });
    const specs = vpc.inputs.subnetSpecs as Array<{ type: string; cidrMask: number; tags: Record<string, string> }>;
    const pub = specs.find((s) => s.type === "Public");
    const priv = specs.find((s) => s.type === "Private");
    expect(pub?.tags["kubernetes.io/role/elb"]).toBe("1");
    expect(priv?.tags["kubernetes.io/role/internal-elb"]).toBe("1");
    expect(pub?.tags["kubernetes.io/role/internal-elb"]).toBeUndefined();
    expect([priv?.cidrMask, pub?.cidrMask]).toEqual([19, 24]);
    const outputs = run.outputs as { vpcId: string; publicSubnetIds: string[]; privateSubnetIds: string[] };
    expect(outputs.vpcId).toMatch(/^vpc-/);
    expect(outputs.privateSubnetIds).toHaveLength(3);
    // The builder sits in the first public subnet.
    expect(run.one("aws:ec2/instance:Instance", "builder").inputs.subnetId).toBe(outputs.publicSubnetIds[0]);
  });

  it("rejects a VPC CIDR too small for the subnet layout", async () => {
    await expect(runProgram(withOverrides(gpt2Config(), { network: { vpcCidr: "10.8.0.0/24" } }))).rejects.toThrow(
      /triton-ft:network.vpcCidr = "10.8.0.0\/24": has a \/24 prefix/,
    );
  });

  const existing = (priv: string[], pub = ["subnet-0aaaaaaaaaaaaaaa0"]) =>
    withOverrides(gpt2Config(), {
      network: { mode: "existing", vpcId: "vpc-0123456789abcdef0", publicSubnetIds: pub, privateSubnetIds: priv },
    });

  it("existing mode: looks the ids up, creates no VPC, and passes them on", async () => {
    const run = await runProgram(existing(["subnet-0bbbbbbbbbbbbbbb1", "subnet-0bbbbbbbbbbbbbbb2"]));
    expect(run.byType("awsx:ec2:Vpc")).toHaveLength(0);
    expect(run.outputs.vpcId).toBe("vpc-0123456789abcdef0");
    expect(run.outputs.privateSubnetIds).toEqual(["subnet-0bbbbbbbbbbbbbbb1", "subnet-0bbbbbbbbbbbbbbb2"]);
    expect(run.one("aws:ec2/securityGroup:SecurityGroup", "builder").inputs.vpcId).toBe("vpc-0123456789abcdef0");
    // The managed store's group (the default with cluster.mode create) goes in the same VPC.
    expect(run.one("aws:ec2/securityGroup:SecurityGroup", "store-cache").inputs.vpcId).toBe("vpc-0123456789abcdef0");
  });

  // A failing lookup check rejects inside an Output, which the engine reports
  // as the update's error; the mock runtime surfaces it only as an unhandled
  // rejection, so the check itself is tested directly.
  it("existing mode: the lookup check names subnets in another VPC, one-AZ private subnets and overlaps", () => {
    const s = (id: string, vpcId: string, az: string) => ({ id, vpcId, availabilityZone: az });
    expect(
      existingNetworkProblems(
        "vpc-1",
        [s("subnet-p", "vpc-1", "a")],
        [s("subnet-a", "vpc-1", "a"), s("subnet-b", "vpc-1", "b")],
      ),
    ).toEqual([]);
    expect(
      existingNetworkProblems(
        "vpc-1",
        [s("subnet-p", "vpc-2", "a")],
        [s("subnet-a", "vpc-1", "a"), s("subnet-p", "vpc-2", "a")],
      ),
    ).toEqual([
      "network.publicSubnetIds: subnet subnet-p is in vpc-2, not in network.vpcId vpc-1",
      "network.privateSubnetIds: subnet subnet-p is in vpc-2, not in network.vpcId vpc-1",
      "network.privateSubnetIds: all private subnets are in a; EKS needs subnets in at least two AZs",
      "network: subnet subnet-p is listed as both public and private",
    ]);
  });
});

describe("ECR registry", () => {
  it("three repositories named after project and stack, immutable, scanned, KMS-encrypted, with a lifecycle policy", async () => {
    const run = await runProgram(gpt2Config(), { stack: "Dev" });
    const repos = run.byType("aws:ecr/repository:Repository");
    expect(repos.map((r) => r.inputs.name).sort()).toEqual([
      "triton-ft-dev/gateway",
      "triton-ft-dev/server",
      "triton-ft-dev/triton_with_ft",
    ]);
    for (const r of repos) {
      expect(r.inputs.imageTagMutability).toBe("IMMUTABLE_WITH_EXCLUSION");
      expect(r.inputs.imageTagMutabilityExclusionFilters).toEqual([
        { filter: "live", filterType: "WILDCARD" },
        { filter: "previous", filterType: "WILDCARD" },
        { filter: "deployed", filterType: "WILDCARD" },
        { filter: "deployed-previous", filterType: "WILDCARD" },
      ]);
      expect(r.inputs.imageScanningConfiguration).toEqual({ scanOnPush: true });
      expect(r.inputs.encryptionConfigurations).toEqual([{ encryptionType: "KMS" }]);
    }
    const policies = run.byType("aws:ecr/lifecyclePolicy:LifecyclePolicy");
    expect(policies).toHaveLength(3);
    for (const p of policies) {
      const rules = (
        JSON.parse(String(p.inputs.policy)) as { rules: Array<{ selection: { tagStatus: string; countType: string } }> }
      ).rules;
      // Protected tags first (live, previous, deployed, deployed-previous: never expired), then untagged, then a count by
      // content-tag prefix; triton_with_ft's repository counts its recipe-layers images by their own prefix after it.
      const layers = p.name === "registry-tritonWithFt" ? [["tagged", "imageCountMoreThan"]] : [];
      expect(rules.map((r) => [r.selection.tagStatus, r.selection.countType])).toEqual([
        ["tagged", "imageCountMoreThan"],
        ["tagged", "imageCountMoreThan"],
        ["tagged", "imageCountMoreThan"],
        ["tagged", "imageCountMoreThan"],
        ["untagged", "sinceImagePushed"],
        ["tagged", "imageCountMoreThan"],
        ...layers,
      ]);
    }
    expect(run.outputs.serverRepositoryUrl).toBe(`${ACCOUNT}.dkr.ecr.${REGION}.amazonaws.com/triton-ft-dev/server`);
  });
});

describe("builder host", () => {
  it("GPU instance of the configured type: looked-up DLAMI, IMDSv2, encrypted gp3 sized from the model, public subnet, stable EIP", async () => {
    const run = await runProgram(gpt2Config());
    const i = run.one("aws:ec2/instance:Instance", "builder");
    expect(i.inputs.instanceType).toBe("g5.xlarge");
    expect(i.inputs.ami).toBe("ami-0a1b2c3d4e5f60718");
    expect(i.inputs.metadataOptions).toMatchObject({ httpTokens: "required", httpEndpoint: "enabled" });
    const root = i.inputs.rootBlockDevice as Record<string, unknown>;
    expect(root).toMatchObject({ volumeType: "gp3", encrypted: true });
    // Sized by the model formula (sizing.ts): both images alone are 60 GiB before headroom.
    const preset = findPreset("gpt2");
    expect(root.volumeSize).toBe(builderDiskGiB("gpt", preset?.arch ?? (undefined as never)));
    expect(root.volumeSize).toBeGreaterThan(60 * 1.5 + 40);
    expect(i.inputs.associatePublicIpAddress).toBe(true);
    expect(run.one("aws:ec2/eip:Eip", "builder").inputs.instance).toBe(i.id);
    expect(run.outputs.builderPublicIp).toBe(run.one("aws:ec2/eip:Eip", "builder").state.publicIp);
    expect(String(i.inputs.userData)).toContain("AcceptEnv HF_TOKEN");
  });

  it("a pinned AMI skips the lookup", async () => {
    const run = await runProgram(withOverrides(gpt2Config(), { build: { builderAmiId: "ami-0123456789abcdef0" } }));
    expect(run.one("aws:ec2/instance:Instance", "builder").inputs.ami).toBe("ami-0123456789abcdef0");
    expect(run.outputs.builderAmiId).toBe("ami-0123456789abcdef0");
  });

  it("SSH only from the configured CIDRs, never 0.0.0.0/0 inbound", async () => {
    const run = await runProgram(
      withOverrides(gpt2Config(), { build: { sshAllowedCidrs: ["198.51.100.7/32", "192.0.2.0/28"] } }),
    );
    const ingress = run.byType("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule");
    // The builder's rules, and the compile host's: the same CIDRs.
    for (const host of ["builder", "compiler"])
      expect(
        ingress
          .filter((r) => r.name.startsWith(`${host}-`))
          .map((r) => r.inputs.cidrIpv4)
          .sort(),
        host,
      ).toEqual(["192.0.2.0/28", "198.51.100.7/32"]);
    for (const r of ingress) expect(r.inputs).toMatchObject({ ipProtocol: "tcp", fromPort: 22, toPort: 22 });
    expect(ingress.some((r) => r.inputs.cidrIpv4 === "0.0.0.0/0" || r.inputs.cidrIpv6 === "::/0")).toBe(false);
    // No inline rules that would slip past the check above.
    expect(run.one("aws:ec2/securityGroup:SecurityGroup", "builder").inputs.ingress).toBeUndefined();
  });

  it("IAM: ECR push/pull scoped to the two repository ARNs, token on *, SSM core, EC2 trust", async () => {
    const run = await runProgram(gpt2Config());
    const arns = run
      .byType("aws:ecr/repository:Repository")
      .map((r) => String(r.state.arn))
      .sort();
    const doc = JSON.parse(String(run.one("aws:iam/rolePolicy:RolePolicy", "builder-ecr").inputs.policy)) as {
      Statement: PolicyStatement[];
    };
    const push = doc.Statement.find((s) => (s.Action as string[]).includes("ecr:PutImage"));
    expect([...(push?.Resource as string[])].sort()).toEqual(arns);
    for (const s of doc.Statement) {
      if (s.Resource === "*" || (Array.isArray(s.Resource) && s.Resource.includes("*")))
        expect(s.Action).toEqual(["ecr:GetAuthorizationToken"]);
    }
    expect(run.one("aws:iam/rolePolicyAttachment:RolePolicyAttachment", "builder-ssm").inputs.policyArn).toBe(
      "arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore",
    );
    const trust = JSON.parse(String(run.one("aws:iam/role:Role", "builder").inputs.assumeRolePolicy)) as {
      Statement: Array<{ Principal: unknown }>;
    };
    expect(trust.Statement[0]?.Principal).toEqual({ Service: "ec2.amazonaws.com" });
  });

  it("generates an ED25519 key and exports the private key only as a secret", async () => {
    const run = await runProgram(gpt2Config());
    expect(run.one("tls:index/privateKey:PrivateKey", "builder-ssh").inputs.algorithm).toBe("ED25519");
    expect(run.secretOutputs).toContain("builderPrivateKey");
    expect(String(run.outputs.builderPrivateKey)).toContain("OPENSSH PRIVATE KEY");
  });

  it("a provided public key needs the sshPrivateKey secret, and then nothing is generated", async () => {
    const cfg = withOverrides(gpt2Config(), {
      build: { sshPublicKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIexample ops" },
    });
    await expect(runProgram(cfg)).rejects.toThrow(
      /triton-ft:sshPrivateKey = \(unset\): is required with build.sshPublicKey/,
    );
    const run = await runProgram(cfg, {
      secrets: { sshPrivateKey: "-----BEGIN OPENSSH PRIVATE KEY-----\nx\n-----END OPENSSH PRIVATE KEY-----\n" },
    });
    // Only the host keys are generated (the program pins them); no login key.
    expect(run.byType("tls:index/privateKey:PrivateKey").map((k) => k.name)).toEqual([
      "builder-host-key",
      "compiler-host-key",
    ]);
    expect(run.one("aws:ec2/keyPair:KeyPair", "builder").inputs.publicKey).toBe(
      "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIexample ops",
    );
    expect(run.outputs.builderPrivateKey).toBeUndefined();
  });
});

describe("remote build pipeline", () => {
  it("one command per step, running its script with its config file under the timer, with step-sized timeouts", async () => {
    const run = await runProgram(gpt2Config());
    for (const [id, script] of [
      ["host-ready", "host-ready"],
      ["triton-with-ft", "build-triton-with-ft"],
      ["fetch", "fetch"],
      ["convert", "convert"],
      ["gemm", "gemm"],
      ["bake", "bake"],
    ] as const) {
      // The timer watches the marker the script leaves (lib/state.sh: state/<step name>.done, named as the id).
      expect(stepCmd(run, id).inputs.create).toBe(
        `bash /opt/triton-ft/scripts/remote/measure-step.sh /opt/triton-ft/state/${id}.done bash /opt/triton-ft/scripts/remote/${script}.sh /opt/triton-ft/steps/${id}.conf`,
      );
    }
    // Each step's budget from the plan (infra/plan/budgets.ts) as its create and
    // update timeouts, and it runs after its config is written and the steps it needs.
    const { stack } = resolveStack(gpt2Config(), {});
    if (!stack) throw new Error("fixture must resolve");
    const budgets = stepMinutes(stack, stackSmList(stack));
    for (const step of buildSteps(stack, (p) => `h:${p}`).steps) {
      const opts = stepCmd(run, step.id).options;
      const budget = `${budgets[step.id]}m`;
      expect(opts.customTimeouts, step.id).toEqual({ create: budget, update: budget, delete: "10m" });
      expect(opts.dependsOn, step.id).toEqual(
        expect.arrayContaining([
          `${COMMAND}::build-config-${step.id}`,
          ...runOrder(step).map((d) => `${COMMAND}::build-${d}`),
        ]),
      );
    }
    // The budgets are sized per step, not one figure for all.
    expect(new Set(Object.values(budgets)).size).toBeGreaterThan(1);
    const ships = run.byType("command:remote:CopyToRemote").map((c) => c.name);
    expect(ships).toEqual(
      expect.arrayContaining(["build-ship-scripts-remote", "build-ship-scripts-convert", "build-ship-images"]),
    );
    expect(ships.filter((n) => n.includes("model-repository"))).toHaveLength(4);
  });

  it("both hosts are prepared after the registry allows blob mounts, so the first bake mounts triton_with_ft's layers", async () => {
    const run = await runProgram(gpt2Config());
    const prepares = run.byType(COMMAND).filter((c) => c.name.endsWith("prepare"));
    expect(prepares.map((c) => c.name).sort()).toEqual(["build-compiler-prepare", "build-prepare"]);
    for (const p of prepares)
      expect(p.options.dependsOn, p.name).toContain("aws:ecr/accountSetting:AccountSetting::registry-blob-mounting");
    // An ordering only: no step's trigger reads the setting, so a live stack's steps do not re-run for it.
    for (const c of run.byType(COMMAND).filter((x) => x.name.startsWith("build-") && !x.name.endsWith("prepare")))
      expect(JSON.stringify(c.inputs.triggers ?? []), c.name).not.toContain("BLOB_MOUNTING");
  });

  it("every step's input hash covers lib.sh and the helpers it sources from scripts/remote/lib/", () => {
    const { stack } = resolveStack(gpt2Config(), {});
    if (!stack) throw new Error("fixture must resolve");
    const hashesWith = (changed: string) => buildSteps(stack, (p) => (p === changed ? "edited" : `h:${p}`)).hashes;
    const base = hashesWith("");
    for (const changed of ["scripts/remote/lib.sh", "scripts/remote/lib"]) {
      const now = hashesWith(changed);
      for (const id of Object.keys(base) as Array<keyof typeof base>)
        expect(now[id], `${changed}: ${id}`).not.toBe(base[id]);
    }
  });

  it("the step timer is no step's input: editing it re-runs nothing", () => {
    const { stack } = resolveStack(gpt2Config(), {});
    if (!stack) throw new Error("fixture must resolve");
    const hashesWith = (changed: string) => buildSteps(stack, (p) => (p === changed ? "edited" : `h:${p}`)).hashes;
    expect(hashesWith("scripts/remote/measure-step.sh")).toEqual(hashesWith(""));
  });

  it("each step script names its marker as the timer expects (step_init <id>)", () => {
    const { stack } = resolveStack(gpt2Config(), {});
    if (!stack) throw new Error("fixture must resolve");
    for (const step of buildSteps(stack, (p) => `h:${p}`).steps)
      expect(readFileSync(join(ROOT, step.script), "utf8"), step.script).toMatch(
        new RegExp(`^step_init ${step.id} "\\$\\{1:-\\}"$`, "m"),
      );
  });

  it("the step configs carry deploy-time values: repository URLs, and triton_with_ft's digest for convert, gemm and bake only", async () => {
    const run = await runProgram(gpt2Config());
    const image = String(run.outputs.tritonWithFtImage);
    expect(image).toMatch(new RegExp(`^${ACCOUNT}\\.dkr\\.ecr\\.${REGION}\\.amazonaws\\.com/.+@sha256:[0-9a-f]{64}$`));
    const config = (id: string) => String(run.one(COMMAND, `build-config-${id}`).inputs.stdin);
    expect(config("triton-with-ft")).toContain(
      `ECR_REPOSITORY_URL='${ACCOUNT}.dkr.ecr.${REGION}.amazonaws.com/triton-ft-test/triton_with_ft'`,
    );
    for (const id of ["convert", "gemm"]) expect(config(id)).toContain(`IMAGE='${image}'`);
    expect(config("bake")).toContain(`BASE_IMAGE='${image}'`);
    for (const id of ["host-ready", "fetch", "triton-with-ft"]) expect(config(id)).not.toContain("@sha256:");
    expect(config("fetch")).not.toMatch(/@\{/);
    expect(run.outputs.serverImage).toMatch(
      /triton-ft-test\/server@sha256:[0-9a-f]{64}$|build-bake@sha256:[0-9a-f]{64}$/,
    );
  });

  it("the HF token reaches only fetch, as a secret environment value, never in a command or config", async () => {
    const token = "hf_SeCrEtToKeN123";
    const run = await runProgram(gpt2Config(), { secrets: { hfToken: token } });
    expect(stepCmd(run, "fetch").inputs.environment).toEqual({ HF_TOKEN: token });
    for (const r of run.resources.filter((x) => x.name !== "build-fetch"))
      expect(JSON.stringify(r.inputs)).not.toContain(token);
    expect(JSON.stringify(stepCmd(run, "fetch").inputs.create)).not.toContain(token);
  });

  it("stopBuilderWhenDone adds the start/stop instance states, keyed to the step inputs", async () => {
    const off = await runProgram(gpt2Config());
    expect(off.byType("aws:ec2transitgateway/instanceState:InstanceState")).toHaveLength(0);
    const on = await runProgram(withOverrides(gpt2Config(), { build: { stopBuilderWhenDone: true } }));
    const states: RecordedResource[] = on.byType("aws:ec2transitgateway/instanceState:InstanceState");
    const instanceId = on.one("aws:ec2/instance:Instance", "builder").id;
    const compilerId = on.one("aws:ec2/instance:Instance", "compiler").id;
    expect(states.map((s) => [s.name, s.inputs.state, s.inputs.instanceId]).sort()).toEqual([
      ["build-compiler-running", "running", compilerId],
      ["build-compiler-stopped", "stopped", compilerId],
      // Stops the compile host again after AWS applies a new instance type (docs/build.md).
      ["build-compiler-stopped-at-type", "stopped", compilerId],
      ["build-running", "running", instanceId],
      ["build-stopped", "stopped", instanceId],
    ]);
    // Stopped only after the deployed images are tagged: the builder runs the tagging.
    const stopped = states.find((s) => s.name === "build-stopped");
    expect(stopped?.options.dependsOn).toEqual(
      expect.arrayContaining([
        "command:remote:Command::build-bake",
        "command:remote:Command::build-deployed-server",
        "command:remote:Command::build-deployed-gateway",
      ]),
    );
  });

  it("tags what is deployed once its rollout succeeded: one command per image, after its Deployment, keyed to the image", async () => {
    const run = await runProgram(gpt2Config());
    const cmd = (n: string) => run.one("command:remote:Command", n);
    const server = cmd("build-deployed-server");
    const gateway = cmd("build-deployed-gateway");
    expect(server.options.dependsOn).toContain("kubernetes:apps/v1:Deployment::triton-deployment");
    expect(gateway.options.dependsOn).toContain("kubernetes:apps/v1:Deployment::gateway-deployment");
    for (const c of [server, gateway]) {
      // The script is shipped before it runs.
      expect(c.options.dependsOn).toContain("command:remote:CopyToRemote::build-ship-scripts-remote");
      expect(String(c.inputs.create)).toMatch(
        /^bash \/opt\/triton-ft\/scripts\/remote\/tag-deployed\.sh \S+ \S+@sha256:[0-9a-f]{64}$/,
      );
    }
    expect(server.inputs.triggers).toEqual([run.outputs.serverImage]);
    expect(gateway.inputs.triggers).toEqual([run.outputs.gatewayImage]);
  });
});
