import { describe, expect, it } from "vitest";
import { configSchema } from "../../infra/config";
import { didYouMean, keyName, knownKeysAt, parseLeniently, touchesDropped } from "../../infra/config/issues";
import { namespaceKeys, unknownKeyProblems, type KnownKeys } from "../../infra/config/keys";

const P = "triton-ft";
const TOP = [
  "model",
  "build",
  "serving",
  "gemm",
  "cluster",
  "network",
  "tags",
  "hfToken",
  "kubeconfig",
  "sshPrivateKey",
];
const known: KnownKeys = { topLevel: TOP, nested: (k) => knownKeysAt(configSchema, [k]) };

const base = () => ({
  model: {
    preset: "gpt2",
    source: { huggingface: { repo: "openai-community/gpt2", revision: "607a30d783dfa663caf39e06633721c8d4cfcd7e" } },
  },
  build: { sshAllowedCidrs: ["203.0.113.7/32"] },
});

describe("unknown top-level keys", () => {
  it("reads only our namespace", () => {
    expect(namespaceKeys(["aws:region", "triton-ft:servng", "triton-ft:model", "pulumi:tags"], P)).toEqual([
      "servng",
      "model",
    ]);
  });

  it("refuses a misspelt key with a did-you-mean, never showing its value", () => {
    const [p, ...rest] = unknownKeyProblems(["servng", "model"], known, P);
    expect(rest).toEqual([]);
    expect(p).toMatchObject({ key: "triton-ft:servng", hideValue: true, value: undefined });
    expect(p?.fix).toContain("did you mean triton-ft:serving?");
    const [secretTypo] = unknownKeyProblems(["hftoken"], known, P);
    expect(secretTypo?.fix).toContain("did you mean triton-ft:hfToken?");
  });

  it("explains a dotted key set without --path and gives the command", () => {
    const [p] = unknownKeyProblems(["serving.replicas"], known, P);
    expect(p?.message).toContain("without --path");
    expect(p?.fix).toBe(
      "pulumi config rm triton-ft:serving.replicas && pulumi config set --path 'triton-ft:serving.replicas' <value>",
    );
    const [q] = unknownKeyProblems(["servng.replcas"], known, P);
    expect(q?.fix).toContain("--path 'triton-ft:serving.replicas'");
  });

  it("lists the keys when nothing is near", () => {
    const [p] = unknownKeyProblems(["zzzzzz"], known, P);
    expect(p?.fix).not.toContain("did you mean");
    expect(p?.fix).toContain("model, build, serving");
  });
});

describe("schema problems, phrased for a person", () => {
  const parse = (values: Record<string, unknown>) => parseLeniently(configSchema, values, P);

  it("names a nested unknown key itself and suggests the near match", () => {
    const { problems } = parse({ ...base(), serving: { replcas: 2 } });
    expect(problems).toEqual([
      expect.objectContaining({
        key: "triton-ft:serving.replcas",
        value: 2,
        fix: expect.stringMatching(/^did you mean replicas\?/),
      }),
    ]);
  });

  it("says which type to give, not 'set this key'", () => {
    const { problems } = parse({ ...base(), serving: { maxBatchSize: "eight", stopBuilderWhenDone: undefined } });
    expect(problems[0]).toMatchObject({
      key: "triton-ft:serving.maxBatchSize",
      message: "is text but must be a number",
      fix: "give a whole number of at least 1",
    });
    const b = parse({ ...base(), build: { ...base().build, stopBuilderWhenDone: "yes" } }).problems[0];
    expect(b).toMatchObject({ fix: "give true or false" });
  });

  it("names the range of a bounded number", () => {
    const { problems } = parse({ ...base(), serving: { idleTimeoutSeconds: 10 } });
    expect(problems[0]).toMatchObject({
      key: "triton-ft:serving.idleTimeoutSeconds",
      message: "is out of range: it must be a whole number from 60 to 6000",
      fix: "use a whole number from 60 to 6000",
    });
  });

  it("reports a model.source missing its revision by name, with the required shape", () => {
    const { problems } = parse({
      ...base(),
      model: { preset: "gpt2", source: { huggingface: { repo: "openai-community/gpt2" } } },
    });
    expect(problems).toHaveLength(1);
    expect(problems[0]?.key).toBe("triton-ft:model.source.huggingface.revision");
    expect(problems[0]?.message).toBe("is required");
    expect(problems[0]?.fix).toMatch(/40 hex/);
  });

  it("shows the real shapes for a source of neither kind", () => {
    const { problems } = parse({ ...base(), model: { preset: "gpt2", source: { git: "x" } } });
    expect(problems[0]?.key).toBe("triton-ft:model.source");
    expect(problems[0]?.fix).toContain(
      "{huggingface: {repo, revision}} or {archive: {url?, sha256, tokenizerRevision}}",
    );
  });

  it("hints to quote an all-digit sha256 that YAML read as a number", () => {
    const { problems } = parse({
      ...base(),
      model: {
        preset: "gpt-j-6b-jax",
        source: { archive: { sha256: 1.2345e63, tokenizerRevision: "47e169305d2e8376be1d31e765533382721b2cc1" } },
      },
    });
    expect(problems[0]).toMatchObject({
      key: "triton-ft:model.source.archive.sha256",
      fix: expect.stringMatching(/^quote it/),
    });
  });

  it("suggests the near enum value", () => {
    const { problems } = parse({ ...base(), serving: { loadBalancerScheme: "internet_facing" } });
    expect(problems[0]?.fix).toMatch(/^did you mean internet-facing\?/);
  });

  it("still yields a config (defaults in place of bad values) so rules can run, and says what was dropped", () => {
    const r = parse({ ...base(), serving: { replcas: 2, idleTimeoutSeconds: 10 }, build: { sshAllowedCidrs: 5 } });
    expect(r.problems.map((p) => p.key).sort()).toEqual([
      "triton-ft:build.sshAllowedCidrs",
      "triton-ft:serving.idleTimeoutSeconds",
      "triton-ft:serving.replcas",
    ]);
    expect(r.config?.serving.idleTimeoutSeconds).toBe(1200);
    expect(touchesDropped("triton-ft:build.sshAllowedCidrs", r.dropped)).toBe(true);
    expect(touchesDropped("triton-ft:serving.tensorParallel", r.dropped)).toBe(false);
  });
});

describe("helpers", () => {
  it("formats keys with list indices", () => {
    expect(keyName(P, ["build", "sshAllowedCidrs", 1])).toBe("triton-ft:build.sshAllowedCidrs[1]");
  });
  it("did-you-mean stays quiet for far words", () => {
    expect(didYouMean("replicas", ["tensorParallel", "namespace"])).toBeUndefined();
    expect(didYouMean("Serving", ["serving"])).toBe("serving");
  });
});
