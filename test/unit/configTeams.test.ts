import { describe, expect, it } from "vitest";
import type { ConfigProblem } from "../../infra/config";
import { resolveStack } from "../../infra/resolve";
import { consumerEntries, teamLimits } from "../../infra/config/teams";
import { gatewayPlan } from "../../infra/plan/gateway";
import { renderKeysFile } from "../../infra/plan/gatewayConfig";
import { KeysFileSchema } from "../../images/gateway/src/config";
import { gpt2Config, withOverrides } from "../lib/fixtures";

function resolve(consumers: unknown): ReturnType<typeof resolveStack> {
  return resolveStack(withOverrides(gpt2Config(), { serving: { consumers } }), {});
}
function problemsOf(consumers: unknown): ConfigProblem[] {
  return resolve(consumers).problems;
}

describe("serving.consumers: a list of teams or a map of teams to their limits", () => {
  it("a list keeps working: entries get keys, no team sets limits", () => {
    const r = resolve(["search", "search:v2", "ads"]);
    expect(r.problems).toEqual([]);
    const plan = gatewayPlan(r.stack!);
    expect(plan.consumers).toEqual(["search", "search:v2", "ads"]);
    expect(plan.teams).toEqual({});
  });

  it("a map sets each team's limits; unset ones are left to the gateway's defaults", () => {
    const r = resolve({
      search: { requestsPerMinute: 120, tokensPerMinute: 50_000, maxConcurrent: 4, share: 3 },
      "search:v2": {},
      ads: {},
    });
    expect(r.problems).toEqual([]);
    const plan = gatewayPlan(r.stack!);
    expect(plan.consumers).toEqual(["search", "search:v2", "ads"]);
    expect(plan.teams).toEqual({
      search: { requestsPerMinute: 120, tokensPerMinute: 50_000, maxConcurrent: 4, share: 3 },
    });
  });

  it("refuses non-positive or fractional limits, a zero share, unknown keys and bad team names, all at once", () => {
    const problems = problemsOf({
      search: { requestsPerMinute: 0, tokensPerMinute: 1.5, maxConcurrent: -1, share: 0 },
      ads: { priority: 1 },
      "Team A": {},
    });
    const keys = problems.map((p) => p.key).sort();
    expect(keys).toEqual(
      [
        "triton-ft:serving.consumers.search.requestsPerMinute",
        "triton-ft:serving.consumers.search.tokensPerMinute",
        "triton-ft:serving.consumers.search.maxConcurrent",
        "triton-ft:serving.consumers.search.share",
        "triton-ft:serving.consumers.ads.priority",
        "triton-ft:serving.consumers.Team A",
      ].sort(),
    );
    const unknown = problems.find((p) => p.key.endsWith("ads.priority"))!;
    expect(unknown.message).toBe("is not a key of triton-ft:serving.consumers.ads");
    expect(unknown.fix).toContain("requestsPerMinute, tokensPerMinute, maxConcurrent, share, models");
    for (const p of problems) expect(p.fix).not.toBe("");
  });

  it("scopes a team to models: the ids flow into the plan's team limits", () => {
    const r = resolve({ search: { models: ["gpt2"], share: 2 }, ads: {} });
    expect(r.problems).toEqual([]);
    expect(gatewayPlan(r.stack!).teams).toEqual({ search: { models: ["gpt2"], share: 2 } });
  });

  it("refuses a team scoped to a model the stack does not serve, or to no model", () => {
    const problems = problemsOf({ search: { models: ["gpt2", "gpt-j"] }, ads: { models: [] } });
    expect(problems.map((p) => [p.key, p.message])).toEqual([
      ["triton-ft:serving.consumers.ads.models", expect.stringMatching(/>=1 items|at least 1/)],
      ["triton-ft:serving.consumers.search.models", "names gpt-j, which this stack does not serve (it serves gpt2)"],
    ]);
    for (const p of problems) expect(p.fix).not.toBe("");
  });

  it("refuses limits on two entries of one team (limits are per team, keys per entry)", () => {
    const problems = problemsOf({ search: { share: 2 }, "search:v2": { share: 3 } });
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatchObject({ key: "triton-ft:serving.consumers" });
    expect(problems[0]!.message).toContain("more than one entry of team search");
  });

  it("an internet-facing endpoint needs at least one team in either form", () => {
    const internet = (consumers: unknown) =>
      resolveStack(
        withOverrides(gpt2Config(), {
          serving: {
            consumers,
            loadBalancerScheme: "internet-facing",
            allowedCidrs: ["203.0.113.0/24"],
            tlsCertificateArn: "arn:aws:acm:us-east-1:123456789012:certificate/abc-123",
          },
        }),
        {},
      ).problems.map((p) => p.key);
    expect(internet({})).toEqual(["triton-ft:serving.consumers"]);
    expect(internet({ search: {} })).toEqual([]);
  });

  it("entries and limits from either form", () => {
    expect(consumerEntries(["a", "b:v2"])).toEqual(["a", "b:v2"]);
    expect(consumerEntries({ a: {}, "b:v2": { share: 2 } })).toEqual(["a", "b:v2"]);
    expect(teamLimits({ a: {}, "b:v2": { share: 2 } })).toEqual({ b: { share: 2 } });
  });
});

describe("the gateway's keys file", () => {
  it("carries a team's model scope, and the gateway accepts it", () => {
    const json = renderKeysFile([{ entry: "search", keySha256: "a".repeat(64) }], { search: { models: ["gpt2"] } });
    expect(KeysFileSchema.parse(JSON.parse(json)).consumers[0]).toEqual({
      name: "search",
      keySha256: ["a".repeat(64)],
      models: ["gpt2"],
    });
  });

  it("a team without own limits is its name and hashes only (today's bytes)", () => {
    const json = renderKeysFile([
      { entry: "search", keySha256: "a".repeat(64) },
      { entry: "search:v2", keySha256: "b".repeat(64) },
      { entry: "ads", keySha256: "c".repeat(64) },
    ]);
    expect(json).toBe(
      `{"consumers":[{"name":"search","keySha256":["${"a".repeat(64)}","${"b".repeat(64)}"]},{"name":"ads","keySha256":["${"c".repeat(64)}"]}]}`,
    );
  });

  it("carries a team's limits, and the gateway accepts the file", () => {
    const json = renderKeysFile([{ entry: "search", keySha256: "a".repeat(64) }], {
      search: { requestsPerMinute: 120, tokensPerMinute: 50_000, maxConcurrent: 4, share: 3 },
    });
    const parsed = KeysFileSchema.parse(JSON.parse(json));
    expect(parsed.consumers[0]).toEqual({
      name: "search",
      keySha256: ["a".repeat(64)],
      requestsPerMinute: 120,
      tokensPerMinute: 50_000,
      maxConcurrent: 4,
      share: 3,
    });
  });
});
