/**
 * The stack's configuration as the rest of the program sees it: the names,
 * the parsed config's types, the resolved stack, and the autoscaling settings
 * the plan and the renderers read. Engine-free and plan-free, so every layer
 * may import it.
 *
 * Neither layer above config/ is re-exported here (docs/architecture.md
 * "Layers"): `resolve/` (resolveStack, formatProblems, ConfigError) resolves
 * the config and checks its rules, and `infra/loader.ts` (loadStack) reads it
 * through the Pulumi engine for the program's entry point.
 * The generators (`config/reference`, `config/projectFile`) and the rule
 * helpers (`config/issues`, `config/keys`, `config/cidr`,
 * `config/platformChecks`) are imported by path by the scripts and tests that
 * need them.
 */
export {
  PROJECT,
  SECRET_KEYS,
  configSchema,
  type ConfigProblem,
  type SecretKey,
  type SecretPresence,
  type StackConfig,
} from "./schema";
export type { GemmShape, ResolvedModel, ResolvedStack } from "./stack";
export {
  MONITORING_NAMESPACE,
  STACK_PROMETHEUS_URL,
  installsMonitoring,
  prometheusOperatorPresent,
  type AutoscalingConfig,
  type CapacityType,
} from "./autoscaling";
