/**
 * Measured step times: what a real run of a build step took, as
 * scripts/remote/measure-step.sh records it on the host beside the step's
 * marker and prints it (`RESULT step_seconds=…`, `step_net_bytes=…`,
 * `step_measured_at=…`), the `buildStepTimes` stack output they become, and
 * reading that output back (synth --measured, the preview).
 *
 * A measurement belongs to the step's input hash: the host prints it only when
 * its record holds the hash of the marker the step left (a skipped re-run
 * prints the record of the run that did the work), and a command's output in
 * Pulumi's state is that of the run its current triggers (the step's input
 * hash among them) started. So the stack output labels each measurement with
 * the plan's input hash of the step, and an estimate uses it only for a step
 * whose input hash is still the same.
 *
 * Pure.
 */
import { STEP_IDS, type StepId } from "./stepGraph";

/** One real run of one step, as the host recorded it (a type, not an interface: it is a stack output's object). */
export type StepMeasurement = {
  seconds: number;
  /** Bytes the host's network interfaces moved during the run (both directions, loopback excluded). */
  netBytes: number;
  /** UTC time the run finished, `YYYY-MM-DDTHH:MM:SSZ`. */
  measuredAt: string;
};

/** One entry of the `buildStepTimes` output: a measurement and the step inputs it belongs to. */
export type MeasuredStep = StepMeasurement & {
  step: StepId;
  /** The plan's input hash of the step (plan.json `inputHash`) when it ran. */
  inputHash: string;
};

/** The stack output the measurements are exported as. */
export const STEP_TIMES_OUTPUT = "buildStepTimes";

const TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/;

/** The measurement lines of a step's stdout (the last of each wins), or undefined when the step printed none. */
export function parseStepMeasurement(stdout: string): StepMeasurement | undefined {
  const found: Record<string, string> = {};
  for (const line of stdout.split(/\r?\n/)) {
    const m = /^RESULT step_(seconds|net_bytes|measured_at)=(\S+)\s*$/.exec(line);
    if (m?.[1] && m[2]) found[m[1]] = m[2];
  }
  const { seconds, net_bytes: bytes, measured_at: at } = found;
  if (!seconds || !/^\d+$/.test(seconds) || !at || !TIME.test(at)) return undefined;
  return { seconds: Number(seconds), netBytes: bytes && /^\d+$/.test(bytes) ? Number(bytes) : 0, measuredAt: at };
}

/** The output's entries of one pipeline: each step that printed a measurement, labelled with its input hash. */
export function measuredSteps(
  steps: ReadonlyArray<{ id: StepId; inputHash: string; stdout: string | undefined }>,
): MeasuredStep[] {
  return steps.flatMap((s) => {
    const m = s.stdout === undefined ? undefined : parseStepMeasurement(s.stdout);
    return m ? [{ step: s.id, inputHash: s.inputHash, ...m }] : [];
  });
}

const isStep = (v: unknown): v is StepId => typeof v === "string" && (STEP_IDS as readonly string[]).includes(v);
const count = (v: unknown): v is number => typeof v === "number" && Number.isInteger(v) && v >= 0;

/**
 * The measurements of an exported stack output: the whole `pulumi stack
 * output --json` object (its `buildStepTimes`), or that output alone (`pulumi
 * stack output buildStepTimes --json`). Entries that are not measurements are
 * refused with where they are, so a wrong file is not read as "no measurements".
 */
export function readMeasuredSteps(value: unknown, source: string): MeasuredStep[] {
  const list =
    value !== null && typeof value === "object" && !Array.isArray(value)
      ? (value as Record<string, unknown>)[STEP_TIMES_OUTPUT]
      : value;
  if (!Array.isArray(list))
    throw new Error(
      `${source}: expected the stack's outputs (\`pulumi stack output --json\`) with ${STEP_TIMES_OUTPUT}, or that output alone (\`pulumi stack output ${STEP_TIMES_OUTPUT} --json\`)`,
    );
  return list.map((e: unknown, i) => {
    const r = (e ?? {}) as Record<string, unknown>;
    if (
      !isStep(r.step) ||
      typeof r.inputHash !== "string" ||
      !count(r.seconds) ||
      !count(r.netBytes) ||
      typeof r.measuredAt !== "string" ||
      !TIME.test(r.measuredAt)
    )
      throw new Error(
        `${source}: ${STEP_TIMES_OUTPUT}[${i}] is not {step, inputHash, seconds, netBytes, measuredAt}: ${JSON.stringify(e)}`,
      );
    return { step: r.step, inputHash: r.inputHash, seconds: r.seconds, netBytes: r.netBytes, measuredAt: r.measuredAt };
  });
}
