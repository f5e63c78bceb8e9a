/**
 * The stack's configuration as the rest of the program sees it: the names,
 * the parsed config's types, the resolved stack, and the autoscaling settings
 * the plan and the renderers read. Engine-free and plan-free, so every layer
 * may import it.
 *
 * Two entry points of this folder are deliberately not re-exported here:
 * - `resolve/` (resolveStack, formatProblems, ConfigError) sits above
 *   the plan: it plans the workload to check that the pods fit. Re-exporting
 *   it would make every plan module import itself through this file.
 * - `loader.ts` (loadStack) reads the config through the Pulumi engine;
 *   only the program's entry point imports it.
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
