/**
 * `npm run smoke -- --openai` through the gateway, as a consuming team runs it
 * against the stack's outputs (openaiBaseUrl, apiKeys.<team>).
 */
import { execFile } from "node:child_process";
import path from "node:path";
import { promisify } from "node:util";
import { describe, expect, inject, it } from "vitest";

const h = inject("gateway");
const ROOT = path.resolve(__dirname, "../..");
const run = promisify(execFile);

async function smoke(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(
      process.execPath,
      [path.join(ROOT, "node_modules/tsx/dist/cli.mjs"), "scripts/smoke.ts", ...args],
      {
        cwd: ROOT,
      },
    );
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe("smoke CLI through the gateway", () => {
  it("lists the model, completes, streams, and exits 0", async () => {
    const r = await smoke([
      "--openai",
      `${h.main.url}/v1`,
      "--api-key",
      h.main.keys["team-a"],
      "--prompt",
      "hello world",
      "--max-tokens",
      "4",
    ]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`models ${h.model.id}`);
    expect(r.stdout).toMatch(/stream: \d+ chunk\(s\), first token after/);
    expect(r.stdout).toContain("smoke: OK");
  });

  it("fails with exit 1 and says why on a wrong key", async () => {
    const r = await smoke(["--openai", `${h.main.url}/v1`, "--api-key", "tft-wrong"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/smoke: FAILED: .*invalid API key/);
  });
});
