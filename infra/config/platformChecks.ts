/**
 * Checks of the keys that name things outside this repository: the upstream
 * commits of the triton_with_ft build, the EKS version, and the CIDRs. Each
 * yields errors (the stack cannot work) and warnings (it can, but the author
 * should know: a pin set upstream never built together, a billed
 * extended-support version, a documentation-range CIDR).
 *
 * Pure: the date is passed in, so a preview's verdict on a version is
 * reproducible in tests.
 */
import { cidrListFindings, parseCidr, sshCidrFindings } from "./cidr";
import { kubernetesVersionFinding } from "../catalog/eks";
import { BACKEND_REPO_URL, COMMIT_PIN, DEFAULT_BUILD, FT_REPO_URL, unknownBuildWarning } from "../catalog/upstream";
import { supportFindings } from "../catalog/support";

export interface Finding {
  /** Key without the project prefix, e.g. `build.ftCommit`, `build.sshAllowedCidrs[0]`. */
  key: string;
  value: unknown;
  message: string;
  fix: string;
}

export interface Findings {
  errors: Finding[];
  warnings: Finding[];
}

/** The config fields these checks read. */
export interface PlatformConfig {
  build: { tritonVersion: string; backendCommit?: string; ftCommit?: string; sshAllowedCidrs: readonly string[] };
  serving: { allowedCidrs: readonly string[] };
  cluster: { mode: string; kubernetesVersion: string };
  network: { mode: string; vpcCidr: string };
}

export function platformFindings(
  config: PlatformConfig,
  today: string,
  programNode: string = process.versions.node,
): Findings {
  const errors: Finding[] = [];
  const warnings: Finding[] = [];
  const b = config.build;

  const pins = [
    ["backendCommit", BACKEND_REPO_URL, DEFAULT_BUILD.backend.commit],
    ["ftCommit", FT_REPO_URL, DEFAULT_BUILD.ft.commit],
  ] as const;
  for (const [key, repo, known] of pins) {
    const value = b[key];
    if (value === undefined) {
      errors.push({
        key: `build.${key}`,
        value,
        message: "is required: the build must be reproducible",
        fix: `set it to a full 40-hex commit of ${repo}; upstream's final, known-good one is ${known}`,
      });
    } else if (!COMMIT_PIN.test(value.toLowerCase())) {
      errors.push({
        key: `build.${key}`,
        value,
        message: "is not a 40-hex commit: a branch, tag or short SHA moves or is ambiguous",
        fix: `use the full commit (git ls-remote ${repo} <branch>); upstream's final, known-good one is ${known}`,
      });
    }
  }
  const pinWarning = unknownBuildWarning(b);
  if (pinWarning) {
    warnings.push({
      key: "build",
      value: { tritonVersion: b.tritonVersion, backendCommit: b.backendCommit, ftCommit: b.ftCommit },
      message: pinWarning,
      fix: "pin a known-good set (see docs/build.md, Upstream pins) unless this set has built for you before",
    });
  }

  if (config.cluster.mode === "create") {
    const v = kubernetesVersionFinding(config.cluster.kubernetesVersion, today);
    if (v)
      (v.level === "error" ? errors : warnings).push({
        key: "cluster.kubernetesVersion",
        value: config.cluster.kubernetesVersion,
        message: v.message,
        fix: v.fix,
      });
  }

  if (b.sshAllowedCidrs.length === 0) {
    errors.push({
      key: "build.sshAllowedCidrs",
      value: b.sshAllowedCidrs,
      message: "is empty, so pulumi up could not reach the builder over SSH",
      fix: "add the public IP/32 of the machine that runs pulumi up (curl -s https://checkip.amazonaws.com), or the CIDR of a runner inside the VPC",
    });
  }
  for (const f of sshCidrFindings(b.sshAllowedCidrs)) {
    (f.level === "error" ? errors : warnings).push({
      key: `build.sshAllowedCidrs[${f.index}]`,
      value: f.value,
      message: f.message,
      fix: f.fix,
    });
  }
  for (const f of cidrListFindings(config.serving.allowedCidrs)) {
    errors.push({ key: `serving.allowedCidrs[${f.index}]`, value: f.value, message: f.message, fix: f.fix });
  }
  if (config.network.mode === "create") {
    const p = parseCidr(config.network.vpcCidr);
    if (!p.ok) errors.push({ key: "network.vpcCidr", value: config.network.vpcCidr, message: p.reason, fix: p.fix });
  }
  // End-of-support dates (catalog/support.ts): Node, the Triton image's Python, EKS, the charts' Kubernetes ranges.
  const k8s = config.cluster.mode === "create" ? { kubernetesVersion: config.cluster.kubernetesVersion } : {};
  const support = supportFindings({ programNode, tritonVersion: config.build.tritonVersion, ...k8s }, today);
  errors.push(...support.errors);
  warnings.push(...support.warnings);
  return { errors, warnings };
}
