/** Who can reach what: the rules on the endpoint's exposure, its consumers and the builder's SSH key pair. */
import { PROJECT, type SecretPresence, type StackConfig, type Add } from "../config/schema";
import { consumerEntries, repeatedKeyHashes, teamOf, teamsWithLimitsTwice } from "../config/teams";

/** Who can reach what: the endpoint's and the builder's source ranges, and the SSH key pair. */
export function checkAccess(config: StackConfig, secrets: SecretPresence, add: Add): void {
  const s = config.serving;
  const entries = consumerEntries(s.consumers);
  if (s.loadBalancerScheme === "internet-facing" && s.allowedCidrs.length === 0) {
    add(
      "serving.allowedCidrs",
      s.allowedCidrs,
      "is empty while serving.loadBalancerScheme is internet-facing, which would open the endpoint to the whole internet",
      "list the client CIDRs allowed to call the endpoint, or use loadBalancerScheme internal",
    );
  }
  if (s.loadBalancerScheme === "internet-facing" && s.tlsCertificateArn === undefined) {
    add(
      "serving.tlsCertificateArn",
      undefined,
      "is required while serving.loadBalancerScheme is internet-facing: API keys and prompts would cross the internet in plain text",
      "issue an ACM certificate for the endpoint's name and set its ARN, or use loadBalancerScheme internal",
    );
  }
  if (s.loadBalancerScheme === "internet-facing" && entries.length === 0) {
    add(
      "serving.consumers",
      s.consumers,
      "is empty while serving.loadBalancerScheme is internet-facing: no team would hold a key, and the endpoint must not be open",
      "list the teams that call the endpoint (each gets an API key output), or use loadBalancerScheme internal",
    );
  }
  const duplicates = entries.filter((c, i) => entries.indexOf(c) !== i);
  if (duplicates.length > 0) {
    add(
      "serving.consumers",
      s.consumers,
      `lists ${[...new Set(duplicates)].join(", ")} more than once`,
      "list each team once (a team rotates its key by replacing the apiKey resource, not by a second entry)",
    );
  }
  for (const team of teamsWithLimitsTwice(s.consumers)) {
    add(
      "serving.consumers",
      s.consumers,
      `sets limits on more than one entry of team ${team}; limits are per team, keys per entry`,
      `set ${team}'s limits on one of its entries and give the other entries {} (a rotation's second key shares the team's limits)`,
    );
  }
  for (const hash of repeatedKeyHashes(s.consumers)) {
    add(
      "serving.consumers",
      `keySha256 ${hash.slice(0, 12)}…`,
      "gives the same key hash more than once: one key would authenticate as every entry that lists it",
      "give each held key's SHA-256 once, under the entry of the team that holds it",
    );
  }
  if (config.build.sshPublicKey !== undefined && !secrets.sshPrivateKey) {
    add(
      "sshPrivateKey",
      undefined,
      "is required with build.sshPublicKey: pulumi up runs the build steps over SSH with it",
      `pulumi config set --secret ${PROJECT}:sshPrivateKey < <private key file>, or unset build.sshPublicKey to generate a key pair`,
    );
  }
}

/**
 * Every model a team is scoped to (serving.consumers.<team>.models) must be one
 * the stack serves: a misspelt id would leave the team's key with fewer models
 * than meant, and the gateway would only log it.
 */
export function checkConsumerModels(config: StackConfig, served: readonly string[], add: Add): void {
  const consumers = config.serving.consumers;
  if (Array.isArray(consumers)) return;
  for (const [entry, limits] of Object.entries(consumers)) {
    const unknown = (limits.models ?? []).filter((id) => !served.includes(id));
    if (unknown.length === 0) continue;
    add(
      `serving.consumers.${entry}.models`,
      limits.models,
      `names ${unknown.join(", ")}, which this stack does not serve (it serves ${served.join(", ")})`,
      `list only the model ids the stack serves for team ${teamOf(entry)}, or leave models unset for every model`,
    );
  }
}
