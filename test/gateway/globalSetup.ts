/**
 * vitest globalSetup of the gateway suite: the test stack's model repository
 * with FT in decoupled (streaming) mode, as production renders it, served by
 * a real tritonserver (test/triton/server.sh) with the FT stand-in taking
 * STEP_MS per generated token. The same server serves a second model's
 * repository side by side (SECOND_MODEL: other limits and vocabulary, its
 * Triton models prefixed), and a second tritonserver serves that second model
 * alone, for the test that stops it. In front of them, the gateway processes:
 * `main` with h2oGPT's chat template (the templated-preset case), `plain`
 * without one, `queued` calling a copy of the ensemble with one instance and
 * a one-request Triton queue (QUEUED_ENSEMBLE), so a test can overflow
 * Triton's queue while the stand-in holds (STANDIN_HOLD_FILE); `multi` with
 * both models on the one server, and `split` with the second model on its
 * own server.
 *
 * A real Valkey/Redis (test/lib/storeServer.ts, on loopback, stopped by pid)
 * is the shared store of `main`, `plain` and `multi` (each under its own key
 * prefix), of two more gateway processes `podA` and `podB` that share one
 * prefix as two pods of one deployment would, and of `fair`, whose small
 * in-flight cap the fair-share test fills.
 *
 * With GATEWAY_UPSTREAM=vllm the same gateways stand in front of the project's vLLM model instead
 * (test/gateway/vllmUpstream.ts: both models on one CPU tritonserver, tiny random checkpoints); the
 * queue-limited copy and the second model's own server are FT-mode only, as are the tests using them.
 */
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { TestProject } from "vitest/node";
import { findPreset } from "../../infra/model/catalog";
import { renderGatewayConfig } from "../../infra/plan/gatewayConfig";
import { type RepositoryOptions } from "../../infra/plan/modelRepository";
import {
  addQueueLimitedEnsemble,
  addSecondModel,
  assembleRepository,
  optionsFromPlan,
  runSynth,
  type HarnessInfo,
} from "../triton/assemble";
import { ROOT, type ConsumerSpec, type RunningGateway, startGateway } from "./harness";
import { StoreServer, type StoreServerInfo } from "../lib/storeServer";
import { stop, waitForState, type ServerState } from "../triton/serverProcess";
import { venvPython } from "../lib/pyenv";
import { type Upstream, gatewayUpstream } from "./upstream";
import { startVllmUpstream } from "./vllmUpstream";

import { ENSEMBLE_MODEL } from "../../infra/conventions/workload";
import type { GatewayConfigFile, GatewayModel, GatewayStoreConfig } from "../../infra/plan/types";
import { type StoreClient, connectStore } from "../../images/gateway/src/store/connection";
import { type StoreConfig, StoreConfigSchema } from "../../images/gateway/src/store/storeConfig";
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
  spare: { name: "spare", maxConcurrent: 4 },
  usage: { name: "usage" },
} satisfies Record<string, ConsumerSpec>;

/** The key prefix of `podA` and `podB` in the store (the tests read their keys). */
export const SHARED_PREFIX = "shared:";

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

/** The store config a gateway given `storeSection(store, keyPrefix)` runs with, parsed as it parses it. */
export function testStoreConfig(store: StoreServerInfo, keyPrefix: string): StoreConfig {
  return StoreConfigSchema.parse(storeSection(store, keyPrefix));
}

/** A test's own connection to `store`, made as the gateways make theirs (TLS, AUTH), once ready. */
export async function connectTestStore(store: StoreServerInfo, keyPrefix: string): Promise<StoreClient> {
  const client = connectStore(testStoreConfig(store, keyPrefix), store.password);
  await new Promise((resolve) => client.once("ready", resolve));
  return client;
}

/**
 * The second model: the test stack's model with smaller limits and a smaller
 * vocabulary (preprocessing bounds top_k by it), so a request that one model
 * takes the other refuses. Its Triton models are named `<prefix>…`.
 */
export const SECOND_MODEL = {
  idSuffix: "-small",
  prefix: "small_",
  maxBatchSize: 2,
  maxInputLen: 32,
  maxOutputLen: 12,
  vocab: 256,
} as const;

/** A served model as the tests see it: its gateway limits and its ensemble's name in Triton. */
export type ServedTestModel = GatewayModel & { ensemble: string };

