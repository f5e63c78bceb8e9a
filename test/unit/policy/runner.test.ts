/**
 * The pack as the Pulumi CLI runs it: Pulumi's own policy-pack runner
 * (@pulumi/pulumi/cmd/run-policy-pack, what `pulumi preview --policy-pack
 * policy` starts through the nodejs analyzer plugin) loads policy/ with its
 * type-checking ts-node, serves the Analyzer gRPC service, and this test plays
 * the engine: GetAnalyzerInfo, Analyze and AnalyzeStack over the wire.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createRequire } from "node:module";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type * as grpcTypes from "@grpc/grpc-js";
import type * as analyzerPb from "@pulumi/pulumi/proto/analyzer_pb";
import type * as analyzerGrpc from "@pulumi/pulumi/proto/analyzer_grpc_pb";
import { allRules } from "../../../policy/rules";
import { ROOT } from "./stacks";

const POLICY_DIR = path.join(ROOT, "policy");
const pulumiDir = path.dirname(require.resolve("@pulumi/pulumi/package.json"));
// The generated stubs load @grpc/grpc-js and google-protobuf from @pulumi/pulumi's own dependencies: use the same copies.
const req = createRequire(path.join(pulumiDir, "package.json"));
const grpc = req("@grpc/grpc-js") as typeof grpcTypes;
const pb = req("./proto/analyzer_pb") as typeof analyzerPb;
const rpc = req("./proto/analyzer_grpc_pb") as typeof analyzerGrpc;
const structPb = req("google-protobuf/google/protobuf/struct_pb") as {
  Struct: { fromJavaScript(o: Record<string, unknown>): unknown };
};
const emptyPb = req("google-protobuf/google/protobuf/empty_pb") as { Empty: new () => unknown };

let child: ChildProcess;
let client: analyzerGrpc.AnalyzerClient;
let stderr = "";

type Callback<Res> = (err: grpcTypes.ServiceError | null, res: Res) => void;

/** Promisified unary calls (the stubs are callback-style). */
function unary<Res>(invoke: (cb: Callback<Res>) => unknown): Promise<Res> {
  return new Promise((resolve, reject) => invoke((err, res) => (err ? reject(err) : resolve(res))));
}

const urn = (type: string, name: string) => `urn:pulumi:dev::triton-ft::${type}::${name}`;

function analyzeRequest(type: string, name: string, props: Record<string, unknown>): analyzerPb.AnalyzeRequest {
  const r = new pb.AnalyzeRequest();
  r.setType(type);
  r.setName(name);
  r.setUrn(urn(type, name));
  r.setProperties(structPb.Struct.fromJavaScript(props) as never);
  r.setOptions(new pb.AnalyzerResourceOptions());
  return r;
}

