/**
 * GPUs the stack pays for and no pod uses: a tensor parallelism that does not
 * divide the instance's GPUs leaves the remainder of every node idle, and a
 * fixed replica count that does not fill the nodes (beyond the one slot a
 * rolling update needs) leaves whole pod slots idle. A warning, not a
 * refusal (the stack works), with what the idle GPUs cost a month at the
 * on-demand price of the stack's Region (infra/data/prices/aws.json).
 */
import type { GpuInstance } from "../catalog/gpus";
import { HOURS_PER_MONTH, instanceHourly, regionPrices } from "../catalog/prices";
import type { StackConfig } from "../config/schema";
import type { Add } from "../config/schema";

export interface IdleGpus {
  /** Idle GPUs over all of the model's GPU nodes (autoscaled: at its minimum and at its maximum). */
  min: number;
  max: number;
  nodes: { min: number; max: number };
}

/** The GPUs no pod uses on the nodes the model runs on; the rollout's surge slot counts as used. */
export function idleGpus(serving: StackConfig["serving"], instance: GpuInstance): IdleGpus | undefined {
  const tp = serving.tensorParallel;
  const podsPerNode = Math.floor(instance.gpuCount / tp);
  if (podsPerNode < 1) return undefined; // the tensor-parallel rule refuses it
  const idle = (pods: number, nodes: number) => nodes * instance.gpuCount - pods * tp;
  const a = serving.autoscaling;
  if (a) {
    // Karpenter packs the pods that run onto whole nodes.
    const nodes = { min: Math.ceil(a.min / podsPerNode), max: Math.ceil(a.max / podsPerNode) };
    return { min: idle(a.min, nodes.min), max: idle(a.max, nodes.max), nodes };
  }
  // A managed node group of ceil((replicas + 1) / podsPerNode) nodes: one slot stays free for the rollout.
  const n = Math.ceil((serving.replicas + 1) / podsPerNode);
  const spare = idle(serving.replicas + 1, n);
  return { min: spare, max: spare, nodes: { min: n, max: n } };
}

export function checkIdleGpus(config: StackConfig, instance: GpuInstance, region: string | undefined, warn: Add): void {
  const s = config.serving;
  const idle = idleGpus(s, instance);
  if (!idle || idle.max <= 0) return;
  const tp = s.tensorParallel;
  const per = `${instance.type} has ${instance.gpuCount} GPUs`;
  const range = idle.min === idle.max ? `${idle.max}` : `${idle.min} to ${idle.max}`;
  const cause =
    instance.gpuCount % tp !== 0
      ? `tensorParallel ${tp} does not divide them, so ${instance.gpuCount % tp} per node can never serve`
      : s.autoscaling
        ? `the last node is not full at every replica count`
        : `${s.replicas} replica(s) of ${tp} GPU(s) and the rollout's one free slot do not fill ${idle.nodes.max} node(s)`;
  const lookup = regionPrices(region);
  const hourly = lookup.ok ? instanceHourly(lookup.prices, instance.type) : undefined;
  const cost =
    hourly && "usd" in hourly
      ? (n: number) => `$${Math.round((n / instance.gpuCount) * hourly.usd * HOURS_PER_MONTH).toLocaleString("en-US")}`
      : undefined;
  const money = cost
    ? `, about ${idle.min === idle.max ? cost(idle.max) : `${cost(idle.min)} to ${cost(idle.max)}`}/month at the on-demand price in ${region}`
    : ` (not priced: ${lookup.ok ? `no on-demand price for ${instance.type}` : lookup.warning})`;
  const fits = [...Array(instance.gpuCount).keys()].map((i) => i + 1).filter((d) => instance.gpuCount % d === 0);
  warn(
    "serving.tensorParallel",
    tp,
    `leaves ${range} GPU(s) idle: ${per}, and ${cause}${money}`,
    instance.gpuCount % tp !== 0
      ? `use a tensorParallel that divides ${instance.gpuCount} (${fits.join(", ")}) and the model's heads, or an instance with a multiple of ${tp} GPUs`
      : s.autoscaling
        ? "let autoscaling.min and max be multiples of the pods per node, or accept the partial node"
        : `set replicas so that replicas + 1 fills the nodes (a multiple of ${Math.floor(instance.gpuCount / tp)}, minus 1), or use an instance with fewer GPUs`,
  );
}
