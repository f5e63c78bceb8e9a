/**
 * Runs a Pulumi program function under Pulumi's mock runtime and records every
 * resource it registers: type, name, parent, provider, inputs (secrets still
 * wrapped, unknowns still unknown) and resource options, all as the engine
 * would receive them.
 *
 * One core for both users: the unit-test harness (test/lib/pulumi.ts, deploy
 * mode with realistic cloud state) and `npm run synth`'s offline inventory
 * (preview mode, nothing known that the cloud would compute). The program runs
 * inside a root `pulumi:pulumi:Stack`, as under the Pulumi CLI, so a stack
 * transformation can see each resource's parent.
 *
 * Options are read off the registration request itself (./options.ts): the
 * mock's `newResource` arguments leave them out, and resource transforms are
 * no way in (the mock runtime of @pulumi/pulumi 3.248 refuses to register one;
 * later versions register it but never run it).
 *
 * `@pulumi/pulumi` is passed in rather than imported: its runtime state is
 * process-global, and tests hand in a freshly loaded copy for every run.
 */
import type * as pulumiSdk from "@pulumi/pulumi";
import { recordOptions, type RecordedOptions } from "./options";

export type { RecordedOptions } from "./options";

export type PulumiSdk = typeof pulumiSdk;
type State = Record<string, unknown>;

export interface Registration {
  type: string;
  name: string;
  /** `<type>::<name>` of the parent resource; undefined for children of the root stack. */
  parent?: string;
  custom: boolean;
  /** Provider reference (`<urn>::<id>`) when one was given explicitly or inherited. */
  provider?: string;
  /** As the mock monitor deserialised them: secrets wrapped in the secret signature, unknowns as `Unknown`. */
  inputs: State;
  /** Resource options as the registration request carried them. */
  options: RecordedOptions;
}

export interface MockCloud {
  /** Computed state for a new resource; return only the inputs (or nothing) to leave outputs unknown in preview. */
  newResource(args: {
    type: string;
    name: string;
    inputs: State;
    id?: string;
    provider?: string;
    options: RecordedOptions;
  }): {
    id?: string;
    state: State;
  };
  /** Result of a provider function (data source) call. */
  call(args: { token: string; inputs: State }): State;
}

export interface MockRunOptions {
  pulumi: PulumiSdk;
  /** The composition root; its return value becomes the stack outputs. */
  program: () => unknown;
  project: string;
  stack: string;
  /** Full config keys (`<namespace>:<key>`) to string values, as the engine passes them. */
  config: Record<string, string>;
  /** Full config keys whose values are secret. */
  secretKeys?: string[];
  /** true: `pulumi preview` semantics (values the cloud computes stay unknown). */
  preview: boolean;
  /**
   * Run inside a root `pulumi:pulumi:Stack`, as the CLI does, which is what lets
   * parents be recorded (default true). The mock monitor then names children of
   * the root with a `pulumi:pulumi:Stack$` prefix the real engine leaves out, so
   * callers that compare URNs run without it (and get no parents).
   */
  rootStack?: boolean;
  cloud: MockCloud;
}

export interface MockRun {
  /** Every registered resource except the root stack, in registration order. */
  registrations: Registration[];
  /** What `program()` returned, untouched (Outputs stay Outputs). */
  result: unknown;
}

/** The root stack resource's type token; never part of the recorded registrations. */
export const ROOT_STACK_TYPE = "pulumi:pulumi:Stack";
/** The organization name under mocks: a DIY backend's, which has no organizations. */
export const MOCK_ORGANIZATION = "organization";

/** `waitForRPCs` is exported by the runtime but not typed: it settles every pending registration. */
async function waitForRPCs(runtime: object): Promise<void> {
  const fn = (runtime as { waitForRPCs?: () => Promise<void> }).waitForRPCs;
  if (fn) await fn();
}

/** A resource object's type and name, read from the SDK's own bookkeeping fields. */
function describe(resource: object | undefined): string | undefined {
  if (!resource) return undefined;
  const r = resource as { __pulumiType?: string; __name?: string };
  return r.__pulumiType && r.__name !== undefined ? `${r.__pulumiType}::${r.__name}` : undefined;
}

export async function runUnderMocks(opts: MockRunOptions): Promise<MockRun> {
  const { pulumi } = opts;
  const registrations: Registration[] = [];
  // Parents are known when a resource is constructed (the transformation below);
  // inputs when it is registered (the mock monitor). Join them on type and name,
  // first come first served for the rare duplicate under different parents.
  const parents = new Map<string, (string | undefined)[]>();

  await pulumi.runtime.setMocks(
    {
      newResource(args) {
        const options = takeOptions(args.type, args.name);
        const result = opts.cloud.newResource({
          type: args.type,
          name: args.name,
          inputs: args.inputs as State,
          id: args.id,
          provider: args.provider || undefined,
          options,
        });
        if (args.type !== ROOT_STACK_TYPE) {
          const queue = parents.get(`${args.type}::${args.name}`);
          registrations.push({
            type: args.type,
            name: args.name,
            parent: queue?.shift(),
            custom: args.custom ?? true,
            provider: args.provider || undefined,
            inputs: args.inputs as State,
            options,
          });
        }
        return { id: result.id ?? (opts.preview ? "" : `${args.name}-id`), state: result.state };
      },
      call(args) {
        return opts.cloud.call({ token: args.token, inputs: args.inputs as State });
      },
    },
    opts.project,
    opts.stack,
    opts.preview,
    // The organization a DIY backend (pulumi login file://…) reports: a stack's reference to itself names it.
    MOCK_ORGANIZATION,
  );
  // Installed on this run's monitor, so it goes with it on the next setMocks.
  const takeOptions = recordOptions(pulumi.runtime.getMonitor());
  pulumi.runtime.setAllConfig(opts.config, opts.secretKeys ?? []);

  let result: unknown;
  try {
    if (opts.rootStack ?? true) {
      // As the CLI's language host does: the program runs inside the root stack resource.
      await pulumi.runtime.runInPulumiStack(async () => {
        pulumi.runtime.registerStackTransformation((args) => {
          const key = `${args.type}::${args.name}`;
          const queue = parents.get(key) ?? [];
          const parent = describe(args.opts.parent);
          queue.push(parent && !parent.startsWith(`${ROOT_STACK_TYPE}::`) ? parent : undefined);
          parents.set(key, queue);
          return undefined;
        });
        result = opts.program();
        return result;
      });
    } else {
      result = opts.program();
    }
    await waitForRPCs(pulumi.runtime);
  } catch (err) {
    // A program that fails after registering resources leaves RPCs in flight;
    // let them settle against this run's mocks, not the next run's.
    await waitForRPCs(pulumi.runtime).catch(() => undefined);
    throw err;
  }
  return { registrations, result };
}
