/**
 * vitest globalSetup of the vLLM suite's gateway part (test/vllm/gateway.test.ts): the real gateway
 * in front of a real CPU tritonserver serving the project's vLLM model (images/vllm, its repository
 * written by the stack's own renderer, in the vLLM venv as the pytest part runs it) on tiny random checkpoints,
 * and, beside it, the gateway suite's FT stand-in (test/gateway/globalSetup.ts
 * startTritonDecoupled: the test stack's model repository, FT decoupled). One gateway process
 * routes to both by `model`, each with its own limits, engine and in-flight cap.
 *
 * The vLLM server holds two models: `gpt2` (the GPT-2 checkpoint, a 128-token context as the
 * pytest part serves it) and `neox` (the GPT-NeoX checkpoint, whose rotary positions hold no
 * weights, with a 1,024-token context: long enough generations for the cancellation test).
 */
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { TestProject } from "vitest/node";
import { findPreset } from "../../infra/model/catalog";
import { renderGatewayConfig } from "../../infra/plan/gatewayConfig";
import type { GatewayModel, GatewayRoute } from "../../infra/plan/types";
import { CHAT_PRESET, STEP_MS, startTritonDecoupled } from "../gateway/globalSetup";
import { type RunningGateway, startGateway } from "../gateway/harness";
import { VLLM_LOCK, venvPython } from "../lib/pyenv";
import { writeVllmRepository } from "../../scripts/vllm-repository";
import {
  MAX_LOGPROBS,
  TINY_VOCAB,
  cpuSettings,
  startVllmServer,
  withPositions,
  writeTinyCheckpoints,
} from "./tinyModels";

/** Sequences vLLM runs at once (max_num_seqs), and the gateway's batch size: the cancellation test fills them. */
export const MAX_NUM_SEQS = 8;

/** The vLLM models as the gateway serves them: id, Triton model name, context (input + output tokens). */
export const VLLM_MODELS = {
  gpt2: { id: "tiny-gpt2", name: "gpt2", context: 128 },
  neox: { id: "tiny-neox", name: "neox", context: 1024 },
} as const;

export interface VllmGatewayHarness {
  /** The vLLM tritonserver's gRPC address (host:port) and its models' limits as the gateway has them. */
  vllm: {
    grpc: string;
    log: string;
    python: string;
    models: Record<keyof typeof VLLM_MODELS, GatewayModel & { ensemble: string }>;
  };
  /** The FT stand-in's model as the gateway has it. */
  ft: GatewayModel;
  /** One gateway serving the FT model and both vLLM models. Keys: team-a (every model), only-vllm, catalogue. */
  gateway: RunningGateway;
  /** Pid of the server.sh running the vLLM tritonserver. */
  vllmServerPid: number;
}

declare module "vitest" {
  export interface ProvidedContext {
    vllmGateway: VllmGatewayHarness;
  }
}

function log(message: string): void {
  process.stderr.write(`${new Date().toISOString().slice(11, 19)} [vllm-gateway-setup] ${message}\n`);
}

/** The tiny checkpoints: GPT-2 as written, GPT-NeoX with room for the longer context. */
function checkpoints(python: string, work: string): Record<keyof typeof VLLM_MODELS, string> {
  const written = writeTinyCheckpoints(python, path.join(work, "checkpoints"));
  return {
    gpt2: written.gpt2,
    neox: withPositions(written.gptneox, path.join(work, "neox-long"), VLLM_MODELS.neox.context),
  };
}

/**
 * The vLLM model repository, each checkpoint under its Triton name, written by the plan's renderer
 * (infra/plan/vllmRepository.ts through scripts/vllm-repository.ts) with the CPU settings: half the
 * context for the prompt.
 */
