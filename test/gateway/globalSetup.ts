/**
 * vitest globalSetup of the gateway suite: the test stack's model repository
 * with FT in decoupled (streaming) mode, as production renders it, served by
 * a real tritonserver (test/triton/server.sh) with the FT stand-in taking
 * STEP_MS per generated token; then three gateway processes in front of it:
 * `main` with h2oGPT's chat template (the templated-preset case), `plain`
 * without one, and `queued` calling a copy of the ensemble with one instance
 * and a one-request Triton queue (QUEUED_ENSEMBLE), so a test can overflow
 * Triton's queue while the stand-in holds (STANDIN_HOLD_FILE).
 *
 * A real Valkey/Redis (test/lib/storeServer.ts, on loopback, stopped by pid)
 * is the shared store of `main` and `plain` (each under its own key prefix),
 * of two more gateway processes `podA` and `podB` that share one prefix as two
 * pods of one deployment would, and of `fair`, whose small in-flight cap the
 * fair-share test fills.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { TestProject } from "vitest/node";
import { findPreset } from "../../infra/model/catalog";
import { type GatewayModel, renderGatewayConfig } from "../../infra/render/gatewayConfig";
import { addQueueLimitedEnsemble, assembleRepository, runSynth, type HarnessInfo } from "../triton/assemble";
import type { GatewayStoreConfig } from "../../infra/render/gatewayConfig";
import { ROOT, type ConsumerSpec, type RunningGateway, startGateway } from "./harness";
import { StoreServer, type StoreServerInfo } from "../lib/storeServer";
import { stop, waitForState } from "../triton/serverProcess";
import { venvPython } from "../lib/pyenv";

/** Per generated token: slow enough that streamed chunks are visibly spread out, fast enough for CI. */
export const STEP_MS = 25;
export const CHAT_PRESET = "h2ogpt-oig-oasst1-512-6_9b";
/** The streaming ensemble with one instance and `max_queue_size: 1`: Triton refuses the third concurrent request. */
export const QUEUED_ENSEMBLE = { name: "ensemble_queued", maxQueueSize: 1 };
/** The environment variable the test gateways read the store's password from (the config's default). */
export const STORE_PASSWORD_ENV = "GATEWAY_STORE_PASSWORD";

/** The teams of the two-pod gateways: each test owns one, so their windows and counters never mix. */
export const POD_TEAMS = {
  sixPerMinute: { name: "six-per-minute", requestsPerMinute: 6, maxConcurrent: 16 },
  tokens: { name: "tokens", tokensPerMinute: 100, requestsPerMinute: 600 },
  settled: { name: "settled", tokensPerMinute: 60, requestsPerMinute: 600 },
  twoAtOnce: { name: "two-at-once", maxConcurrent: 2 },
  oneAtATime: { name: "one-at-a-time", maxConcurrent: 1 },
  usage: { name: "usage" },
} satisfies Record<string, ConsumerSpec>;

/** The fair-share gateway: five teams of share 1 over an in-flight cap of 10, so each team's fair share is 2. */
export const FAIR = { maxInflight: 10, teams: ["busy-1", "busy-2", "busy-3", "busy-4", "idle"] } as const;

/** The config section that points a test gateway at the suite's store under its own key prefix. */
export function storeSection(store: StoreServerInfo, keyPrefix: string, assumedPods = 1): GatewayStoreConfig {
  return {
    host: store.host,
    port: store.port,
    mode: "standalone",
    // As the in-cluster store: TLS against the stack's own CA (here the test's).
    tls: true,
    caFile: store.caFile,
    keyPrefix,
    username: "default",
    passwordEnv: STORE_PASSWORD_ENV,
    assumedPods,
  };
}

export interface GatewayHarness {
  triton: HarnessInfo & { http: string; grpc: string; log: string };
  model: GatewayModel;
  main: RunningGateway;
  plain: RunningGateway;
  /** In front of QUEUED_ENSEMBLE, with admission limits far above Triton's queue. */
  queued: RunningGateway;
  stepMs: number;
  /** While this file exists the FT stand-in holds every batch before generating. */
  standinHoldFile: string;
  store: StoreServerInfo;
  /** Two gateway processes sharing the store under one key prefix: two pods of one deployment. */
  podA: RunningGateway;
  podB: RunningGateway;
  /** In-flight cap FAIR.maxInflight over FAIR.teams. */
  fair: RunningGateway;
}

declare module "vitest" {
  export interface ProvidedContext {
    gateway: GatewayHarness;
  }
}

function log(message: string): void {
  process.stderr.write(`${new Date().toISOString().slice(11, 19)} [gateway-setup] ${message}\n`);
}

