import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  DEPLOYED_TAGS,
  KEEP_IMAGES,
  KEEP_LAYERS_IMAGES,
  LAYERS_TAG_PREFIX,
  PROTECTED_TAGS,
  TAG_MUTABILITY,
  TAG_PREFIX,
  lifecyclePolicy,
  lifecycleRules,
  type LifecycleRule,
} from "../../infra/cloud/ecr";
import { registryPlan, type RegistryPlan } from "../../infra/plan/registry";

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
    const twfRules = JSON.parse(lifecyclePolicy("tritonWithFt")).rules as LifecycleRule[];
    expect(twfRules.at(-2)?.selection.tagPrefixList).toEqual(["twf-"]);
    expect(twfRules.at(-1)?.selection.tagPrefixList).toEqual([LAYERS_TAG_PREFIX]);
  });

  it("triton_with_ft's recipe-layers images never count against its kept or deployed images", () => {
    // The prefix the scripts tag with is the policy's, and no twf- tag starts with it nor it with twf-.
    const tags = readFileSync(join(__dirname, "../../scripts/remote/twf/tags.sh"), "utf8");
    expect(/^TWF_LAYERS_TAG_PREFIX=(\S+)$/m.exec(tags)?.[1]).toBe(LAYERS_TAG_PREFIX);
    expect(LAYERS_TAG_PREFIX.startsWith(TAG_PREFIX.tritonWithFt)).toBe(false);
    // The deployed image is the oldest twf- image; KEEP_IMAGES newer ones were built since, each first
    // build pushing a layers image after it, and 20 more layers images on top (many first deploys).
    const keep = KEEP_IMAGES.tritonWithFt;
    const images: Image[] = [
      { digest: "deployed", tags: ["twf-23.05-aaa", "deployed"], pushedDay: 0 },
      { digest: "oldest-kept", tags: ["twf-23.05-bbb"], pushedDay: 1 },
      ...Array.from({ length: keep - 1 }, (_, i) => ({
        digest: `twf${i}`,
        tags: [`twf-23.05-${i}`],
        pushedDay: 10 + i,
      })),
      ...Array.from({ length: 20 }, (_, i) => ({
        digest: `layers${i}`,
        tags: [`${LAYERS_TAG_PREFIX}23.05-${i}`],
        pushedDay: 20 + i,
      })),
    ];
    const expired = evaluate(lifecycleRules("tritonWithFt"), images, 60);
    expect(expired.has("deployed")).toBe(false);
    // Exactly KEEP_IMAGES twf- images are unprotected and none of them goes: the layers images took no place.
    expect([...expired].filter((d) => !d.startsWith("layers"))).toEqual([]);
    // The layers images expire by their own count.
    expect(images.filter((i) => i.digest.startsWith("layers") && !expired.has(i.digest))).toHaveLength(
      KEEP_LAYERS_IMAGES,
    );
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

/**
 * A stack of several models as ECR sees it: each model pushes its bakes to the
 * repository the plan gives it (plan/registry.ts), the bake moves `live` and
 * `previous` there (scripts/remote/lib/ecr.sh ecr_protect), a successful
 * rollout moves `deployed` and `deployed-previous` (tag-deployed.sh), and
 * ECR's daily lifecycle run expires what the rules let it.
 */
describe("ECR retention in a stack of several models", () => {
  const MODELS = ["gpt-j-6b", "codegen-6b", "neox-20b"] as const;

  class Ecr {
    readonly repos = new Map<string, Image[]>();
    private pushed = 0;

    constructor(readonly plan: RegistryPlan) {
      for (const s of plan.servers) this.repos.set(s.name, []);
    }

    private repoOf(model: string): Image[] {
      const name = this.plan.servers.find((s) => s.model === model)?.name;
      const repo = name ? this.repos.get(name) : undefined;
      if (!repo) throw new Error(`no repository for ${model}`);
      return repo;
    }

    /** ecr_rotate_tag: <tag> to the digest, <previous> to the digest <tag> named before. */
    private rotate(repo: Image[], digest: string, tag: string, previous: string): void {
      const current = repo.find((i) => i.tags.includes(tag));
      if (current?.digest === digest) return;
      for (const i of repo) i.tags = i.tags.filter((t) => t !== previous);
      if (current) {
        current.tags = current.tags.filter((t) => t !== tag);
        current.tags.push(previous);
      }
      repo.find((i) => i.digest === digest)?.tags.push(tag);
    }

    /** One build and rollout of a model on `day`; returns the digest it runs. */
    deploy(model: string, day: number): string {
      const repo = this.repoOf(model);
      const digest = `${model}#${++this.pushed}`;
      repo.push({ digest, tags: [`${TAG_PREFIX.server}${this.pushed}`], pushedDay: day });
      this.rotate(repo, digest, "live", "previous");
      this.rotate(repo, digest, "deployed", "deployed-previous");
      this.expire(day);
      return digest;
    }

    /** The lifecycle run of every repository. */
    expire(day: number): void {
      for (const [name, images] of this.repos) {
        const gone = evaluate(lifecycleRules("server"), images, day);
        this.repos.set(
          name,
          images.filter((i) => !gone.has(i.digest)),
        );
      }
    }

    has(digest: string): boolean {
      return [...this.repos.values()].some((r) => r.some((i) => i.digest === digest));
    }
  }

  /** Every model deployed twice (a running image and its rollback target), then 50 rebuilds of the first. */
  function rebuildOne(plan: RegistryPlan): { lost: string[]; runningOfFirst: string } {
    const ecr = new Ecr(plan);
    const running = new Map<string, { now: string; before: string }>();
    let day = 0;
    for (const m of MODELS) {
      const before = ecr.deploy(m, day++);
      running.set(m, { before, now: ecr.deploy(m, day++) });
    }
    let runningOfFirst = "";
    const lost = new Set<string>();
    for (let i = 0; i < 50; i++) {
      runningOfFirst = ecr.deploy(MODELS[0], day++);
      for (const m of MODELS.slice(1)) {
        const r = running.get(m);
        if (r && !ecr.has(r.now)) lost.add(`${m} running ${r.now} (after rebuild ${i + 1})`);
        if (r && !ecr.has(r.before)) lost.add(`${m} rollback ${r.before} (after rebuild ${i + 1})`);
      }
    }
    return { lost: [...lost], runningOfFirst };
  }

  it("gives each model a repository of its own; the first keeps the one-model stack's", () => {
    const plan = registryPlan("triton-ft-prod", MODELS);
    expect(plan.servers.map((s) => s.name)).toEqual([
      "triton-ft-prod/server",
      "triton-ft-prod/server/codegen-6b",
      "triton-ft-prod/server/neox-20b",
    ]);
    expect(plan.servers.map((s) => s.key)).toEqual(["server", "server-codegen-6b", "server-neox-20b"]);
    expect(new Set(plan.servers.map((s) => s.name)).size).toBe(MODELS.length);
    // One model: exactly the one-model names.
    expect(registryPlan("triton-ft-dev", ["gpt2"]).servers).toEqual([
      { model: "gpt2", key: "server", name: "triton-ft-dev/server" },
    ]);
  });

  it("keeps every other model's deployed and previous images over 50 rebuilds of one model", () => {
    const { lost, runningOfFirst } = rebuildOne(registryPlan("triton-ft-prod", MODELS));
    expect(lost).toEqual([]);
    expect(runningOfFirst).not.toBe("");
  });

  it("one repository shared by the models loses the others' running images (the defect the per-model repositories fix)", () => {
    const plan = registryPlan("triton-ft-prod", MODELS);
    const shared: RegistryPlan = {
      ...plan,
      servers: plan.servers.map((s) => ({ ...s, name: "triton-ft-prod/server" })),
    };
    const { lost } = rebuildOne(shared);
    expect(lost.length).toBeGreaterThan(0);
    expect(lost.some((l) => l.startsWith("codegen-6b running"))).toBe(true);
  });
});
