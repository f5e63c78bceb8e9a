/**
 * The cloud providers the loopback cannot reach, as plugins of the real
 * engine: `pulumi-resource-<aws|awsx|command|eks|random|tls>` on the suite's PATH
 * (test/engine/plugins/) start this file with the package name. It speaks the
 * provider protocol through @pulumi/pulumi's own provider server, so the engine
 * plans, diffs, creates, refreshes and deletes these resources as it does real
 * ones; what a resource "is" comes from the mock runtime's tables
 * (test/lib/mocks.ts), the same computed outputs the unit suite uses.
 *
 * What it cannot say, and the suite therefore does not claim: which AWS
 * property changes replace a resource (every input change here is an update),
 * and anything AWS would refuse. The remote components (eks Cluster and
 * ManagedNodeGroup, awsx Vpc) are one component each, without the children the
 * real plugins create; the eks Cluster's kubeconfig is the suite's control
 * plane (FAKE_CLOUD_KUBECONFIG), so every Kubernetes object of the created
 * cluster lands on the real API server.
 */
import { createHash, generateKeyPairSync, randomBytes } from "node:crypto";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as pulumi from "@pulumi/pulumi";
import * as provider from "@pulumi/pulumi/provider";
import { CALL_RESULTS, resourceState } from "../lib/mocks";

type Props = Record<string, unknown>;

/** The inputs a resource was created or updated with, kept in its state so diff compares inputs with inputs. */
const INPUTS = "__fakeCloudInputs";

/** The signature key of a special value (secret, asset, archive) in the provider protocol. */
const SIG = "4dabf18193072939515e22adb298388d";
const ASSET_SIGS = new Set(["c44067f5952c0a294b673a41bacd8c17", "0def7320c3a5731c473e5ecbe6d01bc7"]);

/**
 * Inputs with every asset and archive as the engine's hash of its contents: create gets an asset with
 * its contents and hash, diff with the hash alone (command:remote:CopyToRemote's source).
 */
function plain(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(plain);
  if (v === null || typeof v !== "object") return v;
  const o = v as Props;
  if (ASSET_SIGS.has(String(o[SIG])) && typeof o.hash === "string") return { [SIG]: o[SIG], hash: o.hash };
  return Object.fromEntries(Object.entries(o).map(([k, x]) => [k, plain(x)]));
}

function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(",")}]`;
  if (v !== null && typeof v === "object")
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((v as Props)[k])}`)
      .join(",")}}`;
  return JSON.stringify(v) ?? "null";
}

function typeOf(urn: string): string {
  return urn.split("::")[2]?.split("$").at(-1) ?? urn;
}

function nameOf(urn: string): string {
  return urn.split("::").at(-1) ?? urn;
}

/** Real key material for the tls resources the in-cluster store uses (openssl signs the certificates). */
function tlsState(type: string, inputs: Props): Props {
  if (type === "tls:index/privateKey:PrivateKey") {
    const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
    return {
      privateKeyPem: privateKey.export({ type: "pkcs8", format: "pem" }),
      publicKeyPem: publicKey.export({ type: "spki", format: "pem" }),
    };
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "fake-tls-"));
  try {
    const file = (name: string, text: unknown) => {
      const f = path.join(dir, name);
      fs.writeFileSync(f, unwrap(text) as string);
      return f;
    };
    const subject = (inputs.subject as { commonName?: string } | undefined)?.commonName ?? "triton-ft";
    const openssl = (args: string[]) => execFileSync("openssl", args, { encoding: "utf8" });
    if (type === "tls:index/selfSignedCert:SelfSignedCert") {
      const key = file("ca.key", inputs.privateKeyPem);
      return { certPem: openssl(["req", "-x509", "-new", "-key", key, "-subj", `/CN=${subject}`, "-days", "1825"]) };
    }
    if (type === "tls:index/certRequest:CertRequest") {
      const key = file("server.key", inputs.privateKeyPem);
      return { certRequestPem: openssl(["req", "-new", "-key", key, "-subj", `/CN=${subject}`]) };
    }
    if (type === "tls:index/locallySignedCert:LocallySignedCert") {
      const csr = file("server.csr", inputs.certRequestPem);
      const caKey = file("ca.key", inputs.caPrivateKeyPem);
      const ca = file("ca.crt", inputs.caCertPem);
      return { certPem: openssl(["x509", "-req", "-in", csr, "-CA", ca, "-CAkey", caKey, "-days", "1825"]) };
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  return {};
}

/** A secret input arrives as its wrapped form; the key material inside is what openssl needs. */
function unwrap(v: unknown): unknown {
  if (v !== null && typeof v === "object" && "value" in v && "4dabf18193072939515e22adb298388d" in v)
    return (v as { value: unknown }).value;
  return v;
}

function outputsOf(urn: string, inputs: Props): { id: string; outs: Props } {
  const type = typeOf(urn);
  const name = nameOf(urn);
  const { id, state } = resourceState(type, name, inputs);
  let extra: Props = {};
  if (type === "random:index/randomPassword:RandomPassword") {
    const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    const length = Number(inputs.length ?? 16);
    extra = { result: Array.from(randomBytes(length), (b) => alphabet[b % alphabet.length]).join("") };
  } else if (type.startsWith("tls:")) {
    extra = tlsState(type, inputs);
  } else if (!("name" in state)) {
    // Names AWS would generate (a queue's, a rule's): the resource's name with a suffix, as Pulumi's auto-naming does.
    extra = { name: `${name}-${createHash("sha256").update(urn).digest("hex").slice(0, 7)}` };
  }
  if (type === "aws:sqs/queue:Queue")
    extra.url = `https://sqs.us-east-1.amazonaws.com/123456789012/${String(state.name ?? extra.name)}`;
  return { id, outs: { ...state, ...extra, [INPUTS]: canonical(plain(inputs)) } };
}

