/**
 * build.promoteFrom: a stack that serves another stack's images builds
 * nothing, so the build settings are refused beside it (they would be ignored)
 * and the rules about the builder are left out; what it still needs from its
 * config is checked here. The images themselves are checked once the
 * referenced stack's outputs are read (infra/promotion/reference.ts).
 */
import { PULUMI_STACK_REFERENCE } from "../config/limits";
import type { StackConfig } from "../config/schema";

import type { Add } from "../config/schema";
/**
 * Build keys a promoted stack may set: the reference itself, and the pins its images carry: the Triton
 * release (its version label, support window) and the backend and FT commits triton_with_ft was compiled
 * from. The pins are part of the model plan promotion compares (plan/fingerprint.ts), so a promoted
 * stack states the ones it expects to serve.
 */
export const PROMOTED_BUILD_KEYS = ["promoteFrom", "tritonVersion", "backendCommit", "ftCommit"] as const;

/** Keys of the checks that are about building, left out for a promoted stack. */
export function isBuildOnlyKey(key: string): boolean {
  if (key === "build") return true;
  if (!key.startsWith("build.")) return false;
  const name = key.slice("build.".length).split(".")[0] ?? "";
  return !(PROMOTED_BUILD_KEYS as readonly string[]).includes(name) || name === "promoteFrom";
}

export function isPromoted(config: StackConfig): boolean {
  return config.build.promoteFrom !== undefined;
}

/**
 * `raw` is the namespace as given (before defaults): a build key set beside
 * promoteFrom is a mistake even when it equals its default.
 */
/** A stack reference must name its stack in full: a short name would resolve against whoever runs pulumi. */
function checkReference(key: string, ref: string, add: Add): void {
  const r = PULUMI_STACK_REFERENCE;
  const parts = ref.split("/");
  if (parts.length !== 3 || !parts.every((p) => p.length <= r.maxPartChars && r.part.test(p)))
    add(
      key,
      ref,
      `is not a fully qualified stack reference: <org>/<project>/<stack>, each part letters, digits, '-', '_' or '.', at most ${r.maxPartChars} characters`,
      "name the stack that built the images in full, e.g. acme/triton-ft/staging (the file backend's org is `organization`)",
    );
}

/**
 * build.tritonWithFtFrom: the reference's form here; whether the named stack's
 * triton_with_ft matches this stack's pins and SMs once its outputs are read
 * (infra/promotion/tritonWithFt.ts).
 */
export function checkTritonWithFtFrom(config: StackConfig, add: Add): void {
  const from = config.build.tritonWithFtFrom;
  if (!from) return;
  checkReference("build.tritonWithFtFrom.stackReference", from.stackReference, add);
}

export function checkPromotion(raw: Record<string, unknown>, config: StackConfig, add: Add): void {
  const from = config.build.promoteFrom;
  if (!from) return;
  const ref = from.stackReference;
  checkReference("build.promoteFrom.stackReference", ref, add);
  const rawBuild = raw.build;
  if (rawBuild !== null && typeof rawBuild === "object") {
    for (const [key, value] of Object.entries(rawBuild)) {
      if ((PROMOTED_BUILD_KEYS as readonly string[]).includes(key)) continue;
      add(
        `build.${key}`,
        value,
        `is a setting of a stack that builds; with build.promoteFrom this stack builds nothing and serves ${ref}'s images, so it would be ignored`,
        `remove it (${ref} keeps its build settings), or remove build.promoteFrom to build here`,
      );
    }
  }
  const c = config.cluster;
  if (c.mode === "create" && c.endpointAccess === undefined && c.endpointPublicAccessCidrs === undefined)
    add(
      "cluster.endpointAccess",
      undefined,
      "must be given for a created cluster with build.promoteFrom: it defaults from build.sshAllowedCidrs, which a stack that builds nothing does not set",
      "set cluster.endpointAccess: private, or cluster.endpointPublicAccessCidrs to the deployers' CIDRs",
    );
}
