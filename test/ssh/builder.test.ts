/**
 * The remote build steps against a real OpenSSH server: the dev stack's
 * program runs under Pulumi's mock runtime, and every CopyToRemote and Command
 * it registers is replayed, as registered, over SSH to Debian's sshd on
 * 127.0.0.1 configured by the program's own user data. Docker, GPU and cloud
 * tools are stubbed on the builder; bash, the step scripts, python3 and sshd
 * are real.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import type { Client } from "ssh2";
import { utils } from "ssh2";
import { parse as parseYaml } from "yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RESOURCE_STATE } from "../lib/mocks";
import { runProgram } from "../lib/pulumi";
import { ROOT } from "../k8s/stacks";
import { connect, exec, HostKeyMismatch, type Connection, type ExecResult } from "./client";
import { extractPipeline, replay, type Extracted, type Op, type OpResult } from "./pipeline";
import { ed25519KeyPair } from "./keys";
import { TestSshd, type SshdInfo } from "./sshd";
import type { CostReport } from "../../infra/cost";
import { COMPILE_HOST_READY } from "../../infra/cost/fromStack";
import { STEP_TIMES_OUTPUT, parseStepMeasurement, readMeasuredSteps } from "../../infra/plan/measurements";
import { main } from "../../scripts/synth";

const HF_SECRET = "hf_SshSuiteS3cretTokenValue0123456789";
const BUILD_DELAY_SECONDS = 2;
const STACK = "dev";
const work = fs.mkdtempSync(path.join(os.tmpdir(), "triton-ft-ssh-"));
const sshd = new TestSshd(work);
let server: SshdInfo;
let pipeline: Extracted;
let conn: Connection;
let hostKeyFromProgram = false;
const clients: Client[] = [];
/** Every step output of every replay, searched for the token at the end. */
const outputs: string[] = [];
/** The results of each replay, in order: the timing tests compare a step's runs. */
const runs: OpResult[][] = [];

async function replayAll(c: Client): ReturnType<typeof replay> {
  const r = await replay(c, pipeline.ops);
  for (const x of r.results) if (x.result) outputs.push(x.result.stdout, x.result.stderr);
  runs.push(r.results);
  return r;
}

/** Real key pairs for the program's tls.PrivateKey resources, so its connection key (and pinned host key) work. */
function useRealKeys(): void {
  const fake = RESOURCE_STATE["tls:index/privateKey:PrivateKey"];
  const keys = new Map<string, { private: string; public: string }>();
  RESOURCE_STATE["tls:index/privateKey:PrivateKey"] = (name, inputs) => {
    let k = keys.get(name);
    if (!k) {
      k = ed25519KeyPair(name);
      keys.set(name, k);
    }
    return { ...(fake ? fake(name, inputs) : {}), privateKeyOpenssh: k.private, publicKeyOpenssh: k.public };
  };
}

function stackConfig(stack: string): Record<string, unknown> {
  const file = parseYaml(fs.readFileSync(path.join(ROOT, `Pulumi.${stack}.yaml`), "utf8")) as {
    config: Record<string, unknown>;
  };
  return Object.fromEntries(
    Object.entries(file.config)
      .filter(([k]) => k.startsWith("triton-ft:"))
      .map(([k, v]) => [k.slice("triton-ft:".length), v]),
  );
}

function publicKeyOf(privateKey: string): string {
  const k = utils.parseKey(privateKey);
  if (k instanceof Error) throw k;
  const key = Array.isArray(k) ? k[0] : k;
  if (!key) throw new Error("no key");
  return `${key.type} ${key.getPublicSSH().toString("base64")}`;
}

/** The model the fake Hub serves: config.json built from the plan's expected architecture, plus the expected files. */
function writeHubFixture(ops: Op[], stubState: string): void {
  const archOp = ops.find((o) => o.kind === "copy" && o.remotePath.endsWith("/expected-arch.json"));
  if (!archOp || archOp.kind !== "copy" || !("text" in archOp.source)) throw new Error("no expected-arch.json shipped");
  const a = JSON.parse(archOp.source.text) as Record<string, number | string>;
  if (a.family !== "gpt")
    throw new Error(`the SSH suite's fake Hub serves GPT-2 configs; the ${STACK} stack is ${a.family}`);
  const config = {
    model_type: "gpt2",
    n_layer: a.layers,
    n_embd: a.hidden,
    n_head: a.heads,
    n_inner: null,
    vocab_size: a.vocab,
    n_positions: a.maxPositions,
    n_ctx: a.maxPositions,
    bos_token_id: a.startId,
    eos_token_id: a.endId,
  };
  const dir = path.join(stubState, "hf-fixture");
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, "config.json"), JSON.stringify(config, null, 2));
  for (const f of ["vocab.json", "merges.txt", "pytorch_model.bin", "tokenizer.json", "generation_config.json"]) {
    fs.writeFileSync(path.join(dir, f), `fixture ${f}\n`);
  }
}

