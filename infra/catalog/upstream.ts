/**
 * Upstream source pins for the `triton_with_ft` image: which (Triton release,
 * fastertransformer_backend commit, FasterTransformer commit) sets upstream
 * itself built together. Each entry was checked against git mirrors of both
 * repositories (branches, tags and dates below); a stack may pin anything that
 * is a 40-hex commit, but a set outside this table gets a preview warning that
 * names the known-good set.
 *
 * Pure data and functions: no Pulumi, no I/O.
 */

export const BACKEND_REPO_URL = "https://github.com/triton-inference-server/fastertransformer_backend.git";
export const FT_REPO_URL = "https://github.com/NVIDIA/FasterTransformer.git";

/** A full git commit id: 40 hex characters. Branches, tags and short SHAs move or are ambiguous. */
export const COMMIT_PIN = /^[0-9a-f]{40}$/;

export interface UpstreamRef {
  commit: string;
  /** Commit date (committer), ISO date. */
  date: string;
  /** Upstream branches and tags that contain the commit (checked against the repository). */
  reachableFrom: readonly string[];
  subject: string;
}

export interface KnownGoodBuild {
  id: string;
  tritonVersion: string;
  backend: UpstreamRef;
  ft: UpstreamRef;
  /** Why upstream used these together. */
  reason: string;
}

/**
 * Newest first; the first entry is the stack default.
 *
 * Deliberately absent:
 * - FasterTransformer fc6e53fee7674361475e06e003e263b768f50f77, the former
 *   default: GitHub's test-merge commit of pull request 587
 *   (`refs/pull/587/merge`, "Merge 2c4b9184… into df4a7534…", 2023-10-21). It is
 *   on no branch or tag and can disappear.
 * - fastertransformer_backend b09b6352dc56e41cbd087eef195551df3d26f892
 *   (2022-12-03), the former default backend: it predates the v1.4 update
 *   (82e8d11, 2023-01-23) and both fixes for building against Triton 23.05
 *   (a15eab2, 2023-07-21; b6935d4, 2023-07-28).
 */
export const KNOWN_GOOD_BUILDS: readonly KnownGoodBuild[] = [
  {
    id: "upstream-final-2023-10",
    tritonVersion: "23.05",
    backend: {
      commit: "c6936c39be6fc57c161db34cfe5c45d1bef81ee2",
      date: "2023-10-19",
      reachableFrom: ["main"],
      subject: "Update README.md",
    },
    ft: {
      commit: "df4a7534860137e060e18d2ebf019906120ea204",
      date: "2023-10-19",
      reachableFrom: ["main"],
      subject: "Update README.md",
    },
    reason:
      "the final commit of each default branch, both 2023-10-19; the backend's docker build defaults to Triton 23.05 " +
      "and its CMake fetches FasterTransformer at main, which has been df4a7534 since that day; the backend includes " +
      "a15eab2 and b6935d4, its two fixes for building against Triton 23.05",
  },
  {
    id: "backend-v1.4-release",
    tritonVersion: "22.12",
    backend: {
      commit: "d7c80119abaf21da36e9c9a51c27d524fa26530f",
      date: "2023-01-23",
      reachableFrom: ["v1.4", "r23.05", "release/v1.4_tag"],
      subject: "Update CMakeLists.txt",
    },
    ft: {
      commit: "d21dc02bc5f70bc7dc0d18ba5801ae263565e68e",
      date: "2023-01-23",
      reachableFrom: ["v5.3", "release/v5.3_tag"],
      subject: "Update CMakeLists.txt",
    },
    reason:
      "the backend's v1.4 release (tag release/v1.4_tag): its docker build defaults to Triton 22.12 and its CMake " +
      "fetches FasterTransformer at v5.3 (tag release/v5.3_tag)",
  },
];

/** The default set: upstream's final pair. */
export const DEFAULT_BUILD: KnownGoodBuild = KNOWN_GOOD_BUILDS[0] as KnownGoodBuild;

export interface BuildPins {
  tritonVersion: string;
  backendCommit?: string;
  ftCommit?: string;
}

/** The table entry that matches all three pins exactly, if any. */
export function findKnownGoodBuild(pins: BuildPins): KnownGoodBuild | undefined {
  const b = pins.backendCommit?.toLowerCase();
  const f = pins.ftCommit?.toLowerCase();
  return KNOWN_GOOD_BUILDS.find(
    (k) => k.tritonVersion === pins.tritonVersion && k.backend.commit === b && k.ft.commit === f,
  );
}

export function describeBuild(k: KnownGoodBuild): string {
  return `tritonVersion "${k.tritonVersion}", backendCommit ${k.backend.commit}, ftCommit ${k.ft.commit}`;
}

/**
 * A warning for pins that are valid commits but not a set upstream built
 * together, or undefined. Malformed pins are errors elsewhere: this only
 * judges well-formed ones.
 */
export function unknownBuildWarning(pins: BuildPins): string | undefined {
  const { backendCommit, ftCommit } = pins;
  if (!backendCommit || !ftCommit) return undefined;
  if (!COMMIT_PIN.test(backendCommit.toLowerCase()) || !COMMIT_PIN.test(ftCommit.toLowerCase())) return undefined;
  if (findKnownGoodBuild(pins)) return undefined;
  const closest =
    KNOWN_GOOD_BUILDS.find((k) => k.tritonVersion === pins.tritonVersion) ??
    KNOWN_GOOD_BUILDS.find((k) => k.backend.commit === backendCommit.toLowerCase()) ??
    DEFAULT_BUILD;
  return (
    `build pins (tritonVersion "${pins.tritonVersion}", backendCommit ${backendCommit}, ftCommit ${ftCommit}) ` +
    `are not a set upstream built together, so the triton_with_ft build may fail after an hour of compiling; ` +
    `the known-good set is ${describeBuild(closest)} (${closest.reason})`
  );
}
