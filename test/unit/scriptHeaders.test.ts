/**
 * The remote step scripts' headers and `require_vars` against the step
 * definitions that render their configs (infra/plan/steps.ts), for every seed
 * deployment and both committed stacks: a key the plan emits must be
 * documented, a key a script requires must be emitted, and a path a header
 * gives as an example must be one the plan really renders. Also keeps lib.sh's
 * digest-reference pattern equal to infra/imageRef.ts.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { DIGEST_REF } from "../../infra/imageRef";
import { namePrefix, repositoryNames } from "../../infra/naming";
import type { StepId } from "../../infra/plan/stepGraph";
import type { ResolvedStack } from "../../infra/config";
import { parseStackFile } from "../../infra/synth/stackFile";
import { resolveStack } from "../../infra/resolve";
import { planOf } from "../lib/plan";
import { SEED_CASES } from "./seedCases";

const ROOT = join(__dirname, "..", "..");

function resolved(raw: Record<string, unknown>): ResolvedStack {
  const { stack, problems } = resolveStack(raw, {});
  if (!stack) throw new Error(JSON.stringify(problems));
  return stack;
}

const committed = (name: string) =>
  parseStackFile(readFileSync(join(ROOT, `Pulumi.${name}.yaml`), "utf8"), `Pulumi.${name}.yaml`).raw;
const STACKS = [...SEED_CASES.map((c) => resolved(c.config)), resolved(committed("dev")), resolved(committed("prod"))];

/** Per step: the keys every stack emits, the keys some stack emits, and every string value seen per key. */
function emitted(): Map<StepId, { all: Set<string>; some: Set<string>; values: Map<string, Set<string>> }> {
  const out = new Map<StepId, { all: Set<string>; some: Set<string>; values: Map<string, Set<string>> }>();
  for (const stack of STACKS) {
    for (const step of planOf(stack, (p) => `h:${p}`).buildSteps) {
      const keys = new Set(step.config.map(([k]) => k));
      const entry = out.get(step.id) ?? { all: new Set(keys), some: new Set<string>(), values: new Map() };
      for (const k of [...entry.all]) if (!keys.has(k)) entry.all.delete(k);
      for (const [k, v] of step.config) {
        entry.some.add(k);
        if (typeof v === "string" || typeof v === "number") {
          const seen = entry.values.get(k) ?? new Set<string>();
          seen.add(String(v));
          entry.values.set(k, seen);
        }
      }
      out.set(step.id, entry);
    }
  }
  return out;
}

interface HeaderKey {
  key: string;
  type: string;
  optional: boolean;
  example?: string;
  /** The script's default when the key is unset. */
  fallback?: string;
}

/** `#   NAME   string|int|array   description [e.g. '<example>' | default '<value>']` lines of the header. */
function headerKeys(script: string): HeaderKey[] {
  const header = script.slice(0, script.indexOf("\nset -euo pipefail"));
  const keys: HeaderKey[] = [];
  for (const line of header.split("\n")) {
    const m = /^#\s{2,}([A-Z][A-Z0-9_]+)\s+(string|int|array)\s+(.*)$/.exec(line);
    if (!m?.[1] || !m[2]) continue;
    const rest = m[3] ?? "";
    keys.push({
      key: m[1],
      type: m[2],
      optional: /^Optional;/.test(rest) || /\bdefault\b/.test(rest),
      example: /e\.g\. '([^']*)'/.exec(rest)?.[1],
      fallback: /default '([^']*)'/.exec(rest)?.[1],
    });
  }
  return keys;
}

/** Keys of every `require_vars` call; `top` holds those called unconditionally (at column 0). */
function requiredVars(script: string): { top: string[]; any: string[] } {
  const joined = script.replace(/\\\n\s*/g, " ");
  const top: string[] = [];
  const any: string[] = [];
  for (const line of joined.split("\n")) {
    const m = /^(\s*)require_vars\s+([A-Z0-9_ ]+)/.exec(line);
    if (!m?.[2]) continue;
    const names = m[2].trim().split(/\s+/);
    any.push(...names);
    if (m[1] === "") top.push(...names);
  }
  return { top, any };
}

