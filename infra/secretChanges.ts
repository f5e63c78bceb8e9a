/**
 * What a change to a secret does, said in the preview itself.
 *
 * `pulumi preview` shows a changed secret as `[secret]` on the resources that
 * take it, or not at all where it only reaches a command's environment or a
 * provider. `npm run synth -- --diff` and the pull-request comment compare two
 * synth inventories (infra/synth/effects.ts); a preview has no second
 * inventory, so the stack keeps one itself: each secret's fingerprint, in a
 * secret stack output (`secretFingerprints`, encrypted in the state like the
 * secrets). The preview reads the last update's through a reference to its own
 * stack and logs one line per secret that changed, with what applying it does.
 * The first update of a stack has nothing to compare and says nothing.
 */
import { createHash } from "node:crypto";
import * as pulumi from "@pulumi/pulumi";
import type { SecretKey } from "./config/schema";
import type { StackSecrets } from "./loader";

/** The stack output holding the fingerprints (docs/outputs.md). */
export const SECRET_FINGERPRINTS_OUTPUT = "secretFingerprints";

/** What applying a changed secret does, per key; `promoted`: a stack that builds nothing. */
export function secretEffect(key: SecretKey, promoted: boolean): string {
  switch (key) {
    case "hfToken":
      return promoted
        ? "nothing: a promoted stack builds nothing, so no step reads it"
        : "the fetch steps run again with it (it is in their environment) and find their finished marker, so nothing is downloaded again; a stopped builder is started for them and stopped after";
    case "sshPrivateKey":
      return promoted
        ? "nothing: a promoted stack has no builder"
        : "every build step reconnects with it and runs again, finding its finished marker (no step's work is redone); a stopped builder is started for them and stopped after";
    case "kubeconfig":
      return "the Kubernetes provider takes it: a kubeconfig of the same cluster changes nothing else; one of another cluster makes the provider create every Kubernetes object of the stack there";
  }
}

/** A secret's fingerprint: sha256 over its key and value (kept only in a secret output). */
export function fingerprint(key: SecretKey, value: string): string {
  return createHash("sha256").update(`${key}\u0000${value}`).digest("hex");
}

/** The lines a preview logs: one per secret set, changed or removed since the last update. */
export function secretChangeLines(
  before: Readonly<Record<string, string>> | undefined,
  after: Readonly<Record<string, string>>,
  promoted: boolean,
): string[] {
  if (!before) return [];
  const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])].sort() as SecretKey[];
  const lines: string[] = [];
  for (const key of keys) {
    const was = before[key];
    const now = after[key];
    if (was === now) continue;
    const what = was === undefined ? "was set" : now === undefined ? "was removed" : "changed";
    lines.push(`this change: the secret triton-ft:${key} ${what}: ${secretEffect(key, promoted)}`);
  }
  return lines;
}

/** The fingerprints of the secrets set, as a secret output. */
export function secretFingerprints(secrets: StackSecrets): pulumi.Output<Record<string, string>> {
  const entries = (Object.entries(secrets) as Array<[SecretKey, pulumi.Output<string> | undefined]>).flatMap(
    ([key, value]) => (value ? [value.apply((v): [SecretKey, string] => [key, fingerprint(key, v)])] : []),
  );
  return pulumi.secret(pulumi.all(entries).apply((pairs) => Object.fromEntries(pairs)));
}

/**
 * A reference to the stack itself: it reads the last update's saved outputs.
 * An update registers it too, so a preview and an update have the same
 * resources. Made once per program (its name is the one it always had: the
 * secret fingerprints were its first reader; the measured step times,
 * infra/measuredPreview.ts, read it too).
 */
export function selfReference(): pulumi.StackReference {
  const self = `${pulumi.getOrganization()}/${pulumi.getProject()}/${pulumi.getStack()}`;
  return new pulumi.StackReference("secret-fingerprints-ref", { name: self });
}

/**
 * In a preview: compares the fingerprints with the last update's (read from
 * this stack's own outputs through `ref`, selfReference()) and logs what each
 * changed secret does.
 */
export function reportSecretChanges(
  ref: pulumi.StackReference,
  fingerprints: pulumi.Output<Record<string, string>>,
  promoted: boolean,
): void {
  if (!pulumi.runtime.isDryRun()) return;
  pulumi
    .all([ref.getOutput(SECRET_FINGERPRINTS_OUTPUT), fingerprints])
    .apply(([before, after]: [unknown, Record<string, string>]) => {
      const was = before !== null && typeof before === "object" ? (before as Record<string, string>) : undefined;
      for (const line of secretChangeLines(was, after, promoted)) void pulumi.log.info(line);
    });
}
