/**
 * Smoke test of a deployed (or local) Triton endpoint through the project's
 * ensemble contract, or, with --openai, of the gateway as consumers call it
 * (scripts/smokeGateway.ts):
 *
 *   npm run smoke -- --openai <openaiBaseUrl> --api-key <key> [--prompt TEXT]... [--max-tokens N]
 *
 *   npm run smoke -- --endpoint <url> [--prompt TEXT]... [--max-tokens N]
 *                    [--stop-word W]... [--wait SECS] [--timeout SECS] [--model NAME]
 *
 * <url> is http(s)://host:port (KServe v2 HTTP, port 8000), grpc://host:port
 * or grpcs://host:port (KServe v2 gRPC, port 8001), or a bare host:port (HTTP).
 *
 * Checks liveness, readiness and the four models, sends all prompts as one
 * batch, prints each completion with token counts and the latency. Exits 1
 * with a message naming what failed.
 */
import { parseArgs } from "node:util";
import { type TritonClient, TritonClientError } from "../infra/client/api";
import { createClient } from "../infra/client/connect";
import { REPOSITORY_MODELS, generate, readiness } from "../infra/client/ensemble";
import { type GatewaySmokeArgs, parseGatewaySmokeArgs, smokeGateway } from "./smokeGateway";

const USAGE =
  "usage: npm run smoke -- --endpoint <url> [--prompt TEXT]... [--max-tokens N] [--stop-word W]... [--wait SECS] [--timeout SECS] [--model NAME]";

const DEFAULT_PROMPT = "Triton serves this model. The answer is";

interface SmokeArgs {
  endpoint: string;
  prompts: string[];
  maxTokens: number;
  stopWords: string[];
  waitSeconds: number;
  timeoutSeconds: number;
  model: string;
}

function positiveInt(raw: string, flag: string, allowZero = false): number {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < (allowZero ? 0 : 1))
    throw new Error(`${flag} must be a ${allowZero ? "non-negative" : "positive"} integer, got "${raw}"`);
  return n;
}

export function parseSmokeArgs(argv: string[]): SmokeArgs {
  const { values } = parseArgs({
    args: argv,
    options: {
      endpoint: { type: "string" },
      prompt: { type: "string", multiple: true },
      "max-tokens": { type: "string" },
      "stop-word": { type: "string", multiple: true },
      wait: { type: "string" },
      timeout: { type: "string" },
      model: { type: "string" },
      help: { type: "boolean" },
    },
    strict: true,
    allowPositionals: false,
  });
  if (values.help) throw new Error(USAGE);
  if (values.endpoint === undefined || values.endpoint === "") throw new Error(`--endpoint is required\n${USAGE}`);
  return {
    endpoint: values.endpoint,
    prompts: values.prompt && values.prompt.length > 0 ? values.prompt : [DEFAULT_PROMPT],
    maxTokens: values["max-tokens"] === undefined ? 16 : positiveInt(values["max-tokens"], "--max-tokens"),
    stopWords: values["stop-word"] ?? [],
    waitSeconds: values.wait === undefined ? 0 : positiveInt(values.wait, "--wait", true),
    timeoutSeconds: values.timeout === undefined ? 120 : positiveInt(values.timeout, "--timeout"),
    model: values.model ?? "ensemble",
  };
}

async function waitForReady(client: TritonClient, seconds: number): Promise<void> {
  const deadline = Date.now() + seconds * 1000;
  for (;;) {
    try {
      if (await client.isReady()) return;
    } catch (error) {
      // Unreachable while a load balancer or pod comes up: keep polling until the deadline.
      if (Date.now() >= deadline) throw error;
    }
    if (Date.now() >= deadline) return;
    await new Promise((resolve) => setTimeout(resolve, 2000));
  }
}

async function smoke(args: SmokeArgs, log: (line: string) => void): Promise<void> {
  const client = createClient(args.endpoint, { timeoutMs: args.timeoutSeconds * 1000 });
  try {
    await smokeWith(client, args, log);
  } finally {
    client.close();
  }
}

async function smokeWith(client: TritonClient, args: SmokeArgs, log: (line: string) => void): Promise<void> {
  if (args.waitSeconds > 0) {
    log(`waiting up to ${args.waitSeconds}s for ${client.baseUrl} to be ready`);
    await waitForReady(client, args.waitSeconds);
  }
  const models = args.model === "ensemble" ? REPOSITORY_MODELS : [args.model];
  const state = await readiness(client, models);
  log(`server ${client.baseUrl} (${client.protocol}): live=${state.live} ready=${state.ready}`);
  for (const [model, ready] of Object.entries(state.models)) log(`  model ${model}: ${ready ? "ready" : "NOT READY"}`);
  if (!state.live) throw new Error("server is not live (health/live)");
  const notReady = Object.entries(state.models)
    .filter(([, ready]) => !ready)
    .map(([m]) => m);
  if (notReady.length > 0) throw new Error(`models not ready: ${notReady.join(", ")}`);
  if (!state.ready) throw new Error("server is not ready (health/ready)");

  const result = await generate(client, args.prompts, {
    maxTokens: args.maxTokens,
    ...(args.stopWords.length > 0 ? { stopWords: args.stopWords } : {}),
    model: args.model,
  });
  result.completions.forEach((c, i) => {
    log(`--- prompt ${i + 1}: ${JSON.stringify(args.prompts[i])}`);
    log(`    text: ${JSON.stringify(c.text)}`);
    log(`    tokens: ${c.inputTokens} in, ${c.outputTokens} out`);
  });
  const generated = result.completions.reduce((n, c) => n + c.outputTokens, 0);
  log(
    `latency: ${result.latencyMs.toFixed(1)} ms for ${args.prompts.length} prompt(s), ${generated} generated token(s)`,
  );
  const empty = result.completions.findIndex((c) => c.outputTokens === 0);
  if (empty >= 0) throw new Error(`prompt ${empty + 1} generated no tokens`);
}

async function main(): Promise<number> {
  const argv = process.argv.slice(2);
  if (argv.some((a) => a === "--openai" || a.startsWith("--openai="))) return mainGateway(argv);
  let args: SmokeArgs;
  try {
    args = parseSmokeArgs(process.argv.slice(2));
  } catch (error) {
    console.error(error instanceof Error ? error.message : String(error));
    return 2;
  }
  try {
    await smoke(args, (line) => console.log(line));
    console.log("smoke: OK");
    return 0;
  } catch (error) {
    const detail =
      error instanceof TritonClientError
        ? `${error.statusText} from ${error.url}: ${error.tritonMessage}`
        : error instanceof Error
          ? error.message
          : String(error);
    console.error(`smoke: FAILED: ${detail}`);
    return 1;
  }
}

/** Through the gateway (what consumers reach): the OpenAI API with a team's key. */
async function mainGateway(argv: string[]): Promise<number> {
  let args: GatewaySmokeArgs;
  try {
    args = parseGatewaySmokeArgs(argv);
  } catch (error) {
    console.error(error instanceof Error ? error.message : String(error));
    return 2;
  }
  try {
    await smokeGateway(args, (line) => console.log(line));
    console.log("smoke: OK");
    return 0;
  } catch (error) {
    console.error(`smoke: FAILED: ${error instanceof Error ? error.message : String(error)}`);
    return 1;
  }
}

if (require.main === module) {
  main().then((code) => process.exit(code));
}
