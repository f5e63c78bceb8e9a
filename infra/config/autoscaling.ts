/**
 * `serving.autoscaling`: the schema of the queue-based autoscaling block. Kept
 * apart from schema.ts so the scaling keys, their defaults and their semantic
 * checks (autoscalingProblems) live next to each other. Pure, no Pulumi.
 */
import { unsetMeans } from "./statedDefault";
import { z } from "zod";

/** Karpenter capacity types this stack offers: on-demand (default) or spot with on-demand fallback. */
export const CAPACITY_TYPES = ["on-demand", "spot"] as const;
export type CapacityType = (typeof CAPACITY_TYPES)[number];

/** The Prometheus the stack installs (kube-prometheus-stack in `monitoring`): the operator's governing Service. */
export const MONITORING_NAMESPACE = "monitoring";
export const STACK_PROMETHEUS_URL = `http://prometheus-operated.${MONITORING_NAMESPACE}.svc:9090`;

/**
 * Default idle window of a model with min 0: long enough that a model used
 * through a working session stays up between requests (a cold start costs
 * minutes), short enough that nights and weekends are asleep. docs/scaling.md
 * "Scale to zero" says how to choose it.
 */
export const DEFAULT_IDLE_MINUTES = 30;
/** KEDA takes any cooldown; past a day a model that sleeps at all should rather be removed. */
export const MAX_IDLE_MINUTES = 1440;

/** The keys that only mean something with min 0 (a model that sleeps). */
export const SLEEP_KEYS = ["idleMinutes", "holdQueueDepth", "activationTimeoutSeconds"] as const;

/** Default target of the queue/compute ratio; docs/scaling.md "Autoscaling and observability" explains the choice. */
export const DEFAULT_QUEUE_COMPUTE_TARGET = 0.5;

export const autoscalingSchema = z
  .object({
    min: z
      .number()
      .int()
      .min(0)
      .describe(
        "Fewest Triton pods. 0 lets the model sleep: after idleMinutes without requests its pods and GPU nodes go, and the gateway holds its requests while it wakes (docs/scaling.md, Scale to zero).",
      ),
    max: z.number().int().min(1).describe("Most Triton pods. Also bounds the GPU nodes (NodePool limits)."),
    target: z
      .number()
      .positive()
      .max(10)
      .default(DEFAULT_QUEUE_COMPUTE_TARGET)
      .describe(
        "Target of rate(queue time) / rate(compute time) of the fastertransformer model across pods; pods are added above it.",
      ),
    prometheusUrl: z
      .string()
      .regex(/^https?:\/\/[^\s/]+(\/\S*)?$/, "an http(s) URL such as http://prometheus.monitoring.svc:9090")
      .optional()
      .describe("Your Prometheus that scrapes Triton, for the KEDA scaler.")
      .meta(unsetMeans("none: the stack installs kube-prometheus-stack and uses it")),
    capacityType: z
      .enum(CAPACITY_TYPES)
      .default("on-demand")
      .describe("GPU node capacity: on-demand, or spot with on-demand fallback (needs min >= 2)."),
    fastImagePull: z
      .boolean()
      .default(true)
      .describe(
        "Parallel image pull and unpack on the GPU nodes (nodeadm FastImagePull, SOCI parallel mode; AWS calls it experimental).",
      ),
    capacityReservationIds: z
      .array(z.string())
      .default([])
      .describe("EC2 On-Demand Capacity Reservations (cr-...) Karpenter launches into first, e.g. for p4d."),
    idleMinutes: z
      .number()
      .int()
      .min(1)
      .max(MAX_IDLE_MINUTES)
      .optional()
      .describe(
        "With min 0: minutes without a request (held, in flight or finished) before the model goes to 0 pods (KEDA cooldownPeriod).",
      )
      .meta(unsetMeans(`${DEFAULT_IDLE_MINUTES}`)),
    holdQueueDepth: z
      .number()
      .int()
      .min(1)
      .optional()
      .describe(
        "With min 0: requests each gateway pod holds for the model while it wakes; beyond it 429 with Retry-After.",
      )
      .meta(unsetMeans("the model's in-flight cap: 2 × maxBatchSize × max")),
    activationTimeoutSeconds: z
      .number()
      .int()
      .min(1)
      .optional()
      .describe("With min 0: how long a held request waits for the model to wake before a 503 model_unavailable.")
      .meta(
        unsetMeans("the plan's zero-to-serving estimate (activation + node boot + serial pull + load), to the minute"),
      ),
  })
  .strict();

