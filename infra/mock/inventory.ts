/**
 * Builds the offline inventory of a stack: runs the Pulumi program under the
 * mock runtime in preview mode and records what it registers.
 *
 * Nothing the cloud computes is invented: resources get no computed state, so
 * every input that depends on one (ids, ARNs, the server image digest) stays
 * unknown, exactly as `pulumi preview` shows it. Provider functions (data
 * sources) answer with unknown values too, except the region and partition,
 * which the stack's `aws:region` determines. The field names of those answers
 * come from the caller's `invokeShapes` (synth passes the unit tests' mock
 * cloud, test/lib/mocks.ts), so a new data source needs one entry there (for
 * the unit tests anyway) and nothing here.
 */
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { parse } from "yaml";
import {
  INVENTORY_FORMAT,
  SECRET_MARK,
  UNKNOWN_MARK,
  normalizeValue,
  sortResources,
  type Inventory,
  type InventoryResource,
  type InventoryValue,
  type MaskCounts,
  type Reference,
  type ValueKinds,
} from "../synth/inventory";
import { treeHash, type TreeEntry } from "../repoFiles";
import { ROOT_STACK_TYPE, runUnderMocks, type MockCloud, type PulumiSdk, type Registration } from "./runtime";

export interface InventoryRunOptions {
  /** A freshly loaded `@pulumi/pulumi` (its runtime state is process-global). */
  pulumi: PulumiSdk;
  program: () => unknown;
  project: string;
  stack: string;
  /** Full config keys (`<namespace>:<key>`) to values: strings, or objects/arrays (sent as JSON). */
  config: Record<string, unknown>;
  /** Full config keys whose values are secret (their values are masked wherever they flow). */
  secretKeys: string[];
  /** Repository root: asset and archive paths are recorded relative to it, with a content hash. */
  repoRoot: string;
  /** Per provider function token, a sample result: its field names become unknown values. */
  invokeShapes: Record<string, (inputs: Record<string, unknown>) => Record<string, unknown>>;
  /** A cloud answering with stand-in values, for the reference run that fingerprints unknowns (see above). */
  reference?: MockCloud;
}

export interface EngineConfig {
  config: Record<string, unknown>;
  secretKeys: string[];
}

/**
 * The config the Pulumi engine would hand the program for a stack file: every
 * namespace, objects as they are. A `secure:` value cannot be decrypted here, so
 * the program sees `standIn(key, ciphertext)` in its place (shaped like the real value where
 * the program parses it; masked in the inventory like any secret); secret keys
 * stored in plain text (a mistake synth warns about) keep their value but are
 * passed as secrets, as `pulumi config set --secret` would have made them.
 */
export function engineConfig(
  stackFileText: string,
  secretKeys: readonly string[],
  standIn: (key: string, ciphertext: string) => string = () => SECRET_MARK,
): EngineConfig {
  const doc = parse(stackFileText) as { config?: Record<string, unknown> } | null;
  const config: Record<string, unknown> = {};
  const secrets: string[] = [];
  for (const [key, value] of Object.entries(doc?.config ?? {})) {
    const secure = value !== null && typeof value === "object" && !Array.isArray(value) && "secure" in value;
    config[key] = secure ? standIn(key, String((value as { secure: unknown }).secure)) : value;
    if (secure || secretKeys.includes(key)) secrets.push(key);
  }
  return { config, secretKeys: secrets };
}

/** The values of a provider function that are known before anything is deployed. */
function offlineAnswer(token: string, region: string | undefined): Record<string, unknown> | undefined {
  if (!region) return undefined;
  const partition = region.startsWith("cn-") ? "aws-cn" : region.startsWith("us-gov-") ? "aws-us-gov" : "aws";
  const suffix = partition === "aws-cn" ? "amazonaws.com.cn" : "amazonaws.com";
  if (token === "aws:index/getRegion:getRegion") return { name: region, region, id: region };
  if (token === "aws:index/getPartition:getPartition") return { partition, dnsSuffix: suffix, id: partition };
  return undefined;
}

/**
 * Every file of a folder archive (the shipped trees are staged copies holding
 * exactly the tracked files, infra/repoFiles.ts stageTree), hashed with the
 * same function as the step hashes' folder hash: a tree's inventory hash
 * equals its hash in plan.json.
 */
export function hashDirectory(dir: string): { files: number; sha256: string } {
  const entries: TreeEntry[] = [];
  const walk = (rel: string) => {
    for (const entry of fs.readdirSync(path.join(dir, rel), { withFileTypes: true })) {
      const child = rel ? `${rel}/${entry.name}` : entry.name;
      if (entry.isDirectory()) walk(child);
      else if (entry.isFile()) entries.push([child, sha256(fs.readFileSync(path.join(dir, child)))]);
    }
  };
  walk("");
  return { files: entries.length, sha256: treeHash(entries) };
}