async function client(over: Partial<Connection> = {}): Promise<Client> {
  const c = await connect({ ...conn, ...over });
  clients.push(c);
  return c;
}

function stubCalls(): string[] {
  return fs.existsSync(server.stubLog) ? fs.readFileSync(server.stubLog, "utf8").split("\n").filter(Boolean) : [];
}

/** The result of one build step (the command running scripts/remote/<script>.sh). */
function stepResult(results: OpResult[], script: string): ExecResult | undefined {
  return results.find((r) => r.op.kind === "exec" && r.op.command.includes(`/scripts/remote/${script}.sh `))?.result;
}

const stepOps = () =>
  pipeline.ops.filter((o) => o.kind === "exec" && /^bash \S+\/scripts\/remote\/\S+\.sh /.test(o.command));

/** The build steps, each run by its timer (scripts/remote/measure-step.sh). */
const timedOps = () => stepOps().filter((o) => o.kind === "exec" && o.command.includes("/remote/measure-step.sh "));

beforeAll(async () => {
  const t0 = Date.now();
  useRealKeys();
  const run = await runProgram(stackConfig(STACK), { stack: STACK, secrets: { hfToken: HF_SECRET } });
  pipeline = await extractPipeline(run);
  // SSM parameters the program registers (the builder's pinned host key): the user data reads them with aws.
  const ssm = Object.fromEntries(
    run
      .byType("aws:ssm/parameter:Parameter")
      .map((r) => [String(r.inputs.name), String(r.inputs.value)] as [string, string]),
  );
  server = await sshd.start(pipeline.userData, publicKeyOf(pipeline.connection.privateKey), ssm);
  writeHubFixture(pipeline.ops, server.stubState);
  hostKeyFromProgram = pipeline.connection.hostKey !== undefined;
  if (!hostKeyFromProgram) {
    console.warn("[ssh-suite] the program pins no host key (connection.hostKey unset): pinning the test server's key");
  }
  conn = {
    // Never the (mock) public IP: the builder is the sshd on loopback.
    host: "127.0.0.1",
    port: server.port,
    user: os.userInfo().username,
    privateKey: pipeline.connection.privateKey,
    hostKey: pipeline.connection.hostKey ?? (server.hostKeys[0] as string),
  };
  console.log(`[ssh-suite] setup ${((Date.now() - t0) / 1000).toFixed(1)}s: sshd on 127.0.0.1:${server.port}`);
});

afterAll(async () => {
  for (const c of clients) c.end();
  await sshd.stop();
  if (!process.env.SSH_KEEP_WORK_DIR) fs.rmSync(work, { recursive: true, force: true });
});

describe("the builder's sshd, configured by the program's user data", () => {
  it("the user data installs an sshd drop-in that accepts exactly the secret variables the steps use", () => {
    const dropins = fs.readdirSync(path.join(work, "etc-ssh/sshd_config.d"));
    expect(dropins.length).toBeGreaterThan(0);
    const text = dropins.map((f) => fs.readFileSync(path.join(work, "etc-ssh/sshd_config.d", f), "utf8")).join("\n");
    const secretVars = new Set(
      pipeline.ops.flatMap((o) => (o.kind === "exec" && o.environment ? Object.keys(o.environment) : [])),
    );
    expect(secretVars.size).toBeGreaterThan(0);
    const accepted = new Set(
      [...text.matchAll(/^\s*AcceptEnv\s+(.+)$/gim)].flatMap((m) => (m[1] ?? "").trim().split(/\s+/)),
    );
    expect([...secretVars].filter((v) => !accepted.has(v))).toEqual([]);
  });

  it("delivers an accepted variable and silently drops one sshd refuses (the provider ignores setenv errors)", async () => {
    const c = await client();
    const secret = [
      ...new Set(pipeline.ops.flatMap((o) => (o.kind === "exec" && o.environment ? Object.keys(o.environment) : []))),
    ][0] as string;
    const r = await exec(c, `printf '%s|%s' "\${${secret}-unset}" "\${TRITON_FT_NOT_ACCEPTED-unset}"`, {
      environment: { [secret]: "delivered", TRITON_FT_NOT_ACCEPTED: "dropped" },
    });
    expect(r.code).toBe(0);
    expect(r.stdout).toBe("delivered|unset");
  });

  it("refuses a builder that presents another host key than the pinned one", async () => {
    const other = ed25519KeyPair().public;
    await expect(connect({ ...conn, hostKey: other })).rejects.toBeInstanceOf(HostKeyMismatch);
    await expect(connect({ ...conn, hostKey: "" })).rejects.toThrow(/pinned host key/);
    // The pinned key itself connects.
    const c = await client();
    expect((await exec(c, "true")).code).toBe(0);
  });
});