export type AutoscalingConfig = z.infer<typeof autoscalingSchema>;

/** An EC2 capacity reservation id. */
const CAPACITY_RESERVATION_ID = /^cr-[0-9a-f]{17}$/;

/** One problem with the autoscaling block, in the validator's shape (key without the project prefix). */
export interface AutoscalingProblem {
  key: string;
  value: unknown;
  message: string;
  fix: string;
}

/**
 * Semantic checks of `serving.autoscaling` that need no model: every one is
 * reported (not only the first). `replicasSet` says whether `serving.replicas`
 * was given explicitly (the schema's default hides that).
 */
export function autoscalingProblems(
  a: AutoscalingConfig | undefined,
  ctx: { replicasSet: boolean; clusterMode: string },
): AutoscalingProblem[] {
  if (!a) return [];
  const out: AutoscalingProblem[] = [];
  const add = (key: string, value: unknown, message: string, fix: string) =>
    out.push({ key: `serving.autoscaling.${key}`.replace(/\.$/, ""), value, message, fix });
  if (ctx.replicasSet) {
    out.push({
      key: "serving.replicas",
      value: "(set)",
      message: "is a fixed size, but serving.autoscaling is also set",
      fix: "remove serving.replicas (the autoscaler starts at serving.autoscaling.min), or remove serving.autoscaling",
    });
  }
  if (a.min > a.max) add("max", a.max, `is below serving.autoscaling.min (${a.min})`, `raise max to at least ${a.min}`);
  if (a.min > 0) {
    for (const k of SLEEP_KEYS)
      if (a[k] !== undefined)
        add(
          k,
          a[k],
          `only applies to a model that sleeps (min 0), and min is ${a.min}`,
          `remove serving.autoscaling.${k}, or set serving.autoscaling.min to 0`,
        );
  }
  if (ctx.clusterMode !== "create") {
    add(
      "",
      { min: a.min, max: a.max },
      `needs cluster.mode create (KEDA and Karpenter are installed with the cluster), got ${ctx.clusterMode}`,
      "use cluster.mode create, or a fixed serving.replicas on an existing cluster",
    );
  }
  if (a.capacityType === "spot" && a.min < 2) {
    add(
      "capacityType",
      a.capacityType,
      `with min ${a.min} lets one spot interruption stop the endpoint for a whole cold start (node boot + image pull + model load)`,
      "raise serving.autoscaling.min to 2 or more, or use capacityType on-demand",
    );
  }
  a.capacityReservationIds.forEach((id, i) => {
    if (!CAPACITY_RESERVATION_ID.test(id)) {
      add(
        `capacityReservationIds[${i}]`,
        id,
        "is not an EC2 capacity reservation id",
        "use the id as EC2 shows it, e.g. cr-0123456789abcdef0",
      );
    }
  });
  if (a.capacityReservationIds.length > 0 && a.capacityType === "spot") {
    add(
      "capacityReservationIds",
      a.capacityReservationIds,
      "are on-demand capacity, but capacityType is spot",
      "use capacityType on-demand with capacity reservations",
    );
  }
  return out;
}

/**
 * A fixed size of 0: the model's GPU nodes come from a managed node group
 * that keeps them (and bills them) whatever the pod count, and nothing would
 * wake the model. Sleeping needs nodes that go away with the pods: Karpenter,
 * i.e. serving.autoscaling with min 0.
 */
export function fixedSizeProblems(replicas: number, a: AutoscalingConfig | undefined): AutoscalingProblem[] {
  if (replicas !== 0 || a) return [];
  return [
    {
      key: "serving.replicas",
      value: replicas,
      message:
        "is 0, but a fixed size runs on a managed node group that keeps its GPU nodes (and bills them) with no pod on them, and nothing would wake the model",
      fix: "to let the model sleep, remove serving.replicas and set serving.autoscaling: {min: 0, max: 1} (Karpenter nodes go with the pods; needs cluster.mode create); to serve, set serving.replicas to 1 or more",
    },
  ];
}

/** The stack installs its own Prometheus Operator stack when autoscaling has no Prometheus to query. */
export function installsMonitoring(a: AutoscalingConfig | undefined): boolean {
  return a !== undefined && a.prometheusUrl === undefined;
}

/** ServiceMonitors are rendered when the operator is there: the cluster's (serving.serviceMonitor) or the stack's. */
export function prometheusOperatorPresent(serviceMonitor: boolean, a: AutoscalingConfig | undefined): boolean {
  return serviceMonitor || installsMonitoring(a);
}
