/**
 * Which engine the gateway suite's models run on: `ft` (the default: the FT stand-in, test/triton/ft_standin)
 * or `vllm` (GATEWAY_UPSTREAM=vllm: the project's vLLM model on tiny random checkpoints,
 * test/gateway/vllmUpstream.ts; test/vllm/run.sh runs the suite so after its own tests).
 */
export type Upstream = "ft" | "vllm";

/** The upstream GATEWAY_UPSTREAM names; anything else is a mistake worth stopping the run for. */
export function gatewayUpstream(env: NodeJS.ProcessEnv = process.env): Upstream {
  const value = env.GATEWAY_UPSTREAM ?? "ft";
  if (value === "ft" || value === "vllm") return value;
  throw new Error(`GATEWAY_UPSTREAM=${value}: expected ft (the default) or vllm`);
}
