/**
 * When a stopped builder must be started again (build.stopBuilderWhenDone):
 * exactly when some step's command will run again. A remote command re-runs
 * when any of its inputs changes, so the trigger covers all of them:
 * - each step's input hash, and the builder's identity (a replaced instance
 *   re-runs every step);
 * - each step's command line (plan/stepGraph.ts stepCommand): a new one runs
 *   the step again (it then finds its marker and skips);
 * - the deploy-time values the step configs hold (region, registry, the
 *   repository URLs). The triton_with_ft image is left out: it can only change
 *   when the triton-with-ft step itself re-runs, which the above covers (and
 *   it is unknown until the builder has run);
 * - the connection (address, user, port, pinned host key, private key) and
 *   the secret environment, the secrets only as hashes.
 * Pure.
 */
import { sha256 } from "./hash";

export interface RestartMaterial {
  stepHashes: Record<string, string>;
  /** Each step's command line, keyed like stepHashes. */
  commands: Record<string, string>;
  instanceId: string;
  deployValues: string[];
  connection: { host?: string; user?: string; port?: number; hostKey?: string; privateKey?: string };
  secretEnv: string[];
}

export function builderRestartTrigger(m: RestartMaterial): string {
  const c = m.connection;
  return sha256(
    JSON.stringify({
      steps: m.stepHashes,
      commands: m.commands,
      instanceId: m.instanceId,
      deploy: m.deployValues,
      connection: [c.host, c.user, c.port, c.hostKey, sha256(c.privateKey ?? "")],
      secretEnv: m.secretEnv.map((v) => sha256(v)),
    }),
  );
}
