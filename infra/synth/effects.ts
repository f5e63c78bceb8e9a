/**
 * What a change to a resource does once applied, in words a reviewer acts on
 * ("rolls the gateway"), for the inventory diff (`npm run synth -- --diff`)
 * and so the pull-request comment. Only what the resource type makes certain
 * is said: a Deployment whose pod template changes replaces its pods, a
 * ConfigMap changes in place, a remote command whose script or triggers change
 * runs again. A change seen only through a mask (`[secret]`, `[unknown]`) is
 * a change all the same, and says so.
 *
 * Pure.
 */
import { parseMask } from "./inventory";
import type { FieldChange, InventoryDiff, ResourceChange } from "./diffTypes";

export interface Effect {
  /** The change it comes from. */
  change: ResourceChange;
  /** What applying it does, e.g. `rolls the gateway: new pods replace the old ones one by one`. */
  says: string;
}

type Op = ResourceChange["op"];

interface Rule {
  type: RegExp;
  op: Op;
  /** The change applies when a changed field's path matches; absent: any change of this op. */
  path?: RegExp;
  says(who: string, c: ResourceChange): string;
}

const WORKLOAD = /^kubernetes:apps\/v1:(Deployment|StatefulSet|DaemonSet)$/;
/** `spec` itself changes when the whole spec is one masked value. */
const POD_TEMPLATE = /^spec(\.template([.[{].*)?)?$/;

const RULES: readonly Rule[] = [
  {
    type: WORKLOAD,
    op: "change",
    path: POD_TEMPLATE,
    says: (who) => `rolls ${who}: new pods replace the old ones one by one`,
  },
  { type: WORKLOAD, op: "change", path: /^spec\.replicas$/, says: (who) => `scales ${who}` },
  { type: WORKLOAD, op: "add", says: (who) => `starts ${who}` },
  { type: WORKLOAD, op: "remove", says: (who) => `stops ${who} and deletes its pods` },
  {
    type: /^kubernetes:core\/v1:(ConfigMap|Secret)$/,
    op: "change",
    path: /^(data|stringData|binaryData)([.[{]|$)/,
    says: (_who, c) => {
      const owner = component(c);
      return `updates ${owner ? `${owner}'s ` : ""}${c.resource.type.split(":").pop() ?? "object"} ${c.resource.name} in place`;
    },
  },
  {
    type: /^eks:index:ManagedNodeGroup$/,
    op: "change",
    path: /^(launchTemplate|version|releaseVersion|amiType|instanceTypes|diskSize)([.[]|$)/,
    says: (_who, c) => `replaces the nodes of node group ${c.resource.name} one by one (their pods move)`,
  },
  {
    type: /^eks:index:ManagedNodeGroup$/,
    op: "change",
    path: /^scalingConfig\./,
    says: (_who, c) => `resizes node group ${c.resource.name}`,
  },
  {
    type: /^kubernetes:helm\.sh\/v3:Release$/,
    op: "change",
    path: /^(values|version|chart)([.[{]|$)/,
    says: (_who, c) => `upgrades the Helm release ${c.resource.name}`,
  },
  {
    type: /^command:remote:Command$/,
    op: "change",
    path: /^(create|triggers)([.[]|$)/,
    says: (_who, c) => `runs ${c.resource.name} again on its host`,
  },
];

/** The component a resource belongs to, when it is one a reviewer knows by name: the gateway, a model's Triton. */
function component(c: ResourceChange): string | undefined {
  const parent = c.resource.parent ?? "";
  if (parent.startsWith("triton-ft:gatewayService:GatewayService::")) return "the gateway";
  if (parent.startsWith("triton-ft:tritonService:TritonService::"))
    return `Triton ${parent.slice(parent.lastIndexOf("::") + 2)}`;
  return undefined;
}

/** Who a workload is: its component, or its own kind and name. */
function who(c: ResourceChange): string {
  return component(c) ?? `${c.resource.type.split(":").pop() ?? c.resource.type} ${c.resource.name}`;
}

/** A change whose old and new values are both masked: real, but its values are not shown. */
export function maskedChange(f: FieldChange): boolean {
  return parseMask(f.before) !== undefined && parseMask(f.after) !== undefined;
}

/** What every change of the diff does, in the diff's order; one line per resource and effect. */
export function diffEffects(diff: InventoryDiff): Effect[] {
  const out: Effect[] = [];
  for (const c of diff.changes) {
    const said = new Set<string>();
    for (const rule of RULES) {
      if (rule.op !== c.op || !rule.type.test(c.resource.type)) continue;
      const fields = rule.path ? c.fields.filter((f) => rule.path?.test(f.path)) : c.fields;
      if (rule.path && fields.length === 0) continue;
      let says = rule.says(who(c), c);
      if (fields.length > 0 && fields.every(maskedChange)) {
        const kinds = [...new Set(fields.map((f) => parseMask(f.after)?.kind))].map((k) => `[${k ?? "unknown"}]`);
        says += ` (seen only through ${kinds.join(" and ")} values)`;
      }
      if (!said.has(says)) out.push({ change: c, says });
      said.add(says);
    }
  }
  return out;
}

/** The summary the diff opens with: `what it does:` and one line per effect. */
export function effectLines(effects: readonly Effect[]): string[] {
  if (effects.length === 0) return [];
  return ["what it does:", ...effects.map((e) => `  ${e.says}  (${e.change.resource.type} ${e.change.resource.name})`)];
}

/** The effects of one resource's change, for the line under its name. */
export function effectsOf(effects: readonly Effect[], c: ResourceChange): string[] {
  return effects.filter((e) => e.change === c).map((e) => e.says);
}