function sha256(text: string | Buffer): string {
  return createHash("sha256").update(text).digest("hex");
}

function valueKinds(pulumi: PulumiSdk, repoRoot: string): ValueKinds {
  const sigKey = pulumi.runtime.specialSigKey;
  const secretSig = pulumi.runtime.specialSecretSig;
  const rel = (p: string) => {
    const abs = path.resolve(repoRoot, p);
    const r = path.relative(repoRoot, abs);
    return { abs, shown: r.startsWith("..") ? p : r.split(path.sep).join("/") };
  };
  const describeFile = (p: string, kind: "asset" | "archive"): InventoryValue => {
    const { abs, shown } = rel(p);
    if (!fs.existsSync(abs)) return { [kind]: "file", path: shown, missing: true };
    if (fs.statSync(abs).isDirectory()) return { [kind]: "directory", path: shown, ...hashDirectory(abs) };
    const content = fs.readFileSync(abs);
    return { [kind]: "file", path: shown, bytes: content.length, sha256: sha256(content) };
  };
  const kinds: ValueKinds = {
    isUnknown: (v) => pulumi.isUnknown(v),
    output(v) {
      if (!pulumi.Output.isInstance(v)) return undefined;
      const o = v as unknown as { isKnown: Promise<boolean>; isSecret: Promise<boolean>; promise(): Promise<unknown> };
      return Promise.all([o.isKnown, o.isSecret]).then(async ([known, secret]) => ({
        known,
        secret,
        value: known ? await o.promise() : undefined,
      }));
    },
    secret(v) {
      if (v !== null && typeof v === "object" && (v as Record<string, unknown>)[sigKey] === secretSig)
        return { value: (v as { value?: unknown }).value };
      return undefined;
    },
    resourceRef(v) {
      if (!pulumi.Resource.isInstance(v)) return undefined;
      const r = v as unknown as { __pulumiType?: string; __name?: string };
      return `${r.__pulumiType ?? "?"}::${r.__name ?? "?"}`;
    },
    asset(v) {
      const a = pulumi.asset;
      if (v instanceof a.StringAsset)
        return v.text.then((t) => ({ asset: "text", bytes: Buffer.byteLength(t), sha256: sha256(t) }));
      if (v instanceof a.FileAsset) return v.path.then((p) => describeFile(p, "asset"));
      if (v instanceof a.RemoteAsset) return v.uri.then((u) => ({ asset: "remote", uri: u }));
      if (v instanceof a.FileArchive) return v.path.then((p) => describeFile(p, "archive"));
      if (v instanceof a.RemoteArchive) return v.uri.then((u) => ({ archive: "remote", uri: u }));
      if (v instanceof a.AssetArchive)
        return v.assets.then(async (assets) => {
          const out: Record<string, InventoryValue> = {};
          for (const key of Object.keys(assets).sort())
            out[key] = await normalizeValue(assets[key], kinds, { secrets: 0, unknowns: 0 });
          return { archive: "assets", assets: out };
        });
      return undefined;
    },
  };
  return kinds;
}

function kindOf(type: string, custom: boolean, project: string): InventoryResource["kind"] {
  if (type.startsWith("pulumi:providers:")) return "provider";
  if (custom) return "custom";
  // This program's components are local; any other package's (awsx, eks) are remote under the mock monitor.
  return type.startsWith(`${project}:`) ? "component" : "remote-component";
}

/** `<type>::<name>` of a provider reference `<urn>::<id>`; URNs end in `::<qualified type>::<name>`. */
function providerLabel(ref: string | undefined): string | undefined {
  if (!ref) return undefined;
  const urn = ref.slice(0, ref.lastIndexOf("::"));
  const parts = urn.split("::");
  const name = parts[parts.length - 1];
  const type = parts[parts.length - 2]?.split("$").pop();
  return type && name ? `${type}::${name}` : ref;
}

