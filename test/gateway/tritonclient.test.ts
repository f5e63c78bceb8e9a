/**
 * Existing tritonclient users: the official Python `tritonclient[http]`, with
 * its defaults (the binary tensor data extension both ways) and with
 * binary_data=False, against the gateway in front of the real tritonserver.
 * The client runs as its own process (test/gateway/tritonclient_http.py) from
 * the real-server venv; this file judges what it saw.
 */
import { execFileSync } from "node:child_process";
import path from "node:path";
import { beforeAll, describe, expect, inject, it } from "vitest";
import { venvPython } from "../lib/pyenv";
import { ROOT } from "./harness";

const h = inject("gateway");

interface Run {
  id: string;
  binary_outputs: string[];
  text: string[];
  text_shape: number[];
  output_token_count: number[];
  input_token_count: number[] | null;
}
interface Seen {
  live: boolean;
  ready: boolean;
  model_ready: boolean;
  server_extensions: string[];
  metadata_inputs: string[];
  binary_default: Run;
  json_only: Run;
  mixed: Run;
  binary_sampling: Run;
  after_errors: Run;
  errors: Record<string, { status: string | null; message?: string }>;
}

let seen: Seen;

beforeAll(() => {
  const python = venvPython();
  const hostPort = new URL(h.main.url).host;
  const stdout = execFileSync(
    python,
    [path.join(ROOT, "test/gateway/tritonclient_http.py"), hostPort, h.main.keys["team-a"], h.model.id],
    { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"], timeout: 120_000 },
  );
  seen = JSON.parse(stdout.trim().split("\n").pop() ?? "{}") as Seen;
}, 180_000);

describe("tritonclient (HTTP) through the gateway", () => {
  it("sees health, readiness, the binary extension and the model's metadata (by its id)", () => {
    expect(seen.live && seen.ready && seen.model_ready).toBe(true);
    expect(seen.server_extensions).toContain("binary_tensor_data");
    expect(seen.metadata_inputs).toContain("text_input");
  });

  it("infers with the client's defaults: binary inputs, every output binary", () => {
    const r = seen.binary_default;
    expect(r.binary_outputs).toEqual(["input_token_count", "output_token_count", "text_output"]);
    expect(r.id).toBe("binary_default");
    expect(r.text_shape).toEqual([3, 1]);
    // The stand-in's echo of the prompt; a random vLLM checkpoint's text is arbitrary.
    if (h.upstream === "ft") expect(r.text[0]).toMatch(/^alph/);
    expect(r.output_token_count).toEqual([3, 1, 4]);
    // The stand-in echoes the prompt; a random vLLM checkpoint may sample lone bytes that complete no character.
    if (h.upstream === "ft") expect(r.text[2].length).toBeGreaterThan(0);
  });

  it("answers the same with JSON tensors (binary_data=False) and with mixed outputs", () => {
    // The script's batch is sampled: the stand-in's echo is the same text every time, vLLM's is not.
    const strip = (r: Run): Omit<Run, "id" | "binary_outputs"> => ({
      text: h.upstream === "ft" ? r.text : r.text.map(() => "(sampled)"),
      text_shape: r.text_shape,
      output_token_count: r.output_token_count,
      input_token_count: r.input_token_count,
    });
    expect(seen.json_only.binary_outputs).toEqual([]);
    expect(strip(seen.json_only)).toEqual(strip(seen.binary_default));
    expect(seen.mixed.binary_outputs).toEqual(["text_output"]);
    expect(strip(seen.mixed)).toEqual(strip(seen.binary_default));
    // Unicode prompt text arrives intact through the binary BYTES encoding (echoed by the stand-in only).
    if (h.upstream === "ft") expect(seen.binary_default.text[2]).not.toContain("\ufffd");
  });

  it("takes binary FP32, UINT32 and UINT64 inputs (a seed above 2^53)", () => {
    expect(seen.binary_sampling.output_token_count).toEqual([2]);
    expect(seen.binary_sampling.text[0].length).toBeGreaterThan(0);
  });

  it("reports refusals as client errors with their HTTP status, and serves on", () => {
    expect(seen.errors.max_tokens_too_large.status).toBe("400");
    expect(seen.errors.max_tokens_too_large.message).toMatch(/max_tokens/);
    expect(seen.errors.empty_prompt.status).toBe("400");
    expect(seen.errors.bad_key.status).toBe("401");
    expect(seen.after_errors.output_token_count).toEqual([3, 1, 4]);
  });
});
