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
 */
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { TestProject } from "vitest/node";
import { findPreset } from "../../infra/model/catalog";
import { type GatewayConfigFile, type GatewayModel, renderGatewayConfig } from "../../infra/render/gatewayConfig";
import { ENSEMBLE_MODEL, type RepositoryOptions } from "../../infra/render/modelRepository";
import {
  addQueueLimitedEnsemble,
  addSecondModel,
  assembleRepository,
  optionsFromPlan,
  runSynth,
  type HarnessInfo,
} from "../triton/assemble";
import { ROOT, type RunningGateway, startGateway } from "./harness";
import { stop, waitForState, type ServerState } from "../triton/serverProcess";
import { venvPython } from "../lib/pyenv";

/** Per generated token: slow enough that streamed chunks are visibly spread out, fast enough for CI. */
export const STEP_MS = 25;
export const CHAT_PRESET = "h2ogpt-oig-oasst1-512-6_9b";
/** The streaming ensemble with one instance and `max_queue_size: 1`: Triton refuses the third concurrent request. */
export const QUEUED_ENSEMBLE = { name: "ensemble_queued", maxQueueSize: 1 };
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
  triton: HarnessInfo & { http: string; grpc: string; log: string };
  model: GatewayModel;
  main: RunningGateway;
  plain: RunningGateway;
  /** In front of QUEUED_ENSEMBLE, with admission limits far above Triton's queue. */
  queued: RunningGateway;
  stepMs: number;
  /** While this file exists the FT stand-in holds every batch before generating. */
  standinHoldFile: string;
  /** The first model (with h2oGPT's template) and the second (none), as `multi` and `split` serve them. */
  models: { first: ServedTestModel; second: ServedTestModel };
  /** Both models on the one tritonserver; keys: team-a (every model), only-first, only-second. */
  multi: RunningGateway;
  /** The first model on the shared tritonserver, the second on its own tritonserver; key: team-a. */
  split: RunningGateway;
  /** Pid of the server.sh that runs the second model's own tritonserver: SIGTERM stops both. */
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

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const work = process.env.GATEWAY_TEST_WORK ?? mkdtempSync(path.join(os.tmpdir(), "triton-ft-gw-"));
  const keepWork = process.env.GATEWAY_TEST_WORK !== undefined;
  log(`work dir ${work}`);
  const standinHoldFile = path.join(work, "standin.hold");
  const triton = await startTritonDecoupled(work, STEP_MS, {
    queuedEnsemble: QUEUED_ENSEMBLE,
    holdFile: standinHoldFile,
    second: SECOND_MODEL,
  });
  const stoppers: Array<() => Promise<void>> = [triton.stop];
  try {
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
      renderGatewayConfig([route(model, triton.info.grpc)], { requestTimeoutSeconds: 20 }),
      consumers,
    );
    stoppers.push(main.stop);
    const plain = await startGateway(
      work,
      "plain",
      renderGatewayConfig([route(triton.model, triton.info.grpc)], { requestTimeoutSeconds: 1 }),
      [{ name: "team-a" }],
    );
    stoppers.push(plain.stop);
    const queuedConfig = renderGatewayConfig([route(triton.model, triton.info.grpc, 64)], {
      requestTimeoutSeconds: 60,
      maxConcurrent: 64,
    });
    const queued = await startGateway(
      work,
      "queued",
      withEnsemble(queuedConfig, triton.model.id, QUEUED_ENSEMBLE.name),
      [{ name: "team-a" }],
    );
    stoppers.push(queued.stop);

    const multiConfig = renderGatewayConfig([route(model, triton.info.grpc), route(second.model, triton.info.grpc)], {
      requestTimeoutSeconds: 20,
    });
    const multi = await startGateway(work, "multi", withEnsemble(multiConfig, second.model.id, second.ensemble), [
      { name: "team-a" },
      { name: "only-first", models: [model.id] },
      { name: "only-second", models: [second.model.id] },
    ]);
    stoppers.push(multi.stop);
    const splitConfig = renderGatewayConfig(
      [route(model, triton.info.grpc), route(second.model, secondTriton.state.grpc)],
      { requestTimeoutSeconds: 20 },
    );
    const split = await startGateway(work, "split", withEnsemble(splitConfig, second.model.id, second.ensemble), [
      { name: "team-a" },
    ]);
    stoppers.push(split.stop);
    log(
      `gateways listening: main ${main.gateway.url}, plain ${plain.gateway.url}, queued ${queued.gateway.url}, ` +
        `multi ${multi.gateway.url}, split ${split.gateway.url}`,
    );
    project.provide("gateway", {
      triton: triton.info,
      model,
      main: main.gateway,
      plain: plain.gateway,
      queued: queued.gateway,
      stepMs: STEP_MS,
      standinHoldFile,
      models: {
        first: { ...model, ensemble: ENSEMBLE_MODEL },
        second: { ...second.model, ensemble: second.ensemble },
      },
      multi: multi.gateway,
      split: split.gateway,
      secondTritonPid: secondTriton.pid,
    });
  } catch (error) {
    for (const s of stoppers.reverse()) await s();
    throw error;
  }
  return async () => {
    // Gateways first, then the servers behind them.
    for (const s of stoppers.reverse()) await s();
    log("gateways and tritonservers stopped");
    if (!keepWork) rmSync(work, { recursive: true, force: true });
  };
}
