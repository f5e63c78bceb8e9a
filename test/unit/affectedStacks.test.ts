import { describe, expect, it } from "vitest";
import { affectedStacks } from "../../scripts/ci/affected-stacks";

const STACKS = ["dev", "prod"];

describe("stacks a pull request previews", () => {
  it("a stack file previews only that stack", () => {
    expect(affectedStacks(["Pulumi.prod.yaml"], STACKS).stacks).toEqual(["prod"]);
    expect(affectedStacks(["Pulumi.prod.yaml", "README.md", "test/unit/x.test.ts"], STACKS).stacks).toEqual(["prod"]);
  });

  it("shared code, the project file, the lockfile or the policy pack preview every stack", () => {
    for (const f of [
      "infra/components/builder.ts",
      "Pulumi.yaml",
      "package-lock.json",
      "policy/index.ts",
      "scripts/remote/bake.sh",
      "images/server/Dockerfile",
    ]) {
      expect(affectedStacks([f, "Pulumi.dev.yaml"], STACKS).stacks, f).toEqual(["dev", "prod"]);
    }
  });

  it("docs, tests and CI definitions preview nothing", () => {
    const r = affectedStacks(
      ["README.md", "docs/a.md", "test/unit/a.test.ts", ".github/workflows/preview.yml", ".ci/run"],
      STACKS,
    );
    expect(r).toEqual({ stacks: [], reason: "no change that affects a deployment" });
  });

  it("a deleted or unknown stack file previews nothing", () => {
    expect(affectedStacks(["Pulumi.staging.yaml"], STACKS).stacks).toEqual([]);
  });
});