beforeAll(async () => {
  const runner = path.join(pulumiDir, "cmd/run-policy-pack");
  // <engine-address> <program>: no engine listens here; the pack only logs through it on errors.
  child = spawn(process.execPath, [runner, "127.0.0.1:1", POLICY_DIR], {
    cwd: POLICY_DIR,
    stdio: ["ignore", "pipe", "pipe"],
  });
  child.stderr?.on("data", (d: Buffer) => (stderr += d.toString()));
  const port = await new Promise<string>((resolve, reject) => {
    let out = "";
    const timer = setTimeout(() => reject(new Error(`policy pack did not start in 120 s:\n${stderr}`)), 120_000);
    child.stdout?.on("data", (d: Buffer) => {
      out += d.toString();
      const m = /^(\d+)\s*$/m.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    child.on("exit", (code) => reject(new Error(`policy pack exited ${code}:\n${stderr}`)));
  });
  client = new rpc.AnalyzerClient(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
}, 150_000);

afterAll(() => {
  client?.close();
  if (child?.pid && child.exitCode === null) child.kill("SIGTERM");
});

describe("policy pack under Pulumi's policy-pack runner", () => {
  it("serves every rule of the pack, all mandatory", async () => {
    const info = await unary<analyzerPb.AnalyzerInfo>((cb) => client.getAnalyzerInfo(new emptyPb.Empty() as never, cb));
    expect(info.getName()).toBe("triton-ft-security");
    const policies = info.getPoliciesList();
    expect(policies.map((p) => p.getName()).sort()).toEqual(
      allRules()
        .map((r) => r.name)
        .sort(),
    );
    for (const p of policies) expect(p.getEnforcementlevel(), p.getName()).toBe(pb.EnforcementLevel.MANDATORY);
  });

  it("reports a violation on a resource, naming it and the fix", async () => {
    const res = await unary<analyzerPb.AnalyzeResponse>((cb) =>
      client.analyze(
        analyzeRequest("aws:ecr/repository:Repository", "server", {
          imageTagMutability: "MUTABLE",
          imageScanningConfiguration: { scanOnPush: true },
          encryptionConfigurations: [{ encryptionType: "KMS" }],
        }),
        cb,
      ),
    );
    const d = res.getDiagnosticsList();
    expect(d.map((x) => x.getPolicyname())).toEqual(["ecr-repository-hardened"]);
    expect(d[0].getMessage()).toMatch(/ECR repository 'server' has mutable tags.*Fix: set imageTagMutability/);
    expect(d[0].getEnforcementlevel()).toBe(pb.EnforcementLevel.MANDATORY);
  });

  it("accepts a compliant resource", async () => {
    const res = await unary<analyzerPb.AnalyzeResponse>((cb) =>
      client.analyze(
        analyzeRequest("aws:ec2/instance:Instance", "builder", {
          metadataOptions: { httpTokens: "required", httpPutResponseHopLimit: 1 },
          rootBlockDevice: { encrypted: true },
        }),
        cb,
      ),
    );
    expect(res.getDiagnosticsList().map((x) => x.getMessage())).toEqual([]);
  });

  it("skips only the rule that needs a value unknown at preview", async () => {
    // The engine's marker for a value not known until the resource it depends on exists.
    const UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9";
    const res = await unary<analyzerPb.AnalyzeResponse>((cb) =>
      client.analyze(
        analyzeRequest("eks:index:Cluster", "cluster", {
          endpointPublicAccess: true,
          publicAccessCidrs: ["198.51.100.7/32"],
          enabledClusterLogTypes: ["api", "audit", "authenticator"],
          vpcCniOptions: { enableNetworkPolicy: true },
          encryptionConfigKeyArn: UNKNOWN,
        }),
        cb,
      ),
    );
    const d = res.getDiagnosticsList();
    expect(d.map((x) => x.getPolicyname())).toEqual(["eks-secrets-encryption"]);
    expect(d[0].getMessage()).toMatch(/can't run .* during preview/);
    expect(d[0].getEnforcementlevel()).toBe(pb.EnforcementLevel.ADVISORY);
  });

  it("runs the stack rules over all resources and points at the offending one", async () => {
    const resource = (type: string, name: string, props: Record<string, unknown>) => {
      const r = new pb.AnalyzerResource();
      r.setType(type);
      r.setName(name);
      r.setUrn(urn(type, name));
      r.setProperties(structPb.Struct.fromJavaScript(props) as never);
      // The engine always sends resource options; @pulumi/policy refuses a request without them.
      r.setOptions(new pb.AnalyzerResourceOptions());
      return r;
    };
    const req2 = new pb.AnalyzeStackRequest();
    req2.setResourcesList([
      resource("kubernetes:apps/v1:Deployment", "triton", {
        metadata: { name: "triton", namespace: "triton" },
        spec: { template: { spec: { containers: [{ name: "c", image: "x" }] } } },
      }),
      resource("aws:ecr/repository:Repository", "server", { name: "p/server" }),
    ]);
    const res = await unary<analyzerPb.AnalyzeResponse>((cb) => client.analyzeStack(req2, cb));
    const byPolicy = Object.fromEntries(res.getDiagnosticsList().map((x) => [x.getPolicyname(), x]));
    expect(Object.keys(byPolicy).sort()).toEqual(["ecr-lifecycle-policy", "k8s-network-policy-default-deny"]);
    expect(byPolicy["k8s-network-policy-default-deny"].getUrn()).toBe(urn("kubernetes:apps/v1:Deployment", "triton"));
    expect(byPolicy["ecr-lifecycle-policy"].getMessage()).toMatch(/'server' \(p\/server\) has no lifecycle policy/);
  });
});
