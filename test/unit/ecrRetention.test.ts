import { describe, expect, it } from "vitest";
import {
  DEPLOYED_TAGS,
  KEEP_IMAGES,
  PROTECTED_TAGS,
  TAG_MUTABILITY,
  TAG_PREFIX,
  lifecyclePolicy,
  lifecycleRules,
  type LifecycleRule,
} from "../../infra/cloud/ecr";

interface Image {
  digest: string;
  tags: string[];
  pushedDay: number;
}

/**
 * ECR's documented lifecycle semantics: rules in priority order; a rule's tag
 * list matches an image when every entry matches one of its tags; an image
 * matched by a rule cannot be expired by a lower-priority rule (but is still
 * counted by it); count rules keep the newest by push date.
 */
function evaluate(rules: LifecycleRule[], images: Image[], today: number): Set<string> {
  const claimed = new Set<string>();
  const expired = new Set<string>();
  const glob = (pattern: string, tag: string) =>
    new RegExp(
      `^${pattern
        .split("*")
        .map((p) => p.replace(/[.+?^${}()|[\]\\]/g, "\\$&"))
        .join(".*")}$`,
    ).test(tag);
  for (const rule of [...rules].sort((a, b) => a.rulePriority - b.rulePriority)) {
    const s = rule.selection;
    const matches = images.filter((img) => {
      if (s.tagStatus === "untagged") return img.tags.length === 0;
      if (s.tagStatus === "any") return true;
      if (img.tags.length === 0) return false;
      const pre = (s.tagPrefixList ?? []).every((p) => img.tags.some((t) => t.startsWith(p)));
      const pat = (s.tagPatternList ?? []).every((p) => img.tags.some((t) => glob(p, t)));
      return pre && pat;
    });
    const candidates =
      s.countType === "sinceImagePushed"
        ? matches.filter((m) => today - m.pushedDay > s.countNumber)
        : [...matches].sort((a, b) => b.pushedDay - a.pushedDay).slice(s.countNumber);
    for (const c of candidates) if (!claimed.has(c.digest)) expired.add(c.digest);
    for (const m of matches) claimed.add(m.digest);
  }
  return expired;
}

describe("ECR retention", () => {
  it("protects each tag in its own rule (a tag list is an AND), before any expiring rule", () => {
    const rules = lifecycleRules("server");
    expect(rules.slice(0, PROTECTED_TAGS.length).map((r) => r.selection.tagPatternList)).toEqual(
      PROTECTED_TAGS.map((t) => [t]),
    );
    expect(rules.map((r) => r.rulePriority)).toEqual(rules.map((_, i) => i + 1));
    expect(rules).toHaveLength(PROTECTED_TAGS.length + 2);
    expect(rules.at(-1)?.selection).toMatchObject({
      tagPrefixList: [TAG_PREFIX.server],
      countNumber: KEEP_IMAGES.server,
    });
    expect(JSON.parse(lifecyclePolicy("tritonWithFt")).rules.at(-1).selection.tagPrefixList).toEqual(["twf-"]);
  });

  it("never expires the deployed image, even when a skipped bake left it the oldest", () => {
    // The deployed bake was pushed on day 0; its later bake was skipped (tag present), so
    // its push date stayed. 30 newer bakes were pushed since.
    const images: Image[] = [
      { digest: "deployed", tags: ["bake-aaa", "live"], pushedDay: 0 },
      { digest: "before", tags: ["bake-bbb", "previous"], pushedDay: 1 },
      ...Array.from({ length: 30 }, (_, i) => ({ digest: `n${i}`, tags: [`bake-${i}`], pushedDay: 10 + i })),
      { digest: "untagged-old", tags: [], pushedDay: 2 },
      { digest: "untagged-new", tags: [], pushedDay: 45 },
    ];
    const expired = evaluate(lifecycleRules("server"), images, 50);
    expect(expired.has("deployed")).toBe(false);
    expect(expired.has("before")).toBe(false);
    expect(expired.has("untagged-old")).toBe(true);
    expect(expired.has("untagged-new")).toBe(false);
    // The protected images still count among the newest 20; the rest of the oldest go.
    const keptBakes = images.filter((i) => i.tags.some((t) => t.startsWith("bake-")) && !expired.has(i.digest));
    expect(keptBakes.length).toBe(KEEP_IMAGES.server + 2);
  });

  it("keeps the images tagged deployed and deployed-previous, however many builds follow and however old", () => {
    expect(PROTECTED_TAGS).toEqual(expect.arrayContaining([...DEPLOYED_TAGS]));
    for (const repo of ["server", "gateway"] as const) {
      const prefix = TAG_PREFIX[repo];
      const images: Image[] = [
        // Running since day 0; a later build (live) failed its rollout and never ran.
        { digest: "running", tags: [`${prefix}aaa`, "deployed"], pushedDay: 0 },
        { digest: "rollback", tags: [`${prefix}bbb`, "deployed-previous"], pushedDay: 1 },
        ...Array.from({ length: 40 }, (_, i) => ({ digest: `n${i}`, tags: [`${prefix}${i}`], pushedDay: 10 + i })),
        { digest: "failed-rollout", tags: [`${prefix}ccc`, "live"], pushedDay: 60 },
      ];
      const expired = evaluate(lifecycleRules(repo), images, 400);
      expect(expired.has("running"), repo).toBe(false);
      expect(expired.has("rollback"), repo).toBe(false);
      expect(expired.has("n0"), repo).toBe(true);
      // Without the deployed rules, the running image would go.
      const withoutDeployed = lifecycleRules(repo).filter(
        (r) => !(r.selection.tagPatternList ?? []).some((t) => (DEPLOYED_TAGS as readonly string[]).includes(t)),
      );
      expect(evaluate(withoutDeployed, images, 400).has("running"), repo).toBe(true);
    }
  });

  it("a single rule listing both protected tags would not protect the deployed image (why they are split)", () => {
    const merged = lifecycleRules("server");
    merged.splice(0, 2, { ...merged[0]!, selection: { ...merged[0]!.selection, tagPatternList: [...PROTECTED_TAGS] } });
    const images: Image[] = [
      { digest: "deployed", tags: ["bake-aaa", "live"], pushedDay: 0 },
      ...Array.from({ length: 25 }, (_, i) => ({ digest: `n${i}`, tags: [`bake-${i}`], pushedDay: 10 + i })),
    ];
    expect(evaluate(merged, images, 50).has("deployed")).toBe(true);
    expect(evaluate(lifecycleRules("server"), images, 50).has("deployed")).toBe(false);
  });

  it("only the protected tags are mutable", () => {
    expect(TAG_MUTABILITY.imageTagMutability).toBe("IMMUTABLE_WITH_EXCLUSION");
    expect(TAG_MUTABILITY.imageTagMutabilityExclusionFilters.map((f) => f.filter)).toEqual([...PROTECTED_TAGS]);
  });
});
