/**
 * A changed secret shows in the preview with what it does (infra/secretChanges.ts):
 * the stack keeps each secret's fingerprint in a secret output and its next
 * preview compares against it, through a reference to itself.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { fingerprint, secretChangeLines, SECRET_FINGERPRINTS_OUTPUT } from "../../infra/secretChanges";
import { gpt2Config } from "../lib/fixtures";
import { REFERENCED_STACKS } from "../lib/mocks";
import { runProgram } from "../lib/pulumi";

describe("secretChangeLines", () => {
  const before = { hfToken: "a", sshPrivateKey: "b" };

  it("says nothing on a stack's first update, nor when nothing changed", () => {
    expect(secretChangeLines(undefined, { hfToken: "a" }, false)).toEqual([]);
    expect(secretChangeLines(before, { ...before }, false)).toEqual([]);
  });

  it("names each secret that changed, was set or was removed, with what applying it does", () => {
    const lines = secretChangeLines(before, { hfToken: "c", kubeconfig: "k" }, false);
    expect(lines).toEqual([
      expect.stringMatching(/^this change: the secret triton-ft:hfToken changed: the fetch steps run again/),
      expect.stringMatching(/^this change: the secret triton-ft:kubeconfig was set: the Kubernetes provider takes it/),
      expect.stringMatching(
        /^this change: the secret triton-ft:sshPrivateKey was removed: every build step reconnects/,
      ),
    ]);
    expect(secretChangeLines(before, { hfToken: "c", sshPrivateKey: "b" }, true)).toEqual([
      expect.stringContaining("nothing: a promoted stack builds nothing"),
    ]);
  });
});

describe("under the program", () => {
  const SELF = "organization/triton-ft/test";
  afterEach(() => {
    REFERENCED_STACKS.clear();
    vi.restoreAllMocks();
  });

  /** The preview's info lines about secrets, with the last update's fingerprints in the stack's own outputs. */
  async function preview(previous: Record<string, string> | undefined, secrets: Record<string, string>) {
    if (previous)
      REFERENCED_STACKS.set(SELF, {
        name: SELF,
        outputs: { [SECRET_FINGERPRINTS_OUTPUT]: previous },
        secretOutputNames: [SECRET_FINGERPRINTS_OUTPUT],
      });
    const lines: string[] = [];
    vi.spyOn(console, "log").mockImplementation((m: unknown) => void lines.push(String(m)));
    const run = await runProgram(gpt2Config(), { secrets, preview: true });
    return { run, said: lines.filter((l) => l.includes("this change: the secret")) };
  }

  it("exports the fingerprints as a secret output, never the secret itself", async () => {
    const { run } = await preview(undefined, { hfToken: "hf_token_value" });
    expect(run.secretOutputs).toContain(SECRET_FINGERPRINTS_OUTPUT);
    expect(run.outputs[SECRET_FINGERPRINTS_OUTPUT]).toEqual({ hfToken: fingerprint("hfToken", "hf_token_value") });
    expect(JSON.stringify(run.outputs[SECRET_FINGERPRINTS_OUTPUT])).not.toContain("hf_token_value");
    expect(run.one("pulumi:pulumi:StackReference", "secret-fingerprints-ref").inputs.name).toBe(SELF);
  });

  it("logs a rotated token in the preview, and nothing when it is the same", async () => {
    const rotated = await preview({ hfToken: fingerprint("hfToken", "old") }, { hfToken: "new" });
    expect(rotated.said).toEqual([expect.stringContaining("the secret triton-ft:hfToken changed: the fetch steps")]);
    const same = await preview({ hfToken: fingerprint("hfToken", "new") }, { hfToken: "new" });
    expect(same.said).toEqual([]);
  });
});