export async function startTritonDecoupled(
  work: string,
  stepMs: number,
  extra: { queuedEnsemble?: typeof QUEUED_ENSEMBLE; holdFile?: string } = {},
): Promise<{
  info: HarnessInfo & { http: string; grpc: string; log: string };
  model: Omit<GatewayModel, "chatTemplate">;
  stop: () => Promise<void>;
}> {
  const python = venvPython();
  const { plan, repository } = runSynth(work);
  const info = assembleRepository(work, python, plan, repository, {
    decoupled: true,
    vocab: plan.model.arch.vocab,
  });
  if (extra.queuedEnsemble) {
    addQueueLimitedEnsemble(info.repository, extra.queuedEnsemble.name, extra.queuedEnsemble.maxQueueSize);
  }
  const stateFile = path.join(work, "server.json");
  const server = spawn(
    "bash",
    [
      path.join(ROOT, "test/triton/server.sh"),
      "--model-repository",
      info.repository,
      "--state-file",
      stateFile,
      "--log",
      path.join(work, "tritonserver.log"),
      "--watch-pid",
      String(process.pid),
    ],
    {
      cwd: ROOT,
      stdio: ["ignore", "inherit", "inherit"],
      env: {
        ...process.env,
        TRITONFT_STANDIN_STEP_MS: String(stepMs),
        ...(extra.holdFile ? { TRITONFT_STANDIN_HOLD_FILE: extra.holdFile } : {}),
      },
    },
  );
  try {
    const state = await waitForState(server, stateFile, 300_000);
    return {
      info: { ...info, ...state },
      model: {
        id: plan.model.name,
        maxInputLen: plan.serving.maxInputLen,
        maxOutputLen: plan.serving.maxOutputLen,
        maxBatchSize: plan.serving.maxBatchSize,
        vocab: plan.model.arch.vocab,
      },
      stop: () => stop(server),
    };
  } catch (error) {
    await stop(server);
    throw error;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const work = process.env.GATEWAY_TEST_WORK ?? mkdtempSync(path.join(os.tmpdir(), "triton-ft-gw-"));
  const keepWork = process.env.GATEWAY_TEST_WORK !== undefined;
  log(`work dir ${work}`);
  const standinHoldFile = path.join(work, "standin.hold");
  const triton = await startTritonDecoupled(work, STEP_MS, {
    queuedEnsemble: QUEUED_ENSEMBLE,
    holdFile: standinHoldFile,
  });
  log(`tritonserver ready at grpc ${triton.info.grpc} (FT stand-in decoupled, ${STEP_MS} ms per token)`);
  const storeServer = new StoreServer(path.join(work, "store"));
  const stoppers: Array<() => Promise<void>> = [];
  try {
    const store = await storeServer.start();
    log(`store (${store.pid}) listening on ${store.host}:${store.port}`);
    const storeEnv = { [STORE_PASSWORD_ENV]: store.password };
    const chatTemplate = findPreset(CHAT_PRESET)?.chatTemplate;
    if (!chatTemplate) throw new Error(`preset ${CHAT_PRESET} declares no chat template`);
    const model: GatewayModel = { ...triton.model, chatTemplate };
    const consumers = [
      { name: "team-a" },
      { name: "team-b" },
      { name: "catalogue" },
      { name: "latency" },
      { name: "rate-limited", requestsPerMinute: 3 },
      { name: "one-at-a-time", maxConcurrent: 1 },
    ];
    const main = await startGateway(
      work,
      "main",
      {
        ...renderGatewayConfig(model, triton.info.grpc, { requestTimeoutSeconds: 20 }),
        store: storeSection(store, "main:"),
      },
      consumers,
      { env: storeEnv },
    );
    stoppers.push(main.stop);
    const plain = await startGateway(
      work,
      "plain",
      {
        ...renderGatewayConfig({ ...triton.model }, triton.info.grpc, { requestTimeoutSeconds: 1 }),
        store: storeSection(store, "plain:"),
      },
      [{ name: "team-a" }],
      { env: storeEnv },
    );
    stoppers.push(plain.stop);
    const podConfig = {
      ...renderGatewayConfig({ ...triton.model }, triton.info.grpc, { requestTimeoutSeconds: 60 }),
      store: storeSection(store, "shared:", 2),
    };
    const podA = await startGateway(work, "pod-a", podConfig, Object.values(POD_TEAMS), { env: storeEnv });
    stoppers.push(podA.stop);
    const podB = await startGateway(work, "pod-b", podConfig, Object.values(POD_TEAMS), {
      env: storeEnv,
      keys: podA.gateway.keys,
    });
    stoppers.push(podB.stop);
    const fair = await startGateway(
      work,
      "fair",
      {
        ...renderGatewayConfig({ ...triton.model }, triton.info.grpc, {
          requestTimeoutSeconds: 60,
          maxInflight: FAIR.maxInflight,
        }),
        store: storeSection(store, "fair:"),
      },
      FAIR.teams.map((name) => ({ name, maxConcurrent: FAIR.maxInflight })),
      { env: storeEnv },
    );
    stoppers.push(fair.stop);
    const queuedConfig = renderGatewayConfig({ ...triton.model }, triton.info.grpc, {
      requestTimeoutSeconds: 60,
      maxInflight: 64,
      maxConcurrent: 64,
    });
    const queued = await startGateway(
      work,
      "queued",
      { ...queuedConfig, triton: { ...queuedConfig.triton, ensemble: QUEUED_ENSEMBLE.name } },
      [{ name: "team-a" }],
    );
    stoppers.push(queued.stop);
    log(
      `gateways listening: main ${main.gateway.url}, plain ${plain.gateway.url}, queued ${queued.gateway.url}, ` +
        `pods ${podA.gateway.url} ${podB.gateway.url}, fair ${fair.gateway.url}`,
    );
    project.provide("gateway", {
      triton: triton.info,
      model,
      main: main.gateway,
      plain: plain.gateway,
      queued: queued.gateway,
      stepMs: STEP_MS,
      standinHoldFile,
      store: storeServer.info,
      podA: podA.gateway,
      podB: podB.gateway,
      fair: fair.gateway,
    });
  } catch (error) {
    for (const s of stoppers) await s();
    await storeServer.stop();
    await triton.stop();
    throw error;
  }
  return async () => {
    for (const s of stoppers) await s();
    await storeServer.stop();
    await triton.stop();
    log("gateways and tritonserver stopped");
    if (!keepWork) rmSync(work, { recursive: true, force: true });
  };
}
