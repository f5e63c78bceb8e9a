/**
 * Container image references. Everything this stack deploys or builds FROM is
 * pinned by digest; the one exception is the marked placeholder `synth` writes
 * into offline renders, which no deployment ever carries.
 */

/** `<registry host>/<repository>@sha256:<64 hex>`, as ECR prints it. */
export const DIGEST_REF = /^[a-z0-9.-]+(:[0-9]+)?\/[a-z0-9._/-]+@sha256:[0-9a-f]{64}$/;

/** The tag of synth's placeholder image reference (`<repository>:synth`, no registry, no digest). */
export const SYNTH_TAG = "synth";
const SYNTH_REF = /^[a-z0-9._/-]+:synth$/;

export function isDigestRef(ref: string): boolean {
  return DIGEST_REF.test(ref);
}

/** What an image reference that is not digest-pinned gets told: `<what> <ref>: must be pinned by digest (...)`. */
export function notPinnedMessage(what: string, ref: string): string {
  return `${what} ${ref}: must be pinned by digest (<registry>/<repository>@sha256:<64 hex>)`;
}

/** synth's placeholder for an image known only after the remote build. */
export function synthImageRef(repository: string): string {
  return `${repository}:${SYNTH_TAG}`;
}

export function isSynthRef(ref: string): boolean {
  return SYNTH_REF.test(ref);
}
