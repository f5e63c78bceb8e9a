/**
 * One Node runtime everywhere. `.node-version` names it (the version `.ci/run` installs and the
 * workflows' setup-node reads); `engines` in both package.json files, the gateway image's base and
 * every locked package must agree with it. A locked package whose `engines.node` excludes the
 * runtime runs outside what its authors support, and npm only warns (EBADENGINE), so the test is
 * the gate. The gateway's own lockfile (its image installs from it) must lock the versions the
 * root workspace tests.
 */
import { readFileSync, readdirSync } from "node:fs";
import path from "node:path";
import semver from "semver";
import { parse } from "yaml";
import { describe, expect, it } from "vitest";
import { GATEWAY_NODE_IMAGE } from "../../infra/catalog/images";

const ROOT = path.resolve(__dirname, "../..");
const read = (file: string): string => readFileSync(path.join(ROOT, file), "utf8");

/** The Node version the project runs on. */
function runtimeNodeVersion(): string {
  const v = read(".node-version").trim();
  if (!semver.valid(v)) throw new Error(`.node-version: '${v}' is not an exact version`);
  return v;
}

/** The Node version the gateway image runs (supportCatalog.test.ts ties the Dockerfile to this pin). */
const imageNodeVersion = (): string => GATEWAY_NODE_IMAGE.version;

interface Lockfile {
  packages: Record<string, { version?: string; engines?: { node?: string } | string[]; link?: boolean }>;
}
const lockfile = (file: string): Lockfile => JSON.parse(read(file)) as Lockfile;

/** Locked packages whose engines.node range excludes `node`. */
export function packagesExcluding(lock: Lockfile, node: string): string[] {
  return Object.entries(lock.packages).flatMap(([where, p]) => {
    const range = p.engines && !Array.isArray(p.engines) ? p.engines.node : undefined;
    return range && !semver.satisfies(node, range) ? [`${where}@${p.version ?? "?"} needs node ${range}`] : [];
  });
}

/** `name@version` of every installed package of a lockfile (links and the root left out). */
function lockedVersions(lock: Lockfile): Set<string> {
  const out = new Set<string>();
  for (const [where, p] of Object.entries(lock.packages)) {
    const i = where.lastIndexOf("node_modules/");
    if (i < 0 || p.link || !p.version) continue;
    out.add(`${where.slice(i + "node_modules/".length)}@${p.version}`);
  }
  return out;
}

/** Packages the gateway image would install at a version the root workspace does not test. */
export function gatewayDrift(gatewayLock: Lockfile, rootLock: Lockfile): string[] {
  const tested = lockedVersions(rootLock);
  return [...lockedVersions(gatewayLock)].filter((v) => !tested.has(v)).sort();
}

describe("one Node runtime, and every locked package supports it", () => {
  const node = runtimeNodeVersion();

  it("engines in both package.json files admit .node-version, and only its major", () => {
    for (const file of ["package.json", "images/gateway/package.json"]) {
      const engines = (JSON.parse(read(file)) as { engines: { node: string } }).engines.node;
      expect(semver.satisfies(node, engines), file).toBe(true);
      const otherMajor = `${semver.major(node) - 2}.0.0`;
      expect(semver.satisfies(otherMajor, engines), `${file} admits ${otherMajor}`).toBe(false);
    }
  });

  it("the gateway image runs the same Node major", () => {
    expect(semver.major(imageNodeVersion())).toBe(semver.major(node));
  });

  it("every workflow's setup-node reads .node-version", () => {
    const dir = path.join(ROOT, ".github/workflows");
    let steps = 0;
    for (const file of readdirSync(dir).filter((f) => f.endsWith(".yml"))) {
      const wf = parse(readFileSync(path.join(dir, file), "utf8")) as {
        jobs: Record<string, { steps?: { uses?: string; with?: Record<string, unknown> }[] }>;
      };
      for (const job of Object.values(wf.jobs))
        for (const s of (job.steps ?? []).filter((x) => x.uses?.startsWith("actions/setup-node@"))) {
          steps++;
          expect(s.with?.["node-version-file"], file).toBe(".node-version");
          expect(s.with?.["node-version"], file).toBeUndefined();
        }
    }
    expect(steps).toBeGreaterThan(0);
  });

  for (const lock of ["package-lock.json", "images/gateway/package-lock.json"]) {
    it(`${lock}: no package excludes the runtime or the image's Node`, () => {
      expect(packagesExcluding(lockfile(lock), node)).toEqual([]);
      expect(packagesExcluding(lockfile(lock), imageNodeVersion())).toEqual([]);
    });
  }

  it("the gateway image locks only versions the root workspace installs and tests", () => {
    expect(gatewayDrift(lockfile("images/gateway/package-lock.json"), lockfile("package-lock.json"))).toEqual([]);
  });

  it("finds a package that excludes the runtime", () => {
    const lock: Lockfile = { packages: { "node_modules/cookie": { version: "2.0.2", engines: { node: ">=28" } } } };
    expect(packagesExcluding(lock, node)).toEqual(["node_modules/cookie@2.0.2 needs node >=28"]);
  });

  it("finds a gateway package at a version the root does not lock", () => {
    const root: Lockfile = { packages: { "node_modules/fastify": { version: "5.12.8" } } };
    const gw: Lockfile = { packages: { "node_modules/fastify": { version: "5.12.9" } } };
    expect(gatewayDrift(gw, root)).toEqual(["fastify@5.12.9"]);
  });
});
