/**
 * The assumptions the monthly figure rests on where the stack's config says
 * nothing: how busy the endpoint is, how often nodes pull the server image,
 * how big the small images are. Each is a stated guess with its reason;
 * docs/cost.md repeats them, and cost.json carries them beside the figures.
 * Change one here and every preview moves with it.
 */

const GiB = 1024 ** 3;

export const TRAFFIC = {
  /**
   * Share of full-batch decode throughput the endpoint serves on average over
   * the month. Half: an endpoint sized for its peak idles part of the day.
   * Only usage-priced lines (NLB capacity units, the counter store) read it;
   * the instance hours are paid whatever the load.
   */
  utilisation: 0.5,
  /**
   * Bytes on the wire per generated token: an OpenAI-style streamed chunk is
   * a JSON event of about 200 bytes per token; the request body and a
   * non-streamed answer are less. The NLB's processed-bytes dimension.
   */
  nlbBytesPerToken: 200,
  /**
   * Server-image pulls per GPU node per month, all through the NAT gateway
   * (the private subnets have no ECR or S3 endpoint): one rollout of a new
   * image and one node replacement (AMI update, consolidation, interruption).
   */
  pullsPerNodePerMonth: 2,
} as const;

/**
 * The gateway image's compressed size: a Node.js slim base and the gateway's
 * production dependencies. An allowance, like model/sizing.ts's
 * TRITON_WITH_FT_IMAGE_BYTES; at ECR's price it changes the sum by cents.
 */
export const GATEWAY_IMAGE_BYTES = 0.3 * GiB;

/**
 * A Network Load Balancer capacity unit for TCP (AWS's NLB pricing): 800 new
 * flows per second, 100,000 active flows, or 1 GB processed per hour, billed
 * on whichever is highest. For LLM traffic the bytes dominate.
 */
export const NLCU_TCP = { newFlowsPerSecond: 800, activeFlows: 100_000, bytesPerHour: GiB } as const;

/** The counter store: ElastiCache Serverless for Valkey meters at least 100 MB, and each request's counters cost a few ECPUs. */
export const STORE = {
  minimumGiB: 0.1,
  /** Rate-limit and budget counters per request (an INCRBY, an EXPIRE, a read), 1 ECPU per KB each. */
  ecpuPerRequest: 4,
} as const;
