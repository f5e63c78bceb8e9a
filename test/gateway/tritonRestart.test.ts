/**
 * A gateway that recovers fast: its own tritonserver (the gateway suite's
 * repository, fixed loopback ports) is stopped for 150 s and started again
 * on the same ports; the gateway, left running, must be ready again within
 * 5 s of Triton being ready (its bounded gRPC reconnect backoff, triton/tritonClient.ts).
 * Before that backoff the same test measured 73.7 s.
 *
 * About four minutes (two Triton starts and the 150 s outage), so it runs
 * only with GATEWAY_OUTAGE_TEST=1, which `.ci/run` sets.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { renderGatewayConfig } from "../../infra/plan/gatewayConfig";
import { freePort, sleep } from "../lib/net";
import { venvPython } from "../lib/pyenv";
import { assembleRepository, runSynth } from "../triton/assemble";
import { stop, waitForState } from "../triton/serverProcess";
import { STEP_MS } from "./globalSetup";
import { ROOT, startGateway } from "./harness";

const RUN = process.env.GATEWAY_OUTAGE_TEST === "1";
/** The outage the issue measured at 73.7 s of extra unreadiness with grpc-js's default backoff. */
const OUTAGE_SECONDS = 150;
const READY_WITHIN_SECONDS = 5;

const work = mkdtempSync(path.join(os.tmpdir(), "triton-ft-triton-restart-"));
const stoppers: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const s of stoppers.reverse()) await s();
  rmSync(work, { recursive: true, force: true });
});

function log(message: string): void {
  process.stderr.write(`${new Date().toISOString().slice(11, 19)} [triton-restart] ${message}\n`);
}

/** test/triton/server.sh serving `repository` on fixed ports; resolves once Triton reports ready. */
async function serve(repository: string, ports: number[], round: number): Promise<ChildProcess> {
  const stateFile = path.join(work, `server-${round}.json`);
  const [http, grpc, metrics] = ports.map(String);
  const server = spawn(
    "bash",
    [
      path.join(ROOT, "test/triton/server.sh"),
      "--model-repository",
      repository,
      "--state-file",
      stateFile,
      "--log",
      path.join(work, `tritonserver-${round}.log`),
      "--watch-pid",
      String(process.pid),
      "--http-port",
      http,
      "--grpc-port",
      grpc,
      "--metrics-port",
      metrics,
    ],
    {
      cwd: ROOT,
      stdio: ["ignore", "inherit", "inherit"],
      env: { ...process.env, TRITONFT_STANDIN_STEP_MS: String(STEP_MS) },
    },
  );
  await waitForState(server, stateFile, 300_000);
  return server;
}

async function readyz(url: string): Promise<boolean> {
  try {
    return (await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(3000) })).status === 200;
  } catch {
    return false;
  }
}

describe.runIf(RUN)("Triton stopped for 150 s and restarted", () => {
  it(`the gateway is ready within ${READY_WITHIN_SECONDS} s of Triton`, async () => {
    const { plan, repository } = runSynth(work);
    const info = assembleRepository(work, venvPython(), plan, repository, {
      decoupled: true,
      vocab: plan.model.arch.vocab,
    });
    const ports = [await freePort(), await freePort(), await freePort()];
    let server = await serve(info.repository, ports, 1);
    stoppers.push(() => stop(server));
    const model = {
      id: plan.model.name,
      maxInputLen: plan.serving.maxInputLen,
      maxOutputLen: plan.serving.maxOutputLen,
      maxBatchSize: plan.serving.maxBatchSize,
      vocab: plan.model.arch.vocab,
    };
    const gw = await startGateway(
      work,
      "restart",
      renderGatewayConfig([{ ...model, tritonGrpc: `127.0.0.1:${ports[1]}`, maxInflight: 4 * model.maxBatchSize }]),
      [{ name: "team-a" }],
    );
    stoppers.push(gw.stop);
    const url = gw.gateway.url;
    const deadline = Date.now() + 30_000;
    while (!(await readyz(url))) {
      if (Date.now() > deadline) throw new Error("the gateway never became ready");
      await sleep(200);
    }

    log(`stopping tritonserver for ${OUTAGE_SECONDS} s`);
    await stop(server);
    const down = Date.now();
    let unreadySeen = false;
    while (Date.now() - down < OUTAGE_SECONDS * 1000) {
      if (!(await readyz(url))) unreadySeen = true;
      await sleep(5000);
    }
    expect(unreadySeen).toBe(true);

    log("starting tritonserver again on the same ports");
    server = await serve(info.repository, ports, 2);
    const tritonReady = performance.now();
    while (!(await readyz(url))) {
      if (performance.now() - tritonReady > 60_000) break;
      await sleep(100);
    }
    const seconds = (performance.now() - tritonReady) / 1000;
    log(`gateway ready ${seconds.toFixed(1)} s after Triton (outage ${OUTAGE_SECONDS} s)`);
    expect(seconds).toBeLessThanOrEqual(READY_WITHIN_SECONDS);
    // And it serves: a generation goes through.
    const r = await fetch(`${url}/v1/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${gw.gateway.keys["team-a"]}`, "content-type": "application/json" },
      body: JSON.stringify({ model: model.id, prompt: "back", max_tokens: 2 }),
    });
    expect(r.status).toBe(200);
  }, 900_000);
});
