import * as fs from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = path.resolve(__dirname, "../..");

describe("delivery pins", () => {
  it("the workflows' Pulumi CLI (.pulumi.version) is the SDK version the lockfile pins", () => {
    const cli = fs.readFileSync(path.join(ROOT, ".pulumi.version"), "utf8").trim();
    const lock = JSON.parse(fs.readFileSync(path.join(ROOT, "package-lock.json"), "utf8")) as {
      packages: Record<string, { version?: string }>;
    };
    expect(cli).toMatch(/^\d+\.\d+\.\d+$/);
    expect(cli).toBe(lock.packages["node_modules/@pulumi/pulumi"]?.version);
  });
});
