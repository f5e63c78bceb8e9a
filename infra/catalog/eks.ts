/**
 * Kubernetes versions Amazon EKS offers, with their support windows: the one
 * place these dates live. EKS gives a minor version 14 months of standard
 * support from its release, then 12 months of extended support (billed per
 * cluster hour); after that a cluster is upgraded automatically and new
 * clusters cannot be created on it.
 *
 * Sources: the EKS user guide, "Understand the Kubernetes version lifecycle on
 * EKS" (https://docs.aws.amazon.com/eks/latest/userguide/kubernetes-versions.html),
 * and endoflife.date/amazon-eks, looked up 2026-11-23 and re-checked 2026-11-25 (unchanged). 1.36's release date is
 * derived from its standard-support end (2027-08-02) by the 14-month rule.
 *
 * Pure: dates are compared against a `today` the caller passes.
 */

export interface EksVersion {
  version: string;
  released: string;
  /** Last day of standard support (ISO date). */
  standardEnd: string;
  /** Last day of extended support (ISO date). */
  extendedEnd: string;
}

/** Newest first. */
export const EKS_VERSIONS: readonly EksVersion[] = [
  { version: "1.36", released: "2026-06-02", standardEnd: "2027-08-02", extendedEnd: "2028-08-02" },
  { version: "1.35", released: "2026-01-28", standardEnd: "2027-03-27", extendedEnd: "2028-03-27" },
  { version: "1.34", released: "2025-10-06", standardEnd: "2026-12-02", extendedEnd: "2027-12-02" },
  { version: "1.33", released: "2025-05-28", standardEnd: "2026-07-29", extendedEnd: "2027-07-29" },
  { version: "1.32", released: "2025-01-25", standardEnd: "2026-03-23", extendedEnd: "2027-03-23" },
  { version: "1.31", released: "2024-09-26", standardEnd: "2025-11-26", extendedEnd: "2026-11-26" },
  { version: "1.30", released: "2024-05-23", standardEnd: "2025-07-23", extendedEnd: "2026-07-23" },
  { version: "1.29", released: "2024-01-23", standardEnd: "2025-03-23", extendedEnd: "2026-03-23" },
];

/**
 * The stack default: in standard support until 2027-03-27. Checked with
 * @pulumi/eks 4.3.0, which passes the version through to EKS unchanged and
 * resolves the `AL2023_x86_64_NVIDIA` AMI from
 * /aws/service/eks/optimized-ami/<version>/amazon-linux-2023/x86_64/nvidia/recommended/image_id.
 */
export const DEFAULT_KUBERNETES_VERSION = "1.35";

export type EksSupport =
  | { status: "standard"; entry: EksVersion }
  | { status: "extended"; entry: EksVersion }
  | { status: "ended"; entry: EksVersion }
  | { status: "unreleased"; entry: EksVersion }
  | { status: "unknown" };

/** ISO date (YYYY-MM-DD) of a Date, in UTC. */
export function isoDate(d: Date): string {
  return d.toISOString().slice(0, 10);
}

export function eksSupport(version: string, today: string): EksSupport {
  const entry = EKS_VERSIONS.find((v) => v.version === version);
  if (!entry) return { status: "unknown" };
  if (today < entry.released) return { status: "unreleased", entry };
  if (today <= entry.standardEnd) return { status: "standard", entry };
  if (today <= entry.extendedEnd) return { status: "extended", entry };
  return { status: "ended", entry };
}

/** Versions a new cluster can be created on today (standard or extended support), newest first. */
export function offeredVersions(today: string): string[] {
  return EKS_VERSIONS.filter((v) => {
    const s = eksSupport(v.version, today).status;
    return s === "standard" || s === "extended";
  }).map((v) => v.version);
}

/** Versions in standard support today, newest first. */
export function standardVersions(today: string): string[] {
  return EKS_VERSIONS.filter((v) => eksSupport(v.version, today).status === "standard").map((v) => v.version);
}

export interface VersionFinding {
  level: "error" | "warning";
  message: string;
  fix: string;
}

/**
 * What validation says about `cluster.kubernetesVersion` today: an error for
 * a version EKS does not offer (unknown, not yet released, past extended
 * support), a warning for one in (billed) extended support.
 */
export function kubernetesVersionFinding(version: string, today: string): VersionFinding | undefined {
  const s = eksSupport(version, today);
  const standard = standardVersions(today);
  const use = `use ${standard.length > 0 ? standard.join(", ") : offeredVersions(today).join(", ")} (default ${DEFAULT_KUBERNETES_VERSION})`;
  switch (s.status) {
    case "standard":
      return undefined;
    case "unknown":
      return {
        level: "error",
        message: `is not a Kubernetes version EKS offers (offered on ${today}: ${offeredVersions(today).join(", ")})`,
        fix: `${use}; write it as a quoted "major.minor" string`,
      };
    case "unreleased":
      return { level: "error", message: `is not released on EKS until ${s.entry.released}`, fix: use };
    case "ended":
      return {
        level: "error",
        message: `left EKS extended support on ${s.entry.extendedEnd}; new clusters cannot use it`,
        fix: use,
      };
    case "extended":
      return {
        level: "warning",
        message: `is in EKS extended support (billed per cluster hour) since ${s.entry.standardEnd}, until ${s.entry.extendedEnd}`,
        fix: use,
      };
  }
}