function assemble(repository: string, dirs: Record<keyof typeof VLLM_MODELS, string>): void {
  for (const [key, m] of Object.entries(VLLM_MODELS)) {
    const limits = {
      context: m.context,
      maxInputLen: m.context / 2,
      maxOutputLen: m.context / 2,
      maxNumSeqs: MAX_NUM_SEQS,
    };
    writeVllmRepository(repository, cpuSettings(dirs[key as keyof typeof VLLM_MODELS], limits), m.name);
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const work = process.env.VLLM_GATEWAY_TEST_WORK ?? mkdtempSync(path.join(os.tmpdir(), "triton-ft-vllm-gw-"));
  const keepWork = process.env.VLLM_GATEWAY_TEST_WORK !== undefined;
  const stoppers: Array<() => Promise<void>> = [];
  const started = Date.now();
  try {
    const python = venvPython(VLLM_LOCK);
    const repository = path.join(work, "vllm-repository");
    rmSync(repository, { recursive: true, force: true });
    assemble(repository, checkpoints(python, work));
    log(`checkpoints and the vLLM repository ready in ${Math.round((Date.now() - started) / 1000)} s`);
    const server = startVllmServer(work, "vllm", repository, python);
    stoppers.push(server.stop);
    // The FT stand-in starts while vLLM loads: its synth and server need no vLLM.
    const ftServer = await startTritonDecoupled(work, STEP_MS);
    stoppers.push(ftServer.stop);
    const vllmState = await server.ready;
    log(`vLLM tritonserver ready at grpc ${vllmState.grpc} in ${Math.round((Date.now() - started) / 1000)} s`);

    const chatTemplate = findPreset(CHAT_PRESET)?.chatTemplate;
    if (!chatTemplate) throw new Error(`preset ${CHAT_PRESET} declares no chat template`);
    const vllmModel = (m: (typeof VLLM_MODELS)[keyof typeof VLLM_MODELS]): GatewayModel => ({
      id: m.id,
      maxInputLen: m.context / 2,
      maxOutputLen: m.context / 2,
      maxBatchSize: MAX_NUM_SEQS,
      vocab: TINY_VOCAB,
      chatTemplate,
      // As infra/plan/gateway.ts renders a vLLM model.
      engine: "vllm",
      maxLogprobs: MAX_LOGPROBS,
      cancellable: true,
    });
    const models = {
      gpt2: { ...vllmModel(VLLM_MODELS.gpt2), ensemble: VLLM_MODELS.gpt2.name },
      neox: { ...vllmModel(VLLM_MODELS.neox), ensemble: VLLM_MODELS.neox.name },
    };
    const ft: GatewayModel = { ...ftServer.model, chatTemplate };
    const route = (m: GatewayModel, grpc: string): GatewayRoute => ({ ...m, tritonGrpc: grpc, maxInflight: 16 });
    const config = renderGatewayConfig(
      [
        route(ft, ftServer.info.grpc),
        route(vllmModel(VLLM_MODELS.gpt2), vllmState.grpc),
        route(vllmModel(VLLM_MODELS.neox), vllmState.grpc),
      ],
      { requestTimeoutSeconds: 120 },
    );
    // One tritonserver holds both vLLM models: each is called by its own name there.
    const ensembles = new Map([
      [models.gpt2.id, models.gpt2.ensemble],
      [models.neox.id, models.neox.ensemble],
    ]);
    const gateway = await startGateway(
      work,
      "mixed",
      {
        ...config,
        models: config.models.map((m) => ({
          ...m,
          triton: { ...m.triton, ensemble: ensembles.get(m.id) ?? m.triton.ensemble },
        })),
      },
      [
        { name: "team-a", maxConcurrent: 16 },
        { name: "only-vllm", models: [models.gpt2.id, models.neox.id] },
        { name: "catalogue", maxConcurrent: 16 },
        { name: "usage" },
      ],
    );
    stoppers.push(gateway.stop);
    log(`gateway ${gateway.gateway.url} (FT ${ft.id}, vLLM ${models.gpt2.id} and ${models.neox.id})`);
    project.provide("vllmGateway", {
      vllm: { grpc: vllmState.grpc, log: server.log, python, models },
      ft,
      gateway: gateway.gateway,
      vllmServerPid: server.pid,
    });
  } catch (error) {
    for (const s of stoppers.reverse()) await s();
    throw error;
  }
  return async () => {
    for (const s of stoppers.reverse()) await s();
    log("gateway and tritonservers stopped");
    if (!keepWork) rmSync(work, { recursive: true, force: true });
  };
}
