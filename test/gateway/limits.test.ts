/**
 * Limits and protection, against the real server: per-key rate and
 * concurrency limits (429 + Retry-After), a client disconnect that keeps the
 * slot until FT has finished, a request timeout, the KServe v2 API of the ensemble, the
 * metrics listener and logs without prompt text.
 */
import { readFileSync } from "node:fs";
import { describe, expect, inject, it } from "vitest";
import { METRICS } from "../../images/gateway/src/telemetry/metrics";
import { sleep } from "../lib/net";

const h = inject("gateway");
/** A test that needs the FT stand-in (its echo, step time, hold file or FT-only refusals): skipped in vLLM mode. */
const itOnFt = it.skipIf(h.upstream === "vllm");
const MODEL = h.model.id;

function post(base: string, key: string, path: string, body: unknown, signal?: AbortSignal): Promise<Response> {
  return fetch(`${base}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body),
    signal,
  });
}

async function metric(name: string, labels: Record<string, string>): Promise<number> {
  const text = await (await fetch(`${h.main.metricsUrl}/metrics`)).text();
  let total = 0;
  for (const line of text.split("\n")) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) total += Number(line.split(" ").pop());
  }
  return total;
}

describe("per-key limits", () => {
  it("answers 429 with Retry-After once a key's request rate is used up; other keys are unaffected", async () => {
    const key = h.main.keys["rate-limited"]; // 3 requests per minute
    const body = { model: MODEL, prompt: "hi", max_tokens: 1, temperature: 0 };
    const statuses: number[] = [];
    let limited: Response | undefined;
    for (let i = 0; i < 4; i++) {
      const r = await post(h.main.url, key, "/v1/completions", body);
      statuses.push(r.status);
      if (r.status === 429) limited = r;
      else await r.text();
    }
    expect(statuses).toEqual([200, 200, 200, 429]);
    expect(Number(limited?.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(((await limited?.json()) as { error: { code: string } }).error.code).toBe("rate_limit_exceeded");
    const other = await post(h.main.url, h.main.keys["team-b"], "/v1/completions", body);
    expect(other.status).toBe(200);
  });

  it("answers 429 concurrency_limit_exceeded for a second generation in flight on a one-at-a-time key", async () => {
    const key = h.main.keys["one-at-a-time"];
    const long = post(h.main.url, key, "/v1/completions", {
      model: MODEL,
      prompt: "one two three four five six",
      max_tokens: h.model.maxOutputLen,
      temperature: 0,
    });
    await sleep(100);
    const second = await post(h.main.url, key, "/v1/completions", { model: MODEL, prompt: "x", max_tokens: 1 });
    expect(second.status).toBe(429);
    expect(second.headers.get("retry-after")).toBe("1");
    expect(((await second.json()) as { error: { code: string } }).error.code).toBe("concurrency_limit_exceeded");
    expect((await long).status).toBe(200);
    const after = await post(h.main.url, key, "/v1/completions", { model: MODEL, prompt: "x", max_tokens: 1 });
    expect(after.status).toBe(200);
  });
});

describe("client disconnect and timeouts", () => {
  // FT cannot cancel; vLLM aborts the dropped stream at once (that path: test/vllm/gateway.test.ts).
  itOnFt(
    "a client gone mid-stream keeps the key's slot until FT has finished the generation; usage counts it all",
    async () => {
      const key = h.main.keys["one-at-a-time"];
      const usage = async (): Promise<{ requests: number; completion_tokens: number }> => {
        const r = await fetch(`${h.main.url}/v1/usage`, { headers: { authorization: `Bearer ${key}` } });
        return ((await r.json()) as { today: { total: { requests: number; completion_tokens: number } } }).today.total;
      };
      const before = await usage();
      const controller = new AbortController();
      const started = performance.now();
      const maxTokens = Math.min(40, h.model.maxOutputLen);
      const response = await post(
        h.main.url,
        key,
        "/v1/completions",
        {
          model: MODEL,
          prompt: "one two three four five six seven eight",
          max_tokens: maxTokens,
          temperature: 0,
          stream: true,
        },
        controller.signal,
      );
      expect(response.status).toBe(200);
      const reader = response.body!.getReader();
      await reader.read(); // the first chunk: generation is under way
      controller.abort();
      await sleep(100);
      // FT cannot cancel: the generation runs on in Triton, and holds the team's one slot.
      const refused = await post(h.main.url, key, "/v1/completions", { model: MODEL, prompt: "x", max_tokens: 1 });
      expect(refused.status).toBe(429);
      expect(((await refused.json()) as { error: { code: string } }).error.code).toBe("concurrency_limit_exceeded");
      let status = 0;
      while (status !== 200 && performance.now() - started < maxTokens * h.stepMs + 5000) {
        const r = await post(h.main.url, key, "/v1/completions", {
          model: MODEL,
          prompt: "x",
          max_tokens: 1,
          temperature: 0,
        });
        status = r.status;
        await r.text();
        if (status !== 200) await sleep(25);
      }
      expect(status).toBe(200);
      // Freed only once the stand-in had generated every token.
      expect(performance.now() - started).toBeGreaterThan(maxTokens * h.stepMs * 0.9);
      const after = await usage();
      expect(after.requests - before.requests).toBe(2);
      // The abandoned request's every generated token, plus the one of the last request.
      expect(after.completion_tokens - before.completion_tokens).toBe(maxTokens + 1);
    },
  );

  // Needs generations longer than 1 s: the stand-in's step time makes them so; the tiny vLLM model's 64 tokens take less.
  itOnFt("answers 504 when a generation outlives the request timeout (1 s on the plain gateway)", async () => {
    // Three concurrent full-length generations queue behind each other in the stand-in; the last one times out.
    const body = {
      model: MODEL,
      prompt: "one two three four five six seven eight nine ten",
      max_tokens: h.model.maxOutputLen,
      temperature: 0,
    };
    const statuses = await Promise.all(
      Array.from({ length: 6 }, async () => {
        const r = await post(h.plain.url, h.plain.keys["team-a"], "/v1/completions", body);
        const json = (await r.json()) as { error?: { code: string } };
        return { status: r.status, code: json.error?.code };
      }),
    );
    expect(statuses.some((s) => s.status === 504 && s.code === "timeout")).toBe(true);
    expect(statuses.every((s) => s.status === 200 || s.status === 504 || s.status === 429)).toBe(true);
  });
});

describe("KServe v2 through the gateway", () => {
  const headers = { authorization: `Bearer ${h.main.keys["team-a"]}` };

  it("serves health, the model's ensemble's metadata and readiness under the model id", async () => {
    expect((await fetch(`${h.main.url}/v2/health/ready`, { headers })).status).toBe(200);
    expect((await fetch(`${h.main.url}/v2/health/live`, { headers })).status).toBe(200);
    expect((await fetch(`${h.main.url}/v2/models/${MODEL}/ready`, { headers })).status).toBe(200);
    const meta = (await (await fetch(`${h.main.url}/v2/models/${MODEL}`, { headers })).json()) as {
      name: string;
      inputs: { name: string }[];
    };
    expect(meta.name).toBe(MODEL);
    expect(meta.inputs.map((i) => i.name)).toContain("text_input");
  });

  it("runs a batch through infer with JSON tensors", async () => {
    const r = await post(h.main.url, h.main.keys["team-a"], `/v2/models/${MODEL}/infer`, {
      id: "req-7",
      inputs: [
        { name: "text_input", datatype: "BYTES", shape: [2, 1], data: ["alpha beta gamma", "delta"] },
        { name: "max_tokens", datatype: "UINT32", shape: [2, 1], data: [3, 1] },
      ],
    });
    expect(r.status).toBe(200);
    const body = (await r.json()) as {
      id: string;
      outputs: { name: string; shape: number[]; data: (string | number)[] }[];
    };
    expect(body.id).toBe("req-7");
    const out = Object.fromEntries(body.outputs.map((o) => [o.name, o]));
    expect(out.text_output.shape).toEqual([2, 1]);
    // The stand-in's echo of each prompt; a random vLLM checkpoint's text is arbitrary.
    if (h.upstream === "ft") {
      expect(out.text_output.data[0], JSON.stringify(body)).toMatch(/^alph/);
      expect(out.text_output.data[1]).toBe("del");
    }
    expect(out.output_token_count.data).toEqual([3, 1]);
  });
});

describe("observability", () => {
  it("exports the documented metrics per consumer, on the metrics listener only", async () => {
    await post(h.main.url, h.main.keys["team-b"], "/v1/completions", {
      model: MODEL,
      prompt: "count me",
      max_tokens: 2,
      temperature: 0,
    });
    await (await post(h.main.url, "not-a-key", "/v1/completions", {})).text();
    const text = await (await fetch(`${h.main.metricsUrl}/metrics`)).text();
    for (const name of Object.values(METRICS)) expect(text, name).toContain(name);
    expect(
      await metric(METRICS.requests, { consumer: "team-b", route: "/v1/completions", status: "200" }),
    ).toBeGreaterThan(0);
    expect(await metric(METRICS.errors, { status: "401", consumer: "anonymous" })).toBeGreaterThan(0);
    expect(await metric(`${METRICS.timeToFirstToken}_count`, { consumer: "team-b" })).toBeGreaterThan(0);
  });

  it("logs JSON lines without the prompt or completion text", async () => {
    const marker = `secret-prompt-${Date.now()}`;
    const r = await post(h.main.url, h.main.keys["team-a"], "/v1/completions", {
      model: MODEL,
      prompt: marker,
      max_tokens: 3,
      temperature: 0,
    });
    expect(r.status).toBe(200);
    await sleep(200);
    // JSON lines only: Node's own warnings go to stderr as plain text.
    const lines = readFileSync(h.main.log, "utf8")
      .trim()
      .split("\n")
      .filter((l) => l.startsWith("{"));
    const entries = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(entries.some((e) => e.consumer === "team-a" && e.route === "/v1/completions" && e.status === 200)).toBe(
      true,
    );
    expect(lines.join("\n")).not.toContain(marker);
    expect(lines.join("\n")).not.toContain(h.main.keys["team-a"]);
  });
});
