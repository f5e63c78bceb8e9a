/**
 * Node 26 is the pinned runtime (package.json engines, the gateway image's base). A locked
 * package whose `engines.node` excludes that version runs outside what its authors support,
 * and npm only warns (EBADENGINE). fastify 5.12.8 pulled light-my-request 6.8.1 -> cookie
 * 2.0.2 (node >= 22); the gateway pins light-my-request 6.6.0 through `overrides`.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import semver from "semver";
import { describe, expect, it } from "vitest";

const ROOT = path.resolve(__dirname, "../..");

/** The Node version the gateway image runs: its base image's tag. */
function imageNodeVersion(): string {
  const m = /^ARG NODE_IMAGE=node:(\d+\.\d+\.\d+)-/m.exec(
    readFileSync(path.join(ROOT, "images/gateway/Dockerfile"), "utf8"),
  );
  if (!m) throw new Error("images/gateway/Dockerfile: no ARG NODE_IMAGE=node:<version>-...");
  return m[1];
}

interface Lockfile {
  packages: Record<string, { version?: string; engines?: { node?: string } | string[] }>;
}

/** Locked packages whose engines.node range excludes `node`. */
export function packagesExcluding(lockfile: Lockfile, node: string): string[] {
  return Object.entries(lockfile.packages).flatMap(([where, p]) => {
    const range = p.engines && !Array.isArray(p.engines) ? p.engines.node : undefined;
    return range && !semver.satisfies(node, range) ? [`${where}@${p.version ?? "?"} needs node ${range}`] : [];
  });
}

describe("every locked package supports the pinned Node", () => {
  const node = imageNodeVersion();

  it("the pinned Node is 26 (package.json engines)", () => {
    const engines = (JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8")) as { engines: { node: string } })
      .engines.node;
    expect(semver.satisfies(node, engines)).toBe(true);
  });

  for (const lock of ["package-lock.json", "images/gateway/package-lock.json"]) {
    it(lock, () => {
      const lockfile = JSON.parse(readFileSync(path.join(ROOT, lock), "utf8")) as Lockfile;
      expect(packagesExcluding(lockfile, node)).toEqual([]);
    });
  }

  it("finds a package that excludes it", () => {
    const lockfile: Lockfile = { packages: { "node_modules/legacy": { version: "1.0.0", engines: { node: "^20" } } } };
    expect(packagesExcluding(lockfile, node)).toEqual(["node_modules/legacy@1.0.0 needs node ^20"]);
  });
});