function kubeconfig(): string {
  const file = process.env.FAKE_CLOUD_KUBECONFIG;
  if (!file)
    throw new Error("FAKE_CLOUD_KUBECONFIG is not set: the fake eks plugin hands out the suite's control plane");
  return fs.readFileSync(file, "utf8");
}

/** The component a remote component's plugin registers, its outputs given at once. */
class Constructed extends pulumi.ComponentResource {
  constructor(type: string, name: string, state: Props, options: pulumi.ComponentResourceOptions) {
    super(type, name, {}, options);
    this.registerOutputs(state);
  }
}

/** An AWS resource registered from inside a remote component, as its real plugin registers its children. */
class Child extends pulumi.CustomResource {
  constructor(type: string, name: string, props: pulumi.Inputs, options: pulumi.CustomResourceOptions) {
    super(type, name, props, options);
  }
}

/**
 * The one AWS resource each remote component stands for, with the component's
 * inputs that shape it: so a changed input (a node group's size, the VPC's
 * layout) is an update the engine plans, as the real plugin's child would be.
 * Inputs that are other resources (the node group's cluster) are left out.
 */
const CHILD: Record<string, { type: string; suffix: string; keys?: readonly string[] }> = {
  "eks:index:Cluster": {
    type: "aws:eks/cluster:Cluster",
    suffix: "-eksCluster",
    keys: [
      "version",
      "vpcId",
      "publicSubnetIds",
      "privateSubnetIds",
      "endpointPrivateAccess",
      "endpointPublicAccess",
      "publicAccessCidrs",
      "enabledClusterLogTypes",
      "encryptionConfigKeyArn",
      "authenticationMode",
      "vpcCniOptions",
      "tags",
    ],
  },
  "eks:index:ManagedNodeGroup": {
    type: "aws:eks/nodeGroup:NodeGroup",
    suffix: "",
    keys: [
      "nodeRoleArn",
      "amiType",
      "instanceTypes",
      "capacityType",
      "launchTemplate",
      "subnetIds",
      "scalingConfig",
      "taints",
      "labels",
      "tags",
    ],
  },
  "awsx:ec2:Vpc": { type: "aws:ec2/vpc:Vpc", suffix: "" },
};

/** A remote component, constructed as one component and the AWS resource it stands for. */
async function construct(
  name: string,
  type: string,
  inputs: pulumi.Inputs,
  options: pulumi.ComponentResourceOptions,
): Promise<provider.ConstructResult> {
  const { state } = resourceState(type, name, {});
  if (type === "eks:index:Cluster") state.kubeconfigJson = pulumi.secret(kubeconfig());
  const component = new Constructed(type, name, state, options);
  const child = CHILD[type];
  if (child) {
    const keys = child.keys ?? Object.keys(inputs);
    const props = Object.fromEntries(keys.flatMap((k) => (inputs[k] === undefined ? [] : [[k, inputs[k]]])));
    // The aws package's version, as the program's own AWS resources ask for it: one default aws provider.
    new Child(child.type, `${name}${child.suffix}`, props, { parent: component, version: packageVersion("aws") });
  }
  return { urn: component.urn, state };
}

export function fakeCloud(pkg: string, version: string): provider.Provider {
  return {
    version,
    async diff(_id, _urn, olds: Props, news: Props) {
      const changed = olds[INPUTS] !== canonical(plain(news));
      return { changes: changed };
    },
    async create(urn, inputs: Props) {
      return outputsOf(urn, inputs);
    },
    async update(_id, urn, olds: Props, news: Props) {
      // Generated material (a password, a key, a certificate) stays what it was, as its provider keeps it.
      if (typeOf(urn).startsWith("random:") || typeOf(urn).startsWith("tls:"))
        return { outs: { ...olds, ...news, [INPUTS]: canonical(plain(news)) } };
      return { outs: outputsOf(urn, news).outs };
    },
    async read(id, _urn, props: Props) {
      return { id, props };
    },
    async delete() {},
    async invoke(token: string, inputs: Props) {
      const fn = CALL_RESULTS[token];
      if (!fn) throw new Error(`the fake ${pkg} plugin has no result for ${token}`);
      return { outputs: fn(inputs) };
    },
    construct,
  };
}

/** The version of an installed @pulumi/<pkg> SDK: the plugin version the program's resources ask for. */
function packageVersion(pkg: string): string {
  const file = path.join(__dirname, "../../node_modules/@pulumi", pkg, "package.json");
  return (JSON.parse(fs.readFileSync(file, "utf8")) as { version: string }).version;
}

if (require.main === module) {
  const [pkg, ...args] = process.argv.slice(2);
  if (!pkg) throw new Error("usage: fakeCloud.ts <package> <engine address>");
  void provider.main(fakeCloud(pkg, packageVersion(pkg)), args);
}
