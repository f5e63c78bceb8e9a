/**
 * Keys a team holds (serving.consumers.<team>.keySha256): the stack gets only
 * the SHA-256, generates nothing for that entry, and exports no key for it.
 */
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { EXTERNAL_KEY } from "../../infra/components/gatewayService";
import { resolveStack } from "../../infra/resolve";
import { gpt2Config, withOverrides } from "../lib/fixtures";
import { runProgram } from "../lib/pulumi";

const sha = (s: string) => createHash("sha256").update(s, "utf8").digest("hex");
const HELD = sha("a key the ads team keeps in its own vault");
const HELD_2 = sha("the ads team's next key");

function keysFile(run: Awaited<ReturnType<typeof runProgram>>): { name: string; keySha256: string[] }[] {
  const secret = run.one("kubernetes:core/v1:Secret", "gateway-keys");
  const data = secret.inputs.stringData as Record<string, string>;
  return (JSON.parse(String(data["keys.json"])) as { consumers: { name: string; keySha256: string[] }[] }).consumers;
}

describe("held keys (keySha256)", () => {
  it("generates no key for the entry, writes the given hashes, and exports `external` in its place", async () => {
    const run = await runProgram(
      withOverrides(gpt2Config(), {
        serving: { consumers: { search: {}, ads: { keySha256: [HELD, HELD_2], requestsPerMinute: 100 } } },
      }),
    );
    // The API keys generated: one for search, none for ads (the store's own passwords are not keys).
    const passwords = run
      .byType("random:index/randomPassword:RandomPassword")
      .map((r) => r.name)
      .filter((n) => n.startsWith("gateway-key-"));
    expect(passwords).toEqual(["gateway-key-search"]);
    const keys = run.outputs.apiKeys as Record<string, string>;
    expect(keys.ads).toBe(EXTERNAL_KEY);
    expect(keys.search).toMatch(/^tft-[A-Za-z0-9]{48}$/);
    const consumers = keysFile(run);
    expect(consumers.find((c) => c.name === "ads")).toEqual({
      name: "ads",
      keySha256: [HELD, HELD_2],
      requestsPerMinute: 100,
    });
    expect(consumers.find((c) => c.name === "search")?.keySha256).toEqual([sha(String(keys.search))]);
  });

  it("a team moves from a generated key to a held one with a second entry (`ads:v2`)", async () => {
    const run = await runProgram(
      withOverrides(gpt2Config(), { serving: { consumers: { ads: {}, "ads:v2": { keySha256: [HELD] } } } }),
    );
    const keys = run.outputs.apiKeys as Record<string, string>;
    const ads = keysFile(run).find((c) => c.name === "ads");
    expect(ads?.keySha256).toEqual([sha(String(keys.ads)), HELD]);
    expect(keys["ads:v2"]).toBe(EXTERNAL_KEY);
  });

  const problems = (consumers: unknown) =>
    resolveStack(withOverrides(gpt2Config(), { serving: { consumers } }), {}, { today: "2026-12-01" }).problems;

  it("refuses a hash that is not 64 lower-case hex digits, naming the key, the value and how to compute it", () => {
    const bad = HELD.toUpperCase();
    expect(problems({ ads: { keySha256: [bad] } })).toEqual([
      expect.objectContaining({
        key: "triton-ft:serving.consumers.ads.keySha256[0]",
        value: bad,
        message: expect.stringMatching(/is not a SHA-256 in hex: 64 lower-case hex digits/),
      }),
    ]);
    expect(problems({ ads: { keySha256: [] } })[0]?.key).toBe("triton-ft:serving.consumers.ads.keySha256");
    expect(problems({ ads: { keySha256: [HELD.slice(1)] } })[0]?.key).toBe(
      "triton-ft:serving.consumers.ads.keySha256[0]",
    );
  });

  it("refuses one hash given twice (it would authenticate as two entries)", () => {
    expect(problems({ ads: { keySha256: [HELD] }, search: { keySha256: [HELD] } })).toEqual([
      expect.objectContaining({
        key: "triton-ft:serving.consumers",
        message: expect.stringMatching(/gives the same key hash more than once/),
      }),
    ]);
  });
});
