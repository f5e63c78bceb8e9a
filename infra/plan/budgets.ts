/**
 * Time budgets of the remote build steps (the Pulumi custom timeouts of their
 * commands), from an estimate of each step's work: a hung step then fails in
 * minutes, not hours. Budget = BUDGET_FACTOR × estimate, so every budget is
 * within 3× of its estimate.
 *
 * The conversion estimate comes from measurements: the real FT converters on
 * 16 vCPUs, random weights with the exact architectures (MEASURED below). Per
 * parameter they cost about the same for GPT-J and GPT-NeoX, so the rate of a
 * phase is the slower of the two; GPT-2 (unmeasured) takes the GPT-J rates and
 * CodeGen's re-layout the consolidate rate. Builders with fewer than 16 vCPUs
 * are assumed proportionally slower, larger ones no faster.
 *
 * The other steps move bytes at ASSUMED rates (not measured here): in-region
 * ECR pulls and pushes with layer extraction, Hugging Face downloads.
 *
 * Pure: plain numbers in, minutes out.
 */
import { TRITON_WITH_FT_IMAGE_BYTES } from "../model/sizing";
import type { Family } from "../model/types";

/** Budget = this × estimate (rounded up to a minute): headroom for a slower host, never more than 3×. */
export const BUDGET_FACTOR = 2.5;

/** Measured with the real FT converters on 16 vCPUs (seconds; peak RAM in GiB). */
export const MEASURED = {
  vcpus: 16,
  kogpt: {
    family: "gptj",
    parameters: 6_166_502_400,
    consolidateSeconds: 13.5,
    converterSeconds: 310.6,
    converterPeakRamGiB: 14.2,
    fp16Seconds: 71.4,
    fp16PeakRamGiB: 3.1,
    verifySeconds: 0.3,
  },
  h2ogpt: {
    family: "gptneox",
    parameters: 6_857_302_016,
    consolidateSeconds: 11.2,
    /** `-p 4`, fp16 out; peak host RAM 28.1 GiB (the workers share pages) against 35.9 GiB predicted by sizing.ts. */
    converterSeconds: 308.0,
    converterPeakRamGiB: 28.1,
  },
  /** Weights after the fp16 rewrite. */
  fp16BytesPerParameter: 2.0,
} as const;

/** Seconds per parameter at MEASURED.vcpus, the slower of the measured families. */
export const RATES = {
  consolidate: Math.max(
    MEASURED.kogpt.consolidateSeconds / MEASURED.kogpt.parameters,
    MEASURED.h2ogpt.consolidateSeconds / MEASURED.h2ogpt.parameters,
  ),
  converter: Math.max(
    MEASURED.kogpt.converterSeconds / MEASURED.kogpt.parameters,
    MEASURED.h2ogpt.converterSeconds / MEASURED.h2ogpt.parameters,
  ),
  fp16: MEASURED.kogpt.fp16Seconds / MEASURED.kogpt.parameters,
  verify: MEASURED.kogpt.verifySeconds / MEASURED.kogpt.parameters,
} as const;

/** Assumed transfer rates (bytes/s) and fixed costs (s); not measured here. */
export const ASSUMED = {
  /** docker pull from ECR in the same region, layers extracted. */
  ecrPullBytesPerSecond: 50 * 1024 ** 2,
  /** docker push to ECR in the same region. */
  ecrPushBytesPerSecond: 50 * 1024 ** 2,
  /** Hugging Face Hub (or an archive URL) to EC2. */
  downloadBytesPerSecond: 50e6,
  /** Local disk copies (build context, EBS gp3 at 500 MiB/s, half of it). */
  diskBytesPerSecond: 250 * 1024 ** 2,
  /** Starting one container (each conversion phase runs in its own). */
  containerStartSeconds: 15,
  /** fetch's tooling: a venv with huggingface_hub, the Hub's API calls, the config check. */
  fetchSetupSeconds: 5 * 60,
  /** cloud-init, driver and Docker checks, git-lfs install, ECR login. */
  hostReadySeconds: 10 * 60,
  /** The Triton base image pull and the pip installs of the recipe. */
  tritonBaseSeconds: 15 * 60,
  /** The FT + backend compile: about 16 core-hours. */
  compileCoreSeconds: 16 * 3600,
  /** gpt_gemm sweep: seconds per (batch × beam × input length) unit, plus a fixed part. */
  gemmSecondsPerUnit: 60 / 1024,
  gemmFixedSeconds: 5 * 60,
  /** The gateway image: a Node base image, npm ci, a small push; whatever the model. */
  gatewayImageSeconds: 8 * 60,
} as const;

