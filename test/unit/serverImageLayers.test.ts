/**
 * Cold start: the server image's layer order (docs/scaling.md "Cold start: image layers and pulling"). The weights
 * layer sits directly on the triton_with_ft base and every file that changes with
 * the serving config comes after it, so a config-only change rebuilds, pushes and
 * pulls only small layers (EKS AL2023 nodes discard compressed layers after
 * unpacking, so a weights layer above a changed layer would be downloaded again).
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

const DOCKERFILE = path.resolve(__dirname, "../../images/server/Dockerfile");

/** Instructions that create filesystem layers, in order, with their first source argument. */
export function layerSources(dockerfile: string): Array<{ instruction: string; source: string }> {
  const lines = dockerfile
    .replace(/\\\n/g, " ")
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "" && !l.startsWith("#"));
  const fromIndex = lines.findIndex((l) => /^FROM\s/i.test(l));
  return lines
    .slice(fromIndex + 1)
    .filter((l) => /^(COPY|ADD|RUN)\s/i.test(l))
    .map((l) => {
      const words = l.split(/\s+/).filter((w) => !w.startsWith("--"));
      return { instruction: words[0].toUpperCase(), source: words[1] ?? "" };
    });
}

describe("server image layers", () => {
  const layers = layerSources(readFileSync(DOCKERFILE, "utf8"));

  it("puts the weights in the first layer above the base image, once", () => {
    expect(layers[0]).toEqual({ instruction: "COPY", source: "weights/" });
    expect(layers.filter((l) => l.source.startsWith("weights"))).toHaveLength(1);
  });

  it("puts every config-dependent file in later, small layers", () => {
    const later = layers.slice(1).map((l) => l.source);
    for (const small of ["gemm_config.in", "model-repository/", "python/", "python-models/", "tokenizer/", "serve"]) {
      expect(later, small).toContain(small);
    }
    // No RUN after the weights: a RUN layer could rewrite (and so duplicate) the weight files.
    expect(layers.slice(1).filter((l) => l.instruction === "RUN")).toEqual([]);
  });

  it("the parser sees a reordering", () => {
    const swapped = "FROM base\nCOPY tokenizer/ /t/\nCOPY weights/ /w/\n";
    expect(layerSources(swapped)[0].source).toBe("tokenizer/");
  });
});
