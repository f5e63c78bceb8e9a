/**
 * Smoke test through the gateway, as a consuming team calls it: the official
 * `openai` client against the stack's `openaiBaseUrl` with a team's key.
 *
 *   npm run smoke -- --openai <openaiBaseUrl> --api-key <key> [--prompt TEXT]... [--max-tokens N]
 *                    [--wait SECS] [--timeout SECS]
 *
 * Lists the models, sends each prompt as a completion, streams the first one
 * (time to first token and chunk count), and exits 1 naming what failed.
 */
import { parseArgs } from "node:util";
import OpenAI from "openai";

export const GATEWAY_USAGE =
  "usage: npm run smoke -- --openai <openaiBaseUrl> --api-key <key> [--prompt TEXT]... [--max-tokens N] [--wait SECS] [--timeout SECS]";
const DEFAULT_PROMPT = "Triton serves this model. The answer is";

export interface GatewaySmokeArgs {
  baseUrl: string;
  apiKey: string;
  prompts: string[];
  maxTokens: number;
  waitSeconds: number;
  timeoutSeconds: number;
}

function nonNegative(raw: string | undefined, flag: string, fallback: number, min = 1): number {
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) throw new Error(`${flag} must be an integer >= ${min}, got "${raw}"`);
  return n;
}

export function parseGatewaySmokeArgs(argv: string[]): GatewaySmokeArgs {
  const { values } = parseArgs({
    args: argv,
    options: {
      openai: { type: "string" },
      "api-key": { type: "string" },
      prompt: { type: "string", multiple: true },
      "max-tokens": { type: "string" },
      wait: { type: "string" },
      timeout: { type: "string" },
    },
    strict: true,
    allowPositionals: false,
  });
  if (!values.openai) throw new Error(`--openai is required\n${GATEWAY_USAGE}`);
  const apiKey = values["api-key"] ?? process.env.TRITON_FT_API_KEY;
  if (!apiKey) throw new Error(`--api-key (or TRITON_FT_API_KEY) is required\n${GATEWAY_USAGE}`);
  return {
    baseUrl: values.openai.replace(/\/+$/, ""),
    apiKey,
    prompts: values.prompt && values.prompt.length > 0 ? values.prompt : [DEFAULT_PROMPT],
    maxTokens: nonNegative(values["max-tokens"], "--max-tokens", 16),
    waitSeconds: nonNegative(values.wait, "--wait", 0, 0),
    timeoutSeconds: nonNegative(values.timeout, "--timeout", 120),
  };
}

export async function smokeGateway(args: GatewaySmokeArgs, log: (line: string) => void): Promise<void> {
  const client = new OpenAI({
    apiKey: args.apiKey,
    baseURL: args.baseUrl,
    maxRetries: 0,
    timeout: args.timeoutSeconds * 1000,
  });
  const deadline = Date.now() + args.waitSeconds * 1000;
  let models: string[];
  for (;;) {
    try {
      models = (await client.models.list()).data.map((m) => m.id);
      break;
    } catch (error) {
      if (error instanceof OpenAI.AuthenticationError || Date.now() >= deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 2000));
    }
  }
  log(`gateway ${args.baseUrl}: models ${models.join(", ")}`);
  const model = models[0];
  if (!model) throw new Error("the gateway lists no model");
  for (const [i, prompt] of args.prompts.entries()) {
    const started = performance.now();
    const r = await client.completions.create({ model, prompt, max_tokens: args.maxTokens, temperature: 0 });
    log(`--- prompt ${i + 1}: ${JSON.stringify(prompt)}`);
    log(`    text: ${JSON.stringify(r.choices[0]?.text)} (finish_reason ${r.choices[0]?.finish_reason})`);
    log(
      `    tokens: ${r.usage?.prompt_tokens} in, ${r.usage?.completion_tokens} out, ${(performance.now() - started).toFixed(1)} ms`,
    );
    if (!r.usage || r.usage.completion_tokens === 0) throw new Error(`prompt ${i + 1} generated no tokens`);
  }
  const started = performance.now();
  let firstMs = -1;
  let chunks = 0;
  const stream = await client.completions.create({
    model,
    prompt: args.prompts[0],
    max_tokens: args.maxTokens,
    temperature: 0,
    stream: true,
  });
  for await (const chunk of stream) {
    if (chunk.choices[0]?.text) {
      chunks += 1;
      if (firstMs < 0) firstMs = performance.now() - started;
    }
  }
  log(
    `stream: ${chunks} chunk(s), first token after ${firstMs.toFixed(1)} ms, done after ${(performance.now() - started).toFixed(1)} ms`,
  );
  if (chunks === 0) throw new Error("the streamed completion sent no text");
}
