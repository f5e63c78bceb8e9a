/**
 * The whole build-and-serve plan of a resolved stack, as one JSON-serialisable
 * object: what `synth` writes to plan.json and what the build and serving
 * components turn into resources.
 */
import type { Family, ModelArch } from "../model/types";
import { renderModelRepository, type RenderedRepository, type RepositoryOptions } from "../render/modelRepository";
import type { ResolvedStack } from "../validate";
import { conversionPlan, type ConversionPlan } from "./conversion";
import { gemmPlan, type GemmPlan } from "./gemm";
import { launchPlan, type LaunchPlan } from "./launch";
import { FAMILY_SERVING, MODEL_REPOSITORY_DIR, TOKENIZER_DIR, serverCheckpointPath } from "./paths";
import type { ExpectedWeights } from "./weights";

export const PLAN_SCHEMA_VERSION = 1;

/** FT's custom all-reduce only helps at TP 8 over NVSwitch (p4d/p4de); elsewhere it is slower or unsupported. */
export const CUSTOM_ALL_REDUCE_TP = 8;

export interface Plan {
  schemaVersion: number;
  model: {
    name: string;
    preset?: string;
    family: Family;
    ftModelType: string;
    source: ResolvedStack["model"]["source"];
    tokenizerSource?: { repo: string; revision: string };
    arch: ModelArch;
    /** Token ids the Python models use; pad_id is end_id (FT pads finished beams with end_id). */
    tokens: { startId: number; endId: number; padId: number };
  };
  serving: {
    instanceType: string;
    gpuModel: string;
    tensorParallel: number;
    maxBatchSize: number;
    maxInputLen: number;
    maxOutputLen: number;
    customAllReduce: boolean;
    dynamicBatching: boolean;
    /** Estimated memory per GPU, GiB (weights + KV cache + headroom). */
    gpuMemoryGiB: { weights: number; kvCache: number; headroom: number; total: number };
  };
  build: {
    tritonVersion: string;
    backendCommit: string;
    ftCommit: string;
    builderInstanceType: string;
    builderDiskGiB: number;
    sm: number;
  };
  conversion: ConversionPlan;
  expectedWeights: ExpectedWeights;
  gemm: GemmPlan;
  launch: LaunchPlan;
  modelRepository: RenderedRepository & {
    /** Absolute path in the server image. */
    root: string;
    tokenizerPath: string;
    checkpointPath: string;
  };
}

const GiB = 1024 ** 3;
const gib = (bytes: number) => Math.round((bytes / GiB) * 100) / 100;

export function repositoryOptions(stack: ResolvedStack): RepositoryOptions {
  const s = stack.config.serving;
  const a = stack.model.arch;
  return {
    family: stack.model.family,
    tensorParallel: s.tensorParallel,
    maxBatchSize: s.maxBatchSize,
    maxInputLen: s.maxInputLen,
    maxOutputLen: s.maxOutputLen,
    checkpointPath: serverCheckpointPath(s.tensorParallel),
    tokenizerPath: TOKENIZER_DIR,
    startId: a.startId,
    endId: a.endId,
    padId: a.endId,
    customAllReduce: s.tensorParallel === CUSTOM_ALL_REDUCE_TP && stack.servingInstance.nvswitch,
  };
}

export function buildPlan(stack: ResolvedStack): Plan {
  const { model, config } = stack;
  const tp = config.serving.tensorParallel;
  const repo = repositoryOptions(stack);
  const conversion = conversionPlan(model, tp, stack.builderInstance);
  const m = stack.memory;
  return {
    schemaVersion: PLAN_SCHEMA_VERSION,
    model: {
      name: model.name,
      preset: model.preset,
      family: model.family,
      ftModelType: FAMILY_SERVING[model.family].modelType,
      source: model.source,
      tokenizerSource: model.tokenizerSource,
      arch: model.arch,
      tokens: { startId: repo.startId, endId: repo.endId, padId: repo.padId },
    },
    serving: {
      instanceType: stack.servingInstance.type,
      gpuModel: stack.servingInstance.gpuModel,
      tensorParallel: tp,
      maxBatchSize: config.serving.maxBatchSize,
      maxInputLen: config.serving.maxInputLen,
      maxOutputLen: config.serving.maxOutputLen,
      customAllReduce: repo.customAllReduce,
      dynamicBatching: FAMILY_SERVING[model.family].dynamicBatching,
      gpuMemoryGiB: {
        weights: gib(m.weightsBytes),
        kvCache: gib(m.kvCacheBytes),
        headroom: gib(m.headroomBytes),
        total: gib(m.totalBytes),
      },
    },
    build: {
      tritonVersion: config.build.tritonVersion,
      backendCommit: config.build.backendCommit ?? "",
      ftCommit: config.build.ftCommit ?? "",
      builderInstanceType: stack.builderInstance.type,
      builderDiskGiB: stack.builderDiskGiB,
      sm: stack.servingInstance.sm,
    },
    conversion,
    expectedWeights: conversion.expectedWeights,
    gemm: gemmPlan(model.arch, stack.gemm, tp, conversion.work.gemm),
    launch: launchPlan(tp),
    modelRepository: {
      root: MODEL_REPOSITORY_DIR,
      tokenizerPath: repo.tokenizerPath,
      checkpointPath: repo.checkpointPath,
      ...renderModelRepository(repo),
    },
  };
}