export interface GatewayHarness {
  /** The engine the models run on (GATEWAY_UPSTREAM): tests that need the FT stand-in skip themselves on `vllm`. */
  upstream: Upstream;
  /** The tritonserver serving both models: its repository and addresses. */
  triton: { repository: string; http: string; grpc: string; log: string };
  model: GatewayModel;
  main: RunningGateway;
  plain: RunningGateway;
  /** In front of QUEUED_ENSEMBLE, with admission limits far above Triton's queue (vLLM mode: `main`). */
  queued: RunningGateway;
  stepMs: number;
  /** While this file exists the FT stand-in holds every batch before generating (vLLM mode: read by nothing). */
  standinHoldFile: string;
  store: StoreServerInfo;
  /** Two gateway processes sharing the store under one key prefix: two pods of one deployment. */
  podA: RunningGateway;
  podB: RunningGateway;
  /** In-flight cap FAIR.maxInflight over FAIR.teams. */
  fair: RunningGateway;
  /** The first model (with h2oGPT's template) and the second (none), as `multi` and `split` serve them. */
  models: { first: ServedTestModel; second: ServedTestModel };
  /** Both models on the one tritonserver, with the shared store; keys: team-a (every model), only-first, only-second. */
  multi: RunningGateway;
  /** The first model on the shared tritonserver, the second on its own tritonserver; key: team-a (vLLM mode: `multi`). */
  split: RunningGateway;
  /** Pid of the server.sh that runs the second model's own tritonserver: SIGTERM stops both (vLLM mode: -1). */
  secondTritonPid: number;
}

declare module "vitest" {
  export interface ProvidedContext {
    gateway: GatewayHarness;
  }
}

function log(message: string): void {
  process.stderr.write(`${new Date().toISOString().slice(11, 19)} [gateway-setup] ${message}\n`);
}

interface RunningTriton {
  state: ServerState;
  pid: number;
  stop: () => Promise<void>;
}

/** One tritonserver (test/triton/server.sh in serve mode) on `repository`, ready. */
async function serveRepository(
  work: string,
  name: string,
  repository: string,
  stepMs: number,
  holdFile?: string,
): Promise<RunningTriton> {
  const stateFile = path.join(work, `${name}.server.json`);
  const server = spawn(
    "bash",
    [
      path.join(ROOT, "test/triton/server.sh"),
      "--model-repository",
      repository,
      "--state-file",
      stateFile,
      "--log",
      path.join(work, `${name}.tritonserver.log`),
      "--watch-pid",
      String(process.pid),
    ],
    {
      cwd: ROOT,
      stdio: ["ignore", "inherit", "inherit"],
      env: {
        ...process.env,
        TRITONFT_STANDIN_STEP_MS: String(stepMs),
        ...(holdFile ? { TRITONFT_STANDIN_HOLD_FILE: holdFile } : {}),
      },
    },
  );
  try {
    const state = await waitForState(server, stateFile, 300_000);
    return { state, pid: server.pid ?? -1, stop: () => stop(server) };
  } catch (error) {
    await stop(server);
    throw error;
  }
}

/** The gateway's view of a repository's model: its limits under `id`. */
function gatewayModel(id: string, o: RepositoryOptions): Omit<GatewayModel, "chatTemplate"> {
  return {
    id,
    maxInputLen: o.maxInputLen,
    maxOutputLen: o.maxOutputLen,
    maxBatchSize: o.maxBatchSize,
    vocab: o.vocab ?? 0,
  };
}

export async function startTritonDecoupled(
  work: string,
  stepMs: number,
  extra: { queuedEnsemble?: typeof QUEUED_ENSEMBLE; holdFile?: string; second?: typeof SECOND_MODEL } = {},
): Promise<{
  info: HarnessInfo & { http: string; grpc: string; log: string };
  model: Omit<GatewayModel, "chatTemplate">;
  /** With `extra.second`: that model, and a repository holding it alone (for a server of its own). */
  second?: { model: Omit<GatewayModel, "chatTemplate">; ensemble: string; repository: string };
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
  const first = { ...optionsFromPlan(plan), decoupled: true, tokenizerPath: info.tokenizerPath };
  let second: { model: Omit<GatewayModel, "chatTemplate">; ensemble: string; repository: string } | undefined;
  if (extra.second) {
    const { idSuffix, prefix, ...limits } = extra.second;
    const options: RepositoryOptions = { ...first, ...limits };
    const ensemble = addSecondModel(info.repository, options, prefix);
    const alone = path.join(work, "repository-second");
    rmSync(alone, { recursive: true, force: true });
    mkdirSync(alone);
    addSecondModel(alone, options, prefix);
    second = { model: gatewayModel(`${plan.model.name}${idSuffix}`, options), ensemble, repository: alone };
  }
  const server = await serveRepository(work, "main", info.repository, stepMs, extra.holdFile);
  return {
    info: { ...info, ...server.state },
    model: gatewayModel(plan.model.name, first),
    ...(second ? { second } : {}),
    stop: server.stop,
  };
}