describe("the build steps over SSH, as the program registers them", { concurrent: false }, () => {
  it("registers the steps with nothing secret in a command, a copied file or a config", () => {
    expect(stepOps().length).toBeGreaterThanOrEqual(5);
    for (const o of pipeline.ops) {
      const visible = o.kind === "exec" ? `${o.command}\n${o.stdin ?? ""}` : "text" in o.source ? o.source.text : "";
      expect(visible, o.name).not.toContain(HF_SECRET);
    }
    const withToken = pipeline.ops.filter(
      (o) => o.kind === "exec" && Object.values(o.environment ?? {}).includes(HF_SECRET),
    );
    expect(withToken.map((o) => o.name)).toEqual([expect.stringMatching(/fetch$/)]);
  });

  it("an interrupted first run stops in the fetch step, after the steps before it finished", async () => {
    sshd.setControl({ STUB_FAIL_ONCE: "huggingface-cli:download" });
    const c = await client();
    const { results, failed } = await replayAll(c);
    sshd.setControl({});
    expect(failed?.op.kind === "exec" && failed.op.command, failed?.result?.stderr).toContain(
      "/scripts/remote/fetch.sh ",
    );
    expect(failed?.result?.signal, "the session was killed mid-download").toMatch(/KILL$/);
    // The steps before fetch finished.
    expect(stepResult(results, "host-ready")?.code).toBe(0);
    expect(stepResult(results, "build-triton-with-ft")?.code).toBe(0);
    const partial = fs.readFileSync(path.join(server.stubState, "hf-downloaded"), "utf8").split("\n").filter(Boolean);
    expect(partial.length).toBeGreaterThan(0);
  });

  it("the next run skips the finished steps, resumes the download and completes every step", async () => {
    const before = fs.readFileSync(path.join(server.stubState, "hf-downloaded"), "utf8").split("\n").filter(Boolean);
    const callsBefore = stubCalls().length;
    const c = await client();
    // Each image build takes BUILD_DELAY_SECONDS: the bake step's recorded time must hold it (below).
    sshd.setControl({ STUB_DELAY: "docker:build", STUB_DELAY_SECONDS: String(BUILD_DELAY_SECONDS) });
    const { results, failed } = await replayAll(c);
    sshd.setControl({});
    expect(failed, `${failed?.op.name}: ${failed?.result?.stderr}`).toBeUndefined();
    for (const script of ["host-ready", "build-triton-with-ft"]) {
      expect(stepResult(results, script)?.stderr, script).toMatch(/skipping/);
    }
    expect(stepResult(results, "fetch")?.stderr).not.toMatch(/skipping/);
    // Only the files missing after the interruption were downloaded.
    const after = fs.readFileSync(path.join(server.stubState, "hf-downloaded"), "utf8").split("\n").filter(Boolean);
    const fetchedNow = after.slice(before.length);
    expect(fetchedNow.length).toBeGreaterThan(0);
    expect(fetchedNow.filter((f) => before.includes(f))).toEqual([]);
    const bake = stepResult(results, "bake");
    expect(bake?.stdout).toMatch(/^RESULT image=\S+@sha256:[0-9a-f]{64}$/m);
    expect(
      stubCalls()
        .slice(callsBefore)
        .some((l) => l.startsWith("docker push")),
    ).toBe(true);
  });

  it("a second complete run skips every finished step and rebuilds nothing", async () => {
    const callsBefore = stubCalls().length;
    const c = await client();
    const { results, failed } = await replayAll(c);
    expect(failed).toBeUndefined();
    const steps = results.filter((r) => r.op.kind === "exec" && stepOps().includes(r.op));
    expect(steps.length).toBe(stepOps().length);
    for (const r of steps) {
      // The compile host's readiness check is a check, not a step: no marker, no work to skip
      // (cloud-init, Docker, tools, free disk), so it runs again and passes.
      if (r.op.kind === "exec" && r.op.command.includes("/scripts/remote/compile-host-ready.sh ")) {
        expect(r.result?.code, r.op.name).toBe(0);
        continue;
      }
      expect(r.result?.stderr, r.op.name).toMatch(/skipping/);
    }
    const newCalls = stubCalls().slice(callsBefore);
    expect(newCalls.filter((l) => /^(docker (build|push|run)|huggingface-cli)/.test(l))).toEqual([]);
  });

  it("steps record their durations: each real run printed what it took, and its host keeps it beside the marker", async () => {
    const [first, second] = runs;
    if (!first || !second) throw new Error("the runs before did not happen");
    const c = await client();
    for (const op of timedOps()) {
      // The run that did the work: host-ready and triton_with_ft in the interrupted first run, the rest in the next.
      const real = [first, second]
        .map((rs) => rs.find((r) => r.op === op)?.result)
        .find((r) => r && r.code === 0 && !/skipping/.test(r.stderr));
      expect(real, op.name).toBeDefined();
      const m = parseStepMeasurement(real?.stdout ?? "");
      expect(m, `${op.name}: ${real?.stdout}`).toBeDefined();
      expect(m?.measuredAt.slice(0, 10), op.name).toBe(new Date().toISOString().slice(0, 10));
      // The host's record beside the step's marker (the timer's first argument), for the marker's inputs.
      const marker = op.kind === "exec" ? /measure-step\.sh (\S+\.done) /.exec(op.command)?.[1] : undefined;
      expect(marker, op.name).toBeDefined();
      const r = await exec(c, `cat ${marker}.measured; sed -n 's/^input_hash=//p' ${marker}`);
      expect(r.code, op.name).toBe(0);
      const [hashLine, secondsLine, , , markerHash] = r.stdout.trim().split("\n");
      expect(hashLine, op.name).toBe(`input_hash=${markerHash}`);
      expect(secondsLine, op.name).toBe(`seconds=${m?.seconds}`);
    }
    // The bake of the next run took at least its (stubbed) image build's time.
    const bake = stepResult(second, "bake");
    expect(parseStepMeasurement(bake?.stdout ?? "")?.seconds).toBeGreaterThanOrEqual(BUILD_DELAY_SECONDS);
  });

  it("a re-run that skips a step keeps its recorded time", () => {
    const [first, second, third] = runs;
    if (!first || !second || !third) throw new Error("the runs before did not happen");
    for (const op of timedOps()) {
      const skipped = third.find((r) => r.op === op)?.result;
      expect(skipped?.stderr, op.name).toMatch(/skipping/);
      const real = [first, second]
        .map((rs) => rs.find((r) => r.op === op)?.result)
        .find((r) => r && r.code === 0 && !/skipping/.test(r.stderr));
      expect(parseStepMeasurement(skipped?.stdout ?? ""), op.name).toEqual(parseStepMeasurement(real?.stdout ?? ""));
    }
  });

  it("the recorded times reach the stack output, and synth reads them back into the estimate", async () => {
    const third = runs[2];
    if (!third) throw new Error("the runs before did not happen");
    // The program again, each remote command's stdout the real one of the last run: what `pulumi up` records.
    const stdout = new Map(
      third.flatMap((r) => (r.op.kind === "exec" && r.result ? [[r.op.name, r.result.stdout]] : [])),
    );
    const fake = RESOURCE_STATE["command:remote:Command"];
    RESOURCE_STATE["command:remote:Command"] = (name, inputs) => ({
      ...(fake ? fake(name, inputs) : {}),
      stdout: stdout.get(name) ?? "",
      stderr: "",
    });
    let exported: unknown;
    try {
      const run = await runProgram(stackConfig(STACK), { stack: STACK, secrets: { hfToken: HF_SECRET } });
      exported = run.outputs[STEP_TIMES_OUTPUT];
    } finally {
      if (fake) RESOURCE_STATE["command:remote:Command"] = fake;
    }
    const times = readMeasuredSteps(exported, STEP_TIMES_OUTPUT);
    const out = path.join(work, "synth");
    const lines: string[] = [];
    const io = {
      cwd: ROOT,
      repoRoot: ROOT,
      stdout: (l: string) => lines.push(l),
      stderr: (l: string) => lines.push(l),
    };
    expect(main(["--stack", STACK, "--out", path.join(out, "plain")], io), lines.join("\n")).toBe(0);
    const plan = JSON.parse(fs.readFileSync(path.join(out, "plain", "plan.json"), "utf8")) as {
      buildSteps: Array<{ id: string; inputHash: string }>;
    };
    // Every step, labelled with its input hash in the plan, with the seconds its host recorded.
    expect(times.map((t) => t.step).sort()).toEqual(plan.buildSteps.map((s) => s.id).sort());
    for (const t of times) {
      expect(t.inputHash, t.step).toBe(plan.buildSteps.find((s) => s.id === t.step)?.inputHash);
      const op = timedOps().find((o) => o.name === `build-${t.step}`);
      expect(t.seconds, t.step).toBe(
        parseStepMeasurement(third.find((r) => r.op === op)?.result?.stdout ?? "")?.seconds,
      );
    }
    // `pulumi stack output --json`, as synth --measured reads it.
    const file = path.join(out, "outputs.json");
    fs.writeFileSync(file, JSON.stringify({ modelIds: ["gpt2"], [STEP_TIMES_OUTPUT]: exported }));
    lines.length = 0;
    expect(
      main(["--stack", STACK, "--out", path.join(out, "measured"), "--measured", file], io),
      lines.join("\n"),
    ).toBe(0);
    const today = new Date().toISOString().slice(0, 10);
    expect(lines.join("\n")).toMatch(new RegExp(`fetch \\d+(\\.\\d)? min \\(measured on ${today}\\)`));
    const cost = JSON.parse(fs.readFileSync(path.join(out, "measured", "cost.json"), "utf8")) as CostReport;
    for (const s of cost.models[0]?.change.steps.filter((x) => x.id !== COMPILE_HOST_READY) ?? []) {
      expect(s.measuredAt, s.id).toBeDefined();
      expect(s.seconds, s.id).toBe(times.find((t) => t.step === s.id)?.seconds);
    }
    // Every step measured and listed so; the figures outside the build stay assumed.
    expect(lines).toContain(`measured step times: ${times.length} in ${file}`);
    // Only the compile host's boot, which is no remote step, keeps the catalog's figure.
    expect(lines).toContainEqual(
      expect.stringMatching(/^ {2}gpt2: host-ready .*\(measured on .*\); the catalog's figures: compile-host ready$/),
    );
    // With the triton_with_ft pre-pull (dev's fixed GPU nodes) the final pull is the bake's layers only.
    expect(lines.find((l) => l.includes("critical path"))).toMatch(/image pull[^>]* \d+(\.\d)? min \(assumed\)/);
    // Seconds on the test host, not the catalog's hours: the build leaves the first deploy's critical path.
    const plain = JSON.parse(fs.readFileSync(path.join(out, "plain", "cost.json"), "utf8")) as CostReport;
    expect(cost.models[0]?.firstDeploySeconds).toBeLessThan(plain.models[0]?.firstDeploySeconds ?? 0);
  });

  /** The two recipe-layers steps' commands, as the program registers them, and their markers on the host. */
  const layersSteps = () => {
    const ops = timedOps().filter((o) => o.kind === "exec" && /\/(build|pull)-twf-layers\.sh /.test(o.command));
    const markers = ops.map((o) => (o.kind === "exec" ? /measure-step\.sh (\S+\.done) /.exec(o.command)?.[1] : ""));
    return { ops, markers };
  };
  /** The stub registry's files for triton_with_ft's tags that start with `prefix`. */
  const ecrTags = (prefix: string): string[] =>
    fs
      .readdirSync(path.join(server.stubState, "ecr"), { recursive: true, withFileTypes: true })
      .filter((f) => f.isFile() && f.name.startsWith(prefix) && f.parentPath.endsWith("triton_with_ft"))
      .map((f) => path.join(f.parentPath, f.name));

  it("on a live stack (the full triton_with_ft in ECR, no marker) both layers steps skip their work in seconds", async () => {
    const c = await client();
    const { ops, markers } = layersSteps();
    expect(ops).toHaveLength(2);
    // As on a stack that was up before these steps existed: no markers, no layers image, the full image in ECR.
    expect((await exec(c, `rm -f ${markers.join(" ")}`)).code).toBe(0);
    for (const f of ecrTags("twflayers-")) fs.rmSync(f);
    expect(ecrTags("twf-")).toHaveLength(1);
    const callsBefore = stubCalls().length;
    const { results, failed } = await replay(c, ops);
    expect(failed, `${failed?.op.name}: ${failed?.result?.stderr}`).toBeUndefined();
    for (const r of results) {
      expect(r.result?.stdout, r.op.name).toMatch(/^RESULT layers=full-image-in-ecr$/m);
      expect(parseStepMeasurement(r.result?.stdout ?? "")?.seconds, r.op.name).toBeLessThan(10);
    }
    expect(
      stubCalls()
        .slice(callsBefore)
        .filter((l) => /^docker (build|push|pull)/.test(l)),
    ).toEqual([]);
  });

  it("on a first deploy (no full image yet) the layers are pushed under their own tag, then pulled by digest; a re-run skips", async () => {
    const c = await client();
    const { ops, markers } = layersSteps();
    // The compile still running: its image not yet in ECR (put back after), no markers, nothing pulled yet.
    const [full] = ecrTags("twf-");
    if (!full) throw new Error("no full triton_with_ft in the stub registry");
    const fullDigest = fs.readFileSync(full, "utf8");
    fs.rmSync(full);
    fs.rmSync(path.join(server.stubState, "pulled"), { force: true });
    expect((await exec(c, `rm -f ${markers.join(" ")}`)).code).toBe(0);
    try {
      const callsBefore = stubCalls().length;
      const first = await replay(c, ops);
      expect(first.failed, `${first.failed?.op.name}: ${first.failed?.result?.stderr}`).toBeUndefined();
      const [layers, pull] = first.results.map((r) => r.result);
      expect(layers?.stdout).toMatch(/^RESULT layers=pushed$/m);
      const tag = /^RESULT layers_tag=(twflayers-\S+)$/m.exec(layers?.stdout ?? "")?.[1];
      expect(tag).toBeDefined();
      expect(pull?.stdout).toMatch(/^RESULT layers=pulled$/m);
      const calls = stubCalls().slice(callsBefore);
      expect(calls.filter((l) => /^docker (build|push)/.test(l)).map((l) => l.split(" ").at(-1))).toEqual([
        "/opt/triton-ft/tmp/twf-layers-context",
        expect.stringMatching(new RegExp(`/triton_with_ft:${tag}$`)),
      ]);
      const digest = fs.readFileSync(ecrTags("twflayers-")[0] ?? "", "utf8").trim();
      expect(calls.filter((l) => l.startsWith("docker pull"))).toEqual([
        expect.stringMatching(new RegExp(`^docker pull -q \\S+/triton_with_ft@${digest}$`)),
      ]);
      // A re-run skips both on their markers.
      const again = await replay(c, ops);
      for (const r of again.results) expect(r.result?.stderr, r.op.name).toMatch(/skipping/);
    } finally {
      fs.writeFileSync(full, fullDigest);
    }
  });

  it("the HF token reached the fetch step through its environment and was never written to a file or a log", async () => {
    const seen = fs.readFileSync(path.join(server.stubState, "hf-token-in-env"), "utf8").split("\n").filter(Boolean);
    expect(seen.length).toBeGreaterThan(0);
    expect(seen.every((s) => s === "yes")).toBe(true);
    // Every file on the builder, searched on the builder (the token goes on stdin, never in a command).
    const c = await client();
    const r = await exec(c, "grep -rlF -f - /opt/triton-ft 2>/dev/null || true", { stdin: `${HF_SECRET}\n` });
    expect(r.stdout.split("\n").filter(Boolean)).toEqual([]);
    // The logs: sshd's, the stub tools', the user data's, every step's output.
    expect(outputs.length).toBeGreaterThan(0);
    for (const o of outputs) expect(o).not.toContain(HF_SECRET);
    for (const f of ["sshd.log", "stub-calls.log", "user-data.log"]) {
      expect(sshd.readOr(f), f).not.toContain(HF_SECRET);
    }
    const local = (dir: string): string[] =>
      fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
        const p = path.join(dir, e.name);
        return e.isDirectory() ? local(p) : e.isFile() ? [p] : [];
      });
    for (const f of local(server.stubState)) expect(fs.readFileSync(f, "utf8"), f).not.toContain(HF_SECRET);
  });
});
