/**
 * The gateway's engine fields as the stack renders them (infra/plan/gateway.ts engineFields): a vLLM
 * model's route carries engine, maxLogprobs (its vllm.maxLogprobs) and cancellable; an FT model's
 * carries none of them, so an FT stack's gateway config is what it was; a canary on another engine
 * than its stable build leaves the FT defaults; and the gateway parses what the stack renders.
 */
import { describe, expect, it } from "vitest";
import { GatewayConfigSchema } from "../../../images/gateway/src/config";
import type { ResolvedStack } from "../../../infra/config/stack";
import type { SecretPresence } from "../../../infra/config";
import { gatewayRoute, withCanary } from "../../../infra/plan/gateway";
import { renderGatewayConfig } from "../../../infra/plan/gatewayConfig";
import { resolveStack } from "../../../infra/resolve";
import { gpt2Config, onVllm, withOverrides } from "../../lib/fixtures";

const noSecrets: SecretPresence = {};

/** The GPT-2 stack on FT, or on vLLM with `maxLogprobs` (one-model form: model.engine, serving.vllm). */
function stack(maxLogprobs?: number): ResolvedStack {
  const config =
    maxLogprobs === undefined
      ? gpt2Config()
      : onVllm(withOverrides(gpt2Config(), { model: { engine: "vllm" }, serving: { vllm: { maxLogprobs } } }));
  const { stack: s, problems } = resolveStack(config, noSecrets);
  expect(problems).toEqual([]);
  if (!s) throw new Error("no stack");
  return s;
}

const ROLLBACK = { maxErrorRate: 0.05, maxTtftRatio: 1.5, windowSeconds: 300, minRequests: 50 };

describe("the gateway's engine fields per model", () => {
  it("an FT model's route has none (the gateway's defaults are FT's)", () => {
    const route = gatewayRoute(stack());
    expect(["engine", "maxLogprobs", "cancellable"].filter((k) => k in route)).toEqual([]);
  });

  it("a vLLM model's route: engine vllm, its maxLogprobs, cancellable; the gateway parses it", () => {
    const route = gatewayRoute(stack(7));
    expect(route).toMatchObject({ engine: "vllm", maxLogprobs: 7, cancellable: true });
    const parsed = GatewayConfigSchema.parse(renderGatewayConfig([route, { ...gatewayRoute(stack()), id: "ft" }]));
    expect(parsed.models.map((m) => [m.id, m.engine, m.maxLogprobs, m.cancellable])).toEqual([
      [route.id, "vllm", 7, true],
      ["ft", "ft", 0, false],
    ]);
  });

  it("a canary keeps the engine fields only when both builds run one engine (the smaller maxLogprobs)", () => {
    const vllm = gatewayRoute(stack(7));
    const same = withCanary(vllm, {
      stack: stack(3),
      buildId: "c-1",
      weight: 10,
      rollback: ROLLBACK,
    });
    expect(same).toMatchObject({ engine: "vllm", maxLogprobs: 3, cancellable: true });
    const mixed = withCanary(vllm, { stack: stack(), buildId: "c-2", weight: 10, rollback: ROLLBACK });
    expect(["engine", "maxLogprobs", "cancellable"].filter((k) => k in mixed)).toEqual([]);
  });
});
