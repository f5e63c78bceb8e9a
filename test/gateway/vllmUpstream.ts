/**
 * The gateway suite's models in vLLM mode (GATEWAY_UPSTREAM=vllm): one real CPU tritonserver serving the
 * project's vLLM model (images/vllm, its repository written by the stack's renderer through
 * scripts/vllm-repository.ts) twice, as the FT mode's server serves two ensembles: the first model on the
 * tiny random GPT-2 checkpoint under the production name `ensemble`, the second on the tiny GPT-J one
 * with SECOND_MODEL's smaller limits under `<prefix>ensemble` (not the GPT-NeoX one: its greedy tokens are
 * bytes that never complete a UTF-8 character, so its text stays empty). Both share the test tokenizer
 * (test/vllm/make_checkpoints.py), so token counts are the FT mode's.
 */
import path from "node:path";
import { rmSync } from "node:fs";
import { ENSEMBLE_MODEL } from "../../infra/conventions/workload";
import type { GatewayModel } from "../../infra/plan/types";
import { writeVllmRepository } from "../../scripts/vllm-repository";
import { VLLM_LOCK, venvPython } from "../lib/pyenv";
import {
  MAX_LOGPROBS,
  TINY_VOCAB,
  type TinyLimits,
  cpuSettings,
  startVllmServer,
  writeTinyCheckpoints,
} from "../vllm/tinyModels";

/** The first model's limits: the GPT-2 checkpoint's whole 128 positions, half for the prompt. */
const FIRST_LIMITS: TinyLimits = { context: 128, maxInputLen: 64, maxOutputLen: 64, maxNumSeqs: 8 };

/** A served model's gateway entry without its chat template, as infra/plan/gateway.ts renders a vLLM model. */
function vllmModel(id: string, limits: TinyLimits): Omit<GatewayModel, "chatTemplate"> {
  return {
    id,
    maxInputLen: limits.maxInputLen,
    maxOutputLen: limits.maxOutputLen,
    maxBatchSize: limits.maxNumSeqs,
    vocab: TINY_VOCAB,
    engine: "vllm",
    maxLogprobs: MAX_LOGPROBS,
    cancellable: true,
  };
}

export interface VllmUpstream {
  triton: { repository: string; http: string; grpc: string; log: string };
  first: Omit<GatewayModel, "chatTemplate">;
  second: { model: Omit<GatewayModel, "chatTemplate">; ensemble: string };
  stop: () => Promise<void>;
}

/** Writes the checkpoints and the repository under `work`, starts the server, and resolves once both models are ready. */
export async function startVllmUpstream(
  work: string,
  secondModel: { idSuffix: string; prefix: string; maxBatchSize: number; maxInputLen: number; maxOutputLen: number },
): Promise<VllmUpstream> {
  const python = venvPython(VLLM_LOCK);
  const checkpoints = writeTinyCheckpoints(python, path.join(work, "checkpoints"));
  const repository = path.join(work, "vllm-repository");
  rmSync(repository, { recursive: true, force: true });
  const secondLimits: TinyLimits = {
    context: secondModel.maxInputLen + secondModel.maxOutputLen,
    maxInputLen: secondModel.maxInputLen,
    maxOutputLen: secondModel.maxOutputLen,
    maxNumSeqs: secondModel.maxBatchSize,
  };
  writeVllmRepository(repository, cpuSettings(checkpoints.gpt2, FIRST_LIMITS), ENSEMBLE_MODEL);
  const secondEnsemble = `${secondModel.prefix}${ENSEMBLE_MODEL}`;
  writeVllmRepository(repository, cpuSettings(checkpoints.gptj, secondLimits), secondEnsemble);
  const server = startVllmServer(work, "vllm", repository, python);
  const state = await server.ready.catch(async (error: unknown) => {
    await server.stop();
    throw error;
  });
  const firstId = "tiny-gpt2";
  return {
    triton: { repository, http: state.http, grpc: state.grpc, log: state.log },
    first: vllmModel(firstId, FIRST_LIMITS),
    second: { model: vllmModel(`tiny-gptj${secondModel.idSuffix}`, secondLimits), ensemble: secondEnsemble },
    stop: server.stop,
  };
}
