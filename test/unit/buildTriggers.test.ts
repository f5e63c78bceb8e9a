import { beforeAll, describe, expect, it } from "vitest";
import { sha256 } from "../../infra/plan/hash";
import { builderRestartTrigger, type RestartMaterial } from "../../infra/plan/restart";
import { gpt2Config } from "../lib/fixtures";
import { runProgram, type ProgramRun } from "../lib/pulumi";

describe("SSH host key pinning", () => {
  let run: ProgramRun;
  beforeAll(async () => {
    run = await runProgram(gpt2Config(), { stack: "dev" });
  });

  it("every SSH connection (commands and copies) pins the program's generated host key of its host", () => {
    const pub = (host: string) => {
      const hostKey = run.one("tls:index/privateKey:PrivateKey", `${host}-host-key`);
      expect(hostKey.inputs.algorithm).toBe("ED25519");
      return String(hostKey.state.publicKeyOpenssh);
    };
    const builder = pub("builder");
    const compiler = pub("compiler");
    expect(builder).toMatch(/\S/);
    expect(compiler).not.toBe(builder);
    // The triton-with-ft and twf-layers steps, their configs and the compile host's own setup run on the compile host.
    const onCompiler = (name: string) =>
      /^build-(config-)?(triton-with-ft|twf-layers)$/.test(name) || name.startsWith("build-compiler-");
    const remote = [...run.byType("command:remote:Command"), ...run.byType("command:remote:CopyToRemote")];
    expect(remote.length).toBeGreaterThan(10);
    expect(remote.filter((r) => onCompiler(r.name)).length).toBe(9);
    for (const r of remote)
      expect((r.inputs.connection as { hostKey?: string }).hostKey, r.name).toBe(
        onCompiler(r.name) ? compiler : builder,
      );
  });

  it("the private host key is an SSM SecureString only the builder's role may read, never in user data", () => {
    const hostKey = run.one("tls:index/privateKey:PrivateKey", "builder-host-key");
    const param = run.one("aws:ssm/parameter:Parameter", "builder-host-key");
    expect(param.inputs).toMatchObject({ type: "SecureString", name: "/triton-ft-dev/builder/ssh-host-ed25519-key" });
    expect(param.inputs.value).toBe(hostKey.state.privateKeyOpenssh);
    const policy = JSON.parse(String(run.one("aws:iam/rolePolicy:RolePolicy", "builder-host-key").inputs.policy));
    expect(policy.Statement).toEqual([
      { Sid: "ReadHostKey", Effect: "Allow", Action: ["ssm:GetParameter"], Resource: param.state.arn },
    ]);
    const userData = String(run.one("aws:ec2/instance:Instance", "builder").inputs.userData);
    expect(userData).toContain("--name '/triton-ft-dev/builder/ssh-host-ed25519-key' --with-decryption");
    expect(userData).not.toContain("BEGIN OPENSSH PRIVATE KEY");
    expect(userData).not.toContain(String(hostKey.state.privateKeyOpenssh));
  });

  it("every step's triggers start with its host's identity, so a replaced host re-runs its steps", () => {
    const id = (host: string) => run.one("aws:ec2/instance:Instance", host).id;
    const steps = run
      .byType("command:remote:Command")
      .filter((c) => /^build-(host-ready|triton-with-ft|fetch|convert|gemm|bake)$/.test(c.name));
    expect(steps).toHaveLength(6);
    for (const s of steps)
      expect((s.inputs.triggers as unknown[])[0], s.name).toBe(
        id(s.name === "build-triton-with-ft" ? "compiler" : "builder"),
      );
  });
});

describe("restarting a stopped builder", () => {
  const base: RestartMaterial = {
    stepHashes: { fetch: "a", convert: "b" },
    commands: { fetch: "bash fetch.sh fetch.conf", convert: "bash convert.sh convert.conf" },
    instanceId: "i-1",
    deployValues: ["us-east-1", "123.dkr.ecr", "repo/twf", "repo/server"],
    connection: { host: "1.2.3.4", user: "ubuntu", hostKey: "ssh-ed25519 AAA", privateKey: "KEY" },
    secretEnv: ["hf_token"],
  };
  const t0 = builderRestartTrigger(base);

  it.each([
    ["a step's input hash", { ...base, stepHashes: { ...base.stepHashes, convert: "c" } }],
    [
      "a step's command line (a new one runs the step again)",
      { ...base, commands: { ...base.commands, fetch: "bash timer fetch.sh fetch.conf" } },
    ],
    ["the builder's identity", { ...base, instanceId: "i-2" }],
    ["a deploy-time value (repository URL)", { ...base, deployValues: [...base.deployValues.slice(0, 3), "other"] }],
    ["the pinned host key", { ...base, connection: { ...base.connection, hostKey: "ssh-ed25519 BBB" } }],
    ["the login key", { ...base, connection: { ...base.connection, privateKey: "KEY2" } }],
    ["the HF token", { ...base, secretEnv: ["hf_other"] }],
  ])("changes with %s (each re-runs a step command)", (_what, m) => {
    expect(builderRestartTrigger(m)).not.toBe(t0);
  });

  it("is stable otherwise, and holds no secret in clear", () => {
    expect(builderRestartTrigger(structuredClone(base))).toBe(t0);
    expect(t0).toMatch(/^[0-9a-f]{64}$/);
  });

  it("hashes what it hashed before the compile host's type was picked by a target (no live host's InstanceState is replaced)", () => {
    const c = base.connection;
    const before = sha256(
      JSON.stringify({
        steps: base.stepHashes,
        commands: base.commands,
        instanceId: base.instanceId,
        deploy: base.deployValues,
        connection: [c.host, c.user, c.port, c.hostKey, sha256(c.privateKey ?? "")],
        secretEnv: base.secretEnv.map((v) => sha256(v)),
      }),
    );
    expect(t0).toBe(before);
  });
});

describe("a new compile host type on a stopped host", () => {
  let run: ProgramRun;
  beforeAll(async () => {
    run = await runProgram(
      { ...gpt2Config(), build: { ...gpt2Config().build, stopBuilderWhenDone: true } },
      {
        stack: "dev",
      },
    );
  });

  it("is stopped again after the provider's stop, change and start, by an InstanceState replaced with the type only", () => {
    const compiler = run.one("aws:ec2/instance:Instance", "compiler");
    const atType = run.one("aws:ec2transitgateway/instanceState:InstanceState", "build-compiler-stopped-at-type");
    expect(atType.inputs).toEqual({ instanceId: compiler.id, state: "stopped" });
    expect(atType.options.replacementTrigger).toBe(compiler.inputs.instanceType);
    // After the instance (its type applied first), the compile and the compile host's own stop.
    expect(atType.options.dependsOn).toEqual(
      expect.arrayContaining([
        "aws:ec2/instance:Instance::compiler",
        "command:remote:Command::build-triton-with-ft",
        "aws:ec2transitgateway/instanceState:InstanceState::build-compiler-stopped",
      ]),
    );
  });
});