/** The triton_with_ft image (model/sizing.ts): pulled by convert and gemm, pushed by its build, the base of the bake. */
const TRITON_WITH_FT_BYTES = TRITON_WITH_FT_IMAGE_BYTES;

export interface BudgetInputs {
  family: Family;
  parameters: number;
  /** vCPUs of the builder. */
  vcpus: number;
  /** Checkpoint as downloaded (archive or HF repo), bytes; defaults to fp32 (4 bytes per parameter). */
  checkpointBytes?: number;
  gemm: { batchSize: number; beamWidth: number; maxInputLen: number };
}

export type StepId = "host-ready" | "triton-with-ft" | "fetch" | "convert" | "gemm" | "bake" | "gateway-image";

export interface StepEstimate {
  seconds: number;
  /** Seconds per part, for docs/operating.md and plan.json. */
  parts: Record<string, number>;
}

/** Conversion phases that run for a family (GPT-2 and the JAX archive skip consolidation; GPT-NeoX and GPT-2 convert straight to fp16). */
function convertParts(i: BudgetInputs): Record<string, number> {
  const slow = Math.max(1, MEASURED.vcpus / i.vcpus);
  const p = i.parameters;
  const parts: Record<string, number> = {
    "pull triton_with_ft": TRITON_WITH_FT_BYTES / ASSUMED.ecrPullBytesPerSecond,
    containers: 4 * ASSUMED.containerStartSeconds,
  };
  if (i.family !== "gpt") parts.consolidate = p * RATES.consolidate * slow;
  if (i.family === "codegen") parts["re-layout"] = p * RATES.consolidate * slow;
  parts.converter = p * RATES.converter * slow;
  if (i.family === "gptj" || i.family === "codegen") parts.fp16 = p * RATES.fp16 * slow;
  parts.verify = p * RATES.verify * slow;
  return parts;
}

const sum = (parts: Record<string, number>) => Object.values(parts).reduce((a, b) => a + b, 0);
const est = (parts: Record<string, number>): StepEstimate => ({ seconds: sum(parts), parts });

export function stepEstimates(i: BudgetInputs): Record<StepId, StepEstimate> {
  const p = i.parameters;
  const weights = p * MEASURED.fp16BytesPerParameter;
  const checkpoint = i.checkpointBytes ?? p * 4;
  const g = i.gemm;
  return {
    "host-ready": est({ "cloud-init and checks": ASSUMED.hostReadySeconds }),
    "triton-with-ft": est({
      "base image and pip": ASSUMED.tritonBaseSeconds,
      compile: ASSUMED.compileCoreSeconds / i.vcpus,
      push: TRITON_WITH_FT_BYTES / ASSUMED.ecrPushBytesPerSecond,
    }),
    fetch: est({
      "tool setup": ASSUMED.fetchSetupSeconds,
      download: checkpoint / ASSUMED.downloadBytesPerSecond,
      "check and stamp": checkpoint / ASSUMED.diskBytesPerSecond + 60,
    }),
    convert: est(convertParts(i)),
    gemm: est({
      "pull triton_with_ft": TRITON_WITH_FT_BYTES / ASSUMED.ecrPullBytesPerSecond,
      sweep: ASSUMED.gemmFixedSeconds + g.batchSize * g.beamWidth * g.maxInputLen * ASSUMED.gemmSecondsPerUnit,
    }),
    bake: est({
      "verify and build context": weights / ASSUMED.diskBytesPerSecond + 60,
      push: (TRITON_WITH_FT_BYTES + weights) / ASSUMED.ecrPushBytesPerSecond,
    }),
    "gateway-image": est({ "build and push": ASSUMED.gatewayImageSeconds }),
  };
}

/** Whole minutes: BUDGET_FACTOR × estimate, rounded up. */
export function budgetMinutes(estimate: StepEstimate): number {
  return Math.ceil((BUDGET_FACTOR * estimate.seconds) / 60);
}

export function stepBudgetMinutes(i: BudgetInputs): Record<StepId, number> {
  const e = stepEstimates(i);
  return Object.fromEntries(Object.entries(e).map(([k, v]) => [k, budgetMinutes(v)])) as Record<StepId, number>;
}