/** `config` calling `ensemble` for model `id` instead of the rendered name (production has one ensemble per Triton). */
function withEnsemble(config: GatewayConfigFile, id: string, ensemble: string): GatewayConfigFile {
  return {
    ...config,
    models: config.models.map((m) => (m.id === id ? { ...m, triton: { ...m.triton, ensemble } } : m)),
  };
}

/**
 * The models the gateways are put in front of, on either engine: the first on `triton`, the second
 * beside it there, and (FT mode) the second alone on a server of its own and the queue-limited copy.
 */
interface ServedModels {
  triton: GatewayHarness["triton"];
  first: Omit<GatewayModel, "chatTemplate">;
  second: { model: Omit<GatewayModel, "chatTemplate">; ensemble: string };
  /** FT mode: the second model's own tritonserver, for `split` and the test that stops it. */
  secondAlone?: { grpc: string; pid: number };
  /** FT mode: QUEUED_ENSEMBLE's name in Triton. */
  queuedEnsemble?: string;
}

/** The FT stand-in (decoupled) with both models, the queue-limited copy, and the second model's own server. */
async function serveFt(
  work: string,
  standinHoldFile: string,
  stoppers: Array<() => Promise<void>>,
): Promise<ServedModels> {
  const triton = await startTritonDecoupled(work, STEP_MS, {
    queuedEnsemble: QUEUED_ENSEMBLE,
    holdFile: standinHoldFile,
    second: SECOND_MODEL,
  });
  stoppers.push(triton.stop);
  const second = triton.second;
  if (!second) throw new Error("the second model was not assembled");
  log(
    `tritonserver ready at grpc ${triton.info.grpc} (FT stand-in decoupled, ${STEP_MS} ms per token; ` +
      `models ${triton.model.id} and ${second.model.id} side by side)`,
  );
  // The second model alone on a server of its own: the test that stops it stops nothing else.
  const secondTriton = await serveRepository(work, "second", second.repository, STEP_MS);
  stoppers.push(secondTriton.stop);
  log(`second tritonserver (${second.model.id} alone) ready at grpc ${secondTriton.state.grpc}`);
  return {
    triton: triton.info,
    first: triton.model,
    second: { model: second.model, ensemble: second.ensemble },
    secondAlone: { grpc: secondTriton.state.grpc, pid: secondTriton.pid },
    queuedEnsemble: QUEUED_ENSEMBLE.name,
  };
}

