import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { describe, expect, it } from "vitest";
import {
  COMMIT_PIN,
  DEFAULT_BUILD,
  KNOWN_GOOD_BUILDS,
  findKnownGoodBuild,
  unknownBuildWarning,
} from "../../infra/catalog/upstream";

const PR_MERGE_FT = "fc6e53fee7674361475e06e003e263b768f50f77";
const OLD_BACKEND = "b09b6352dc56e41cbd087eef195551df3d26f892";

describe("known-good upstream builds", () => {
  it("defaults to upstream's final pair: backend c6936c39 + FT df4a7534 on Triton 23.05", () => {
    expect(DEFAULT_BUILD).toMatchObject({
      tritonVersion: "23.05",
      backend: { commit: "c6936c39be6fc57c161db34cfe5c45d1bef81ee2", date: "2023-10-19" },
      ft: { commit: "df4a7534860137e060e18d2ebf019906120ea204", date: "2023-10-19" },
    });
  });

  it("holds only full commits on an upstream branch or tag, each with its reason", () => {
    const ids = new Set<string>();
    for (const k of KNOWN_GOOD_BUILDS) {
      expect(ids.has(k.id)).toBe(false);
      ids.add(k.id);
      expect(k.tritonVersion).toMatch(/^\d{2}\.\d{2}$/);
      for (const ref of [k.backend, k.ft]) {
        expect(ref.commit).toMatch(COMMIT_PIN);
        expect(ref.reachableFrom.length).toBeGreaterThan(0);
        expect(ref.date).toMatch(/^\d{4}-\d{2}-\d{2}$/);
      }
      expect(k.reason.length).toBeGreaterThan(40);
    }
  });

  it("never lists the pull-request test merge or the pre-23.05 backend", () => {
    const all = KNOWN_GOOD_BUILDS.flatMap((k) => [k.backend.commit, k.ft.commit]);
    expect(all).not.toContain(PR_MERGE_FT);
    expect(all).not.toContain(OLD_BACKEND);
  });

  it("matches a set exactly (case-insensitive commits), and nothing else", () => {
    const d = DEFAULT_BUILD;
    const pins = { tritonVersion: "23.05", backendCommit: d.backend.commit, ftCommit: d.ft.commit };
    expect(findKnownGoodBuild(pins)).toBe(d);
    expect(findKnownGoodBuild({ ...pins, backendCommit: d.backend.commit.toUpperCase() })).toBe(d);
    expect(findKnownGoodBuild({ ...pins, tritonVersion: "23.10" })).toBeUndefined();
    expect(unknownBuildWarning(pins)).toBeUndefined();
  });

  it("warns about a set outside the table and names the known-good set", () => {
    const w = unknownBuildWarning({ tritonVersion: "23.05", backendCommit: OLD_BACKEND, ftCommit: PR_MERGE_FT });
    expect(w).toContain("not a set upstream built together");
    expect(w).toContain(DEFAULT_BUILD.backend.commit);
    expect(w).toContain(DEFAULT_BUILD.ft.commit);
    // Mixing two known sets is not known-good either.
    const [a, b] = KNOWN_GOOD_BUILDS;
    expect(
      unknownBuildWarning({
        tritonVersion: a!.tritonVersion,
        backendCommit: a!.backend.commit,
        ftCommit: b!.ft.commit,
      }),
    ).toContain(a!.ft.commit);
  });

  it("leaves malformed or missing pins to the errors (no warning)", () => {
    expect(
      unknownBuildWarning({ tritonVersion: "23.05", backendCommit: "main", ftCommit: PR_MERGE_FT }),
    ).toBeUndefined();
    expect(unknownBuildWarning({ tritonVersion: "23.05", ftCommit: PR_MERGE_FT })).toBeUndefined();
  });
});

// Runs where git mirrors of both upstream repositories exist (the developers'
// machines of this session); CI has none and skips it.
const MIRRORS = {
  backend: "/work/.mirror/triton-inference-server+fastertransformer_backend/repo",
  ft: "/work/.mirror/NVIDIA+FasterTransformer/repo",
};
const haveMirrors = existsSync(MIRRORS.backend) && existsSync(MIRRORS.ft);

describe.skipIf(!haveMirrors)("known-good builds against the upstream mirrors", () => {
  const refsContaining = (repo: string, commit: string): string[] =>
    execFileSync("git", ["-C", repo, "for-each-ref", "--contains", commit, "--format=%(refname:short)"], {
      encoding: "utf8",
    })
      .split("\n")
      .filter((r) => r && !r.startsWith("pull/"));

  it("each pinned commit is on the branches and tags the table says", () => {
    for (const k of KNOWN_GOOD_BUILDS) {
      for (const [which, ref] of [
        ["backend", k.backend],
        ["ft", k.ft],
      ] as const) {
        const refs = refsContaining(MIRRORS[which], ref.commit);
        for (const r of ref.reachableFrom) expect(refs, `${which} ${ref.commit}`).toContain(r);
      }
    }
  });

  it("the former FT default is on no branch or tag", () => {
    expect(refsContaining(MIRRORS.ft, PR_MERGE_FT)).toEqual([]);
  });
});
