/**
 * Resource options as the engine receives them, read off each registration
 * request the program sends to the (mock) resource monitor.
 *
 * Why the monitor: `setMocks`' `newResource` arguments carry no options, and
 * under mocks a resource transform cannot see them either (@pulumi/pulumi 3.248
 * refuses `registerResourceTransform` under mocks; later versions accept it but
 * never run it). What stays put across SDK versions is the monitor's gRPC
 * client shape, `registerResource(request, callback)`, and the request's
 * protobuf getters, which follow pulumi's resource.proto (fields are only ever
 * added). Getters a version lacks read as unset rather than failing.
 */

/** Options of one resource, as its registration request carried them. */
export interface RecordedOptions {
  /** Only the operations given a timeout; none given: undefined. */
  customTimeouts?: { create?: string; update?: string; delete?: string };
  /**
   * `<type>::<name>` of every resource the engine orders this one after: the
   * `dependsOn` resources (a component expanded to the resources under it) and
   * those the inputs came from. The request carries one list for both.
   */
  dependsOn: string[];
  replaceOnChanges: string[];
  /** undefined when the option was not given. */
  deleteBeforeReplace?: boolean;
  ignoreChanges: string[];
  /** As sent: a URN, or a spec whose unset fields are left out. */
  aliases: Array<{ urn: string } | AliasSpec>;
  /** undefined when the option was not given. */
  protect?: boolean;
  /** undefined when the option was not given. */
  retainOnDelete?: boolean;
  /**
   * The `replacementTrigger` value as sent; undefined when not given. A new
   * value replaces the resource, so live stacks' values are pinned
   * (test/unit/urns.test.ts).
   */
  replacementTrigger?: unknown;
}

export interface AliasSpec {
  name?: string;
  type?: string;
  stack?: string;
  project?: string;
  parentUrn?: string;
  noParent?: boolean;
}

/** The getters of pulumirpc.RegisterResourceRequest read here; each optional, for SDK versions without it. */
interface RegisterRequest {
  getType(): string;
  getName(): string;
  getCustomtimeouts?(): { getCreate(): string; getUpdate(): string; getDelete(): string } | undefined;
  getDependenciesList?(): string[];
  getReplaceonchangesList?(): string[];
  getDeletebeforereplace?(): boolean;
  getDeletebeforereplacedefined?(): boolean;
  getIgnorechangesList?(): string[];
  getAliasesList?(): AliasMessage[];
  getAliasurnsList?(): string[];
  getProtect?(): boolean;
  hasProtect?(): boolean;
  getRetainondelete?(): boolean | undefined;
  hasRetainondelete?(): boolean;
  hasReplacementTrigger?(): boolean;
  getReplacementTrigger?(): { toJavaScript(): unknown } | undefined;
}

interface AliasMessage {
  getUrn(): string;
  getSpec(): AliasSpecMessage | undefined;
}

interface AliasSpecMessage {
  getName(): string;
  getType(): string;
  getStack(): string;
  getProject(): string;
  getParenturn(): string;
  getNoparent(): boolean;
}

type RegisterResource = (request: RegisterRequest, callback: (...args: unknown[]) => void) => unknown;

/** `urn:pulumi:<stack>::<project>::<parent types $>...<type>::<name>` to `<type>::<name>`. */
export function urnToTypeName(urn: string): string {
  const parts = urn.split("::");
  if (parts.length < 4) return urn;
  const qualifiedType = parts[2] ?? "";
  const type = qualifiedType.slice(qualifiedType.lastIndexOf("$") + 1);
  return `${type}::${parts.slice(3).join("::")}`;
}

function nonEmpty(value: string | undefined): string | undefined {
  return value ? value : undefined;
}

function aliasOf(a: AliasMessage): { urn: string } | AliasSpec {
  const urn = a.getUrn();
  if (urn) return { urn };
  const spec = a.getSpec();
  if (!spec) return {};
  const out: AliasSpec = {
    name: nonEmpty(spec.getName()),
    type: nonEmpty(spec.getType()),
    stack: nonEmpty(spec.getStack()),
    project: nonEmpty(spec.getProject()),
    parentUrn: nonEmpty(spec.getParenturn()),
    noParent: spec.getNoparent() || undefined,
  };
  return Object.fromEntries(Object.entries(out).filter(([, v]) => v !== undefined)) as AliasSpec;
}

/** The options a registration request carries. */
export function optionsOf(req: RegisterRequest): RecordedOptions {
  const t = req.getCustomtimeouts?.();
  const timeouts = {
    create: nonEmpty(t?.getCreate()),
    update: nonEmpty(t?.getUpdate()),
    delete: nonEmpty(t?.getDelete()),
  };
  const given = Object.fromEntries(Object.entries(timeouts).filter(([, v]) => v !== undefined));
  const aliases = req.getAliasesList?.() ?? [];
  return {
    customTimeouts: Object.keys(given).length > 0 ? given : undefined,
    dependsOn: (req.getDependenciesList?.() ?? []).map(urnToTypeName),
    replaceOnChanges: req.getReplaceonchangesList?.() ?? [],
    deleteBeforeReplace: req.getDeletebeforereplacedefined?.() ? req.getDeletebeforereplace?.() : undefined,
    ignoreChanges: req.getIgnorechangesList?.() ?? [],
    aliases: aliases.length > 0 ? aliases.map(aliasOf) : (req.getAliasurnsList?.() ?? []).map((urn) => ({ urn })),
    protect: req.hasProtect?.() ? req.getProtect?.() : undefined,
    retainOnDelete: req.hasRetainondelete?.() ? req.getRetainondelete?.() : undefined,
    replacementTrigger: req.hasReplacementTrigger?.() ? req.getReplacementTrigger?.()?.toJavaScript() : undefined,
  };
}

const NO_OPTIONS: RecordedOptions = {
  dependsOn: [],
  replaceOnChanges: [],
  ignoreChanges: [],
  aliases: [],
};

/**
 * Wraps the monitor's `registerResource` to record each request's options,
 * and returns the lookup for the mock's `newResource`: the options of the
 * resource of that type and name, oldest first (the request reaches the
 * monitor before the monitor calls `newResource`; the rare duplicate name
 * under different parents is matched in registration order).
 */
export function recordOptions(monitor: unknown): (type: string, name: string) => RecordedOptions {
  const pending = new Map<string, RecordedOptions[]>();
  const m = monitor as { registerResource?: RegisterResource } | undefined;
  const original = m?.registerResource;
  // Loud rather than options that silently read as unset.
  if (!m || typeof original !== "function")
    throw new Error(
      "the mock resource monitor has no registerResource: this @pulumi/pulumi needs infra/mock/options.ts updated",
    );
  m.registerResource = function (this: unknown, request, callback) {
    const key = `${request.getType()}::${request.getName()}`;
    pending.set(key, [...(pending.get(key) ?? []), optionsOf(request)]);
    return original.call(this, request, callback);
  };
  return (type, name) => pending.get(`${type}::${name}`)?.shift() ?? { ...NO_OPTIONS };
}