/** The project's vLLM model serving both models on one CPU tritonserver (test/gateway/vllmUpstream.ts). */
async function serveVllm(work: string, stoppers: Array<() => Promise<void>>): Promise<ServedModels> {
  const started = Date.now();
  const vllm = await startVllmUpstream(work, SECOND_MODEL);
  stoppers.push(vllm.stop);
  log(
    `vLLM tritonserver ready at grpc ${vllm.triton.grpc} in ${Math.round((Date.now() - started) / 1000)} s ` +
      `(models ${vllm.first.id} and ${vllm.second.model.id} side by side)`,
  );
  return { triton: vllm.triton, first: vllm.first, second: vllm.second };
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const upstream = gatewayUpstream();
  const work = process.env.GATEWAY_TEST_WORK ?? mkdtempSync(path.join(os.tmpdir(), "triton-ft-gw-"));
  const keepWork = process.env.GATEWAY_TEST_WORK !== undefined;
  // A given work folder may not exist yet (test/vllm/run.sh names one under its own).
  mkdirSync(work, { recursive: true });
  log(`work dir ${work}, upstream ${upstream}`);
  const standinHoldFile = path.join(work, "standin.hold");
  const stoppers: Array<() => Promise<void>> = [];
  const storeServer = new StoreServer(path.join(work, "store"));
  try {
    const served =
      upstream === "vllm" ? await serveVllm(work, stoppers) : await serveFt(work, standinHoldFile, stoppers);
    const triton = { info: served.triton, model: served.first };
    const second = served.second;
    // Stopped after the gateways, before the tritonservers (stoppers run in reverse).
    stoppers.push(() => storeServer.stop());
    const store = await storeServer.start();
    log(`store (${store.pid}) listening on ${store.host}:${store.port}`);
    const storeEnv = { [STORE_PASSWORD_ENV]: store.password };

    const chatTemplate = findPreset(CHAT_PRESET)?.chatTemplate;
    if (!chatTemplate) throw new Error(`preset ${CHAT_PRESET} declares no chat template`);
    const model: GatewayModel = { ...triton.model, chatTemplate };
    // Two batches per model queued at most, as the renderer's defaults had it before models had caps.
    const route = (m: GatewayModel, grpc: string, maxInflight = 4 * m.maxBatchSize) => ({
      ...m,
      tritonGrpc: grpc,
      maxInflight,
    });
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
        ...renderGatewayConfig([route(model, triton.info.grpc)], { requestTimeoutSeconds: 20 }),
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
        ...renderGatewayConfig([route(triton.model, triton.info.grpc)], { requestTimeoutSeconds: 1 }),
        store: storeSection(store, "plain:"),
      },
      [{ name: "team-a" }],
      { env: storeEnv },
    );
    stoppers.push(plain.stop);
    const podConfig = {
      ...renderGatewayConfig([route(triton.model, triton.info.grpc)], { requestTimeoutSeconds: 60 }),
      store: storeSection(store, SHARED_PREFIX, 2),
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
        // The model's own cap is the gateway's: the fair shares tested are the gateway-wide ones.
        ...renderGatewayConfig([route(triton.model, triton.info.grpc, FAIR.maxInflight)], {
          requestTimeoutSeconds: 60,
          maxInflight: FAIR.maxInflight,
        }),
        store: storeSection(store, "fair:"),
      },
      FAIR.teams.map((name) => ({ name, maxConcurrent: FAIR.maxInflight })),
      { env: storeEnv },
    );
    stoppers.push(fair.stop);
    // vLLM mode has no queue-limited copy (queue.test.ts is FT-only): `queued` is `main` there.
    let queued = main;
    if (served.queuedEnsemble) {
      const queuedConfig = renderGatewayConfig([route(triton.model, triton.info.grpc, 64)], {
        requestTimeoutSeconds: 60,
        maxConcurrent: 64,
      });
      queued = await startGateway(work, "queued", withEnsemble(queuedConfig, triton.model.id, served.queuedEnsemble), [
        { name: "team-a" },
      ]);
      stoppers.push(queued.stop);
    }

    const multiConfig = renderGatewayConfig([route(model, triton.info.grpc), route(second.model, triton.info.grpc)], {
      requestTimeoutSeconds: 20,
    });
    // With the shared store: admission and usage per team and model through it.
    const multi = await startGateway(
      work,
      "multi",
      { ...withEnsemble(multiConfig, second.model.id, second.ensemble), store: storeSection(store, "multi:") },
      [
        { name: "team-a" },
        { name: "only-first", models: [model.id] },
        { name: "only-second", models: [second.model.id] },
      ],
      { env: storeEnv },
    );
    stoppers.push(multi.stop);
    // vLLM mode has no second server (the test that stops it is FT-only, models.test.ts): `split` is `multi` there.
    let split = multi;
    if (served.secondAlone) {
      const splitConfig = renderGatewayConfig(
        [route(model, triton.info.grpc), route(second.model, served.secondAlone.grpc)],
        { requestTimeoutSeconds: 20 },
      );
      split = await startGateway(work, "split", withEnsemble(splitConfig, second.model.id, second.ensemble), [
        { name: "team-a" },
      ]);
      stoppers.push(split.stop);
    }
    log(
      `gateways listening: main ${main.gateway.url}, plain ${plain.gateway.url}, queued ${queued.gateway.url}, ` +
        `pods ${podA.gateway.url} ${podB.gateway.url}, fair ${fair.gateway.url}, ` +
        `multi ${multi.gateway.url}, split ${split.gateway.url}`,
    );
    project.provide("gateway", {
      upstream,
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
      models: {
        first: { ...model, ensemble: ENSEMBLE_MODEL },
        second: { ...second.model, ensemble: second.ensemble },
      },
      multi: multi.gateway,
      split: split.gateway,
      secondTritonPid: served.secondAlone?.pid ?? -1,
    });
  } catch (error) {
    for (const s of stoppers.reverse()) await s();
    throw error;
  }
  return async () => {
    // Gateways first, then the store, then the servers behind them.
    for (const s of stoppers.reverse()) await s();
    log("gateways, store and tritonservers stopped");
    if (!keepWork) rmSync(work, { recursive: true, force: true });
  };
}
