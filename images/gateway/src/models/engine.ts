/** The engines behind a model's ensemble, by the name the gateway's messages give them. */
import type { Engine } from "../config";

const NAMES: Record<Engine, string> = { ft: "FasterTransformer", vllm: "vLLM" };

/** The engine's name as a refusal names it ("FasterTransformer computes ..."). */
export function engineName(engine: Engine): string {
  return NAMES[engine];
}