/** Runs the program offline and returns its inventory; throws what the program throws (config problems). */
export async function buildInventory(opts: InventoryRunOptions): Promise<Inventory> {
  const { pulumi } = opts;
  const config: Record<string, string> = {};
  for (const [k, v] of Object.entries(opts.config)) config[k] = typeof v === "string" ? v : JSON.stringify(v);
  const region = typeof opts.config["aws:region"] === "string" ? (opts.config["aws:region"] as string) : undefined;
  const lookups = new Set<string>();

  const run = await runUnderMocks({
    pulumi,
    program: opts.program,
    project: opts.project,
    stack: opts.stack,
    config,
    secretKeys: opts.secretKeys,
    preview: true,
    cloud: {
      // No computed state: everything the cloud would return stays unknown.
      newResource: () => ({ state: {} }),
      call({ token, inputs }) {
        const known = offlineAnswer(token, region);
        if (known) return known;
        lookups.add(token);
        const shape = opts.invokeShapes[token];
        if (!shape) return inputs;
        return Object.fromEntries(Object.keys(shape(inputs)).map((k) => [k, pulumi.runtime.unknownValue]));
      },
    },
  });

  const kinds = valueKinds(pulumi, opts.repoRoot);
  const reference = opts.reference ? await referenceRun(opts, config, opts.reference, kinds) : undefined;
  const counts: MaskCounts = { secrets: 0, unknowns: 0 };
  const resources: InventoryResource[] = [];
  for (const r of run.registrations) {
    if (r.type === ROOT_STACK_TYPE) continue;
    const inputs = (await normalizeValue(r.inputs, kinds, counts, {
      reference: reference?.inputs.get(registrationKey(r)),
    })) as Record<string, InventoryValue>;
    const entry: InventoryResource = {
      type: r.type,
      name: r.name,
      parent: r.parent ?? null,
      kind: kindOf(r.type, r.custom, opts.project),
      inputs,
    };
    const provider = providerLabel(r.provider);
    if (provider) entry.provider = provider;
    resources.push(entry);
  }
  const outputs: Record<string, InventoryValue> = {};
  if (run.result !== null && typeof run.result === "object") {
    for (const key of Object.keys(run.result).sort()) {
      const v = (run.result as Record<string, unknown>)[key];
      if (v !== undefined)
        outputs[key] = await normalizeValue(v, kinds, counts, { reference: reference?.outputs.get(key) });
    }
  }
  return {
    format: INVENTORY_FORMAT,
    project: opts.project,
    stack: opts.stack,
    source: "npm run synth: the Pulumi program run under Pulumi's mock runtime in preview mode; no cloud calls",
    legend: {
      [UNKNOWN_MARK]:
        "computed by the cloud at deploy time (ids, ARNs, image digests); pulumi preview shows it as output<T>; [unknown:<fingerprint>] changes when what it is computed from in this repository and stack file does",
      [SECRET_MARK]:
        "a secret value, masked; [secret:<fingerprint>] changes when the value does (a structured secret keeps its keys)",
      "remote-component": "expanded by its provider at deploy time (awsx, eks): the resources inside are not listed",
      $resource: "a reference to another resource of this inventory (<type>::<name>)",
    },
    lookups: [...lookups].sort(),
    resources: sortResources(resources),
    outputs,
  };
}

/** A registration's identity across the two runs: Pulumi's URN is unique on parent, type and name. */
function registrationKey(r: Registration): string {
  return `${r.parent ?? ""}|${r.type}::${r.name}`;
}

interface ReferenceValues {
  inputs: Map<string, Reference>;
  outputs: Map<string, Reference>;
}

/**
 * The program deployed against `cloud`: every input and output as plain
 * values (secrets unwrapped: they are only fingerprinted, never written).
 */
async function referenceRun(
  opts: InventoryRunOptions,
  config: Record<string, string>,
  cloud: MockCloud,
  kinds: ValueKinds,
): Promise<ReferenceValues> {
  const run = await quietly(() =>
    runUnderMocks({
      pulumi: opts.pulumi,
      program: opts.program,
      project: opts.project,
      stack: opts.stack,
      config,
      secretKeys: opts.secretKeys,
      preview: false,
      cloud,
    }),
  );
  const ignore: MaskCounts = { secrets: 0, unknowns: 0 };
  const inputs = new Map<string, Reference>();
  for (const r of run.registrations)
    inputs.set(registrationKey(r), { value: await normalizeValue(r.inputs, kinds, ignore, { reveal: true }) });
  const outputs = new Map<string, Reference>();
  if (run.result !== null && typeof run.result === "object")
    for (const [key, v] of Object.entries(run.result))
      if (v !== undefined) outputs.set(key, { value: await normalizeValue(v, kinds, ignore, { reveal: true }) });
  return { inputs, outputs };
}

/**
 * Runs `fn` with the console silent: without an engine the SDK prints the
 * program's log lines (warnings, the cost summary) to the console, and the
 * first run has printed them already.
 */
async function quietly<T>(fn: () => Promise<T>): Promise<T> {
  const saved = { log: console.log, error: console.error, warn: console.warn };
  const mute = () => undefined;
  Object.assign(console, { log: mute, error: mute, warn: mute });
  try {
    return await fn();
  } finally {
    Object.assign(console, saved);
  }
}
