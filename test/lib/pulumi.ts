/**
 * The one harness for running the Pulumi program under Pulumi's mock runtime in
 * tests: imports the program fresh, runs it through the shared core
 * (infra/mock/runtime.ts, which synth's inventory uses too) with realistic
 * cloud state (./mocks.ts), records resources with secrets unwrapped, and
 * resolves the stack outputs.
 */
import { vi } from "vitest";
import { runUnderMocks, type RecordedOptions } from "../../infra/mock/runtime";
import { CALL_RESULTS, resourceState } from "./mocks";

export interface RecordedResource {
  type: string;
  name: string;
  inputs: Record<string, unknown>;
  state: Record<string, unknown>;
  id: string;
  provider?: string;
  options: RecordedOptions;
}

export interface ProgramRun {
  resources: RecordedResource[];
  /** URNs of every registered resource, as the mock monitor computed them (parent type included), sorted. */
  urns: string[];
  outputs: Record<string, unknown>;
  /** Names of outputs that were secret. */
  secretOutputs: string[];
  byType(type: string): RecordedResource[];
  one(type: string, name?: string): RecordedResource;
}

export interface RunOptions {
  stack?: string;
  /** Secret config keys (without namespace) and their plain values. */
  secrets?: Record<string, string>;
  project?: string;
  /** Run as `pulumi preview` does (pulumi.runtime.isDryRun()). Default: false, an update. */
  preview?: boolean;
}

/**
 * An error raised inside an apply (e.g. a promotion refusal) reaches Node as an unhandled
 * rejection whose reason carries the rejected promise itself (`reason.promise`, rejecting with
 * the reason): a cycle vitest's error serialiser never finishes, so the worker hung after the
 * test. The run already rejects with the error; the cycle is cut here.
 */
process.on("unhandledRejection", (reason) => {
  if (reason instanceof Error && "promise" in reason) delete (reason as Error & { promise?: unknown }).promise;
});

const SECRET_SIG_KEY = "4dabf18193072939515e22adb298388d";
const SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270";

/** Secrets reach the mock wrapped in a signature object; give tests plain values. */
export function unwrapSecrets(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(unwrapSecrets);
  if (value !== null && typeof value === "object") {
    const o = value as Record<string, unknown>;
    // Assets and archives keep their identity: their path/text are promises the SSH suite reads.
    if (o.__pulumiAsset === true || o.__pulumiArchive === true) return value;
    if (o[SECRET_SIG_KEY] === SECRET_SIG) return unwrapSecrets(o.value);
    return Object.fromEntries(Object.entries(o).map(([k, v]) => [k, unwrapSecrets(v)]));
  }
  return value;
}

/** Runs the program under infra/mock/runtime.ts (the one mock-runtime core) with realistic cloud state. */
export async function runProgram(config: Record<string, unknown>, opts: RunOptions = {}): Promise<ProgramRun> {
  return runUnder(async () => (await import("../../infra/program")).program, config, opts);
}

/**
 * Runs components without the program, as pulumi-awsx tests its components:
 * `load` imports the component modules (fresh, after the runtime is reset) and
 * returns the function that constructs them; what that returns is resolved
 * like stack outputs.
 */
export async function runComponents(
  load: () => Promise<() => Record<string, unknown>>,
  opts: RunOptions = {},
): Promise<ProgramRun> {
  return runUnder(load, {}, opts);
}

async function runUnder(
  load: () => Promise<() => unknown>,
  config: Record<string, unknown>,
  opts: RunOptions,
): Promise<ProgramRun> {
  const project = opts.project ?? "triton-ft";
  const stack = opts.stack ?? "test";
  vi.resetModules();
  const pulumi = await import("@pulumi/pulumi");
  const all: Record<string, string> = {};
  for (const [k, v] of Object.entries(config)) all[`${project}:${k}`] = typeof v === "string" ? v : JSON.stringify(v);
  const secretKeys: string[] = [];
  for (const [k, v] of Object.entries(opts.secrets ?? {})) {
    all[`${project}:${k}`] = v;
    secretKeys.push(`${project}:${k}`);
  }
  const resources: RecordedResource[] = [];
  const program = await load();
  const run = await runUnderMocks({
    pulumi,
    program,
    project,
    stack,
    config: all,
    secretKeys,
    preview: opts.preview ?? false,
    // Resource names in the URN-pinning tests follow the engine's rules, which a root stack would break under mocks.
    rootStack: false,
    cloud: {
      newResource(args) {
        const inputs = unwrapSecrets(args.inputs) as Record<string, unknown>;
        const { id, state } = resourceState(args.type, args.name, inputs);
        resources.push({
          type: args.type,
          name: args.name,
          inputs,
          state,
          id: args.id || id,
          provider: args.provider,
          options: args.options,
        });
        return { id: args.id || id, state };
      },
      call(args) {
        const fn = CALL_RESULTS[args.token];
        const inputs = unwrapSecrets(args.inputs) as Record<string, unknown>;
        return fn ? fn(inputs) : inputs;
      },
    },
  });
  const outputs: Record<string, unknown> = {};
  const secretOutputs: string[] = [];
  for (const [k, v] of Object.entries(run.result as Record<string, unknown>)) {
    if (pulumi.Output.isInstance(v)) {
      if (await pulumi.isSecret(v)) secretOutputs.push(k);
      outputs[k] = await new Promise((resolve) => pulumi.unsecret(v).apply(resolve));
    } else {
      outputs[k] = v;
    }
  }
  const monitor = pulumi.runtime.getMonitor() as { getRegisteredResources?: () => Map<string, unknown> } | undefined;
  const urns = [...(monitor?.getRegisteredResources?.().keys() ?? [])].sort();
  return {
    resources,
    urns,
    outputs,
    secretOutputs,
    byType: (type) => resources.filter((r) => r.type === type),
    one(type, name) {
      const found = resources.filter((r) => r.type === type && (name === undefined || r.name === name));
      if (found.length !== 1) {
        throw new Error(
          `expected one ${type}${name ? ` named ${name}` : ""}, found ${found.length}: ${found.map((r) => r.name).join(", ")}`,
        );
      }
      return found[0] as RecordedResource;
    },
  };
}