/** The ECR repository (dev stack) behind each deploy-time key whose example names one. */
function deployedRepository(id: StepId, key: string): string | undefined {
  const dev = repositoryNames(namePrefix("dev"));
  if (key === "IMAGE" || key === "BASE_IMAGE") return dev.tritonWithFt;
  if (key === "ECR_REPOSITORY_URL")
    return id === "bake" ? dev.server : id === "gateway-image" ? dev.gateway : dev.tritonWithFt;
  return undefined;
}

const SCRIPTS: Record<StepId, string> = {
  "host-ready": "scripts/remote/host-ready.sh",
  "triton-with-ft": "scripts/remote/build-triton-with-ft.sh",
  "twf-layers": "scripts/remote/build-twf-layers.sh",
  "twf-layers-pull": "scripts/remote/pull-twf-layers.sh",
  fetch: "scripts/remote/fetch.sh",
  convert: "scripts/remote/convert.sh",
  gemm: "scripts/remote/gemm.sh",
  bake: "scripts/remote/bake.sh",
  "gateway-image": "scripts/remote/build-gateway-image.sh",
};

describe("remote step scripts against the step definitions", () => {
  const steps = emitted();

  it("covers all nine steps, each with its script", () => {
    expect([...steps.keys()].sort()).toEqual(Object.keys(SCRIPTS).sort());
    for (const stack of STACKS.slice(0, 1))
      for (const s of planOf(stack, (p) => `h:${p}`).buildSteps) expect(s.script).toBe(SCRIPTS[s.id]);
  });

  for (const [id, path] of Object.entries(SCRIPTS) as Array<[StepId, string]>) {
    describe(id, () => {
      const script = readFileSync(join(ROOT, path), "utf8");
      const header = headerKeys(script);
      const documented = new Set(header.map((h) => h.key));
      const required = requiredVars(script);
      const step = steps.get(id);
      if (!step) throw new Error(`no step ${id}`);

      it("documents every key the plan emits", () => {
        expect([...step.some].filter((k) => !documented.has(k))).toEqual([]);
      });

      it("requires only keys the plan emits, and unconditionally only keys every stack gets", () => {
        expect(required.any.filter((k) => !step.some.has(k))).toEqual([]);
        expect(required.top.filter((k) => !step.all.has(k))).toEqual([]);
      });

      it("documents as required only keys the plan emits", () => {
        const mandatory = header.filter((h) => !h.optional).map((h) => h.key);
        expect(mandatory.filter((k) => !step.some.has(k))).toEqual([]);
      });

      it("gives as example paths only paths the plan renders, and ECR names as the stack names them", () => {
        const wrong: string[] = [];
        for (const h of header) {
          // A path default of a key the plan always sets must be what the plan sets.
          const fallback = h.fallback;
          if (fallback?.startsWith("/") && step.all.has(h.key) && !step.values.get(h.key)?.has(fallback))
            wrong.push(`${h.key} default ${fallback}`);
          const ex = h.example;
          if (h.type === "array" || !ex) continue;
          if (ex.startsWith("/") && !step.values.get(h.key)?.has(ex)) wrong.push(`${h.key} e.g. ${ex}`);
          const deployed = deployedRepository(id, h.key);
          if (deployed && ex.split("/").slice(1).join("/").split("@")[0] !== deployed)
            wrong.push(`${h.key} e.g. ${ex}: the repository is ${deployed}`);
        }
        expect(wrong).toEqual([]);
      });
    });
  }

  it("lib.sh's digest pattern is infra/imageRef.ts's DIGEST_REF", () => {
    const lib = readFileSync(join(ROOT, "scripts/remote/lib.sh"), "utf8");
    const bash = /^DIGEST_REF_RE='([^']+)'$/m.exec(lib)?.[1];
    expect(bash).toBe(DIGEST_REF.source.replace(/\\\//g, "/"));
  });
});
