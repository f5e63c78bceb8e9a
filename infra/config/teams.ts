/**
 * serving.consumers in either form: a list of entries (`search`, `search:v2`)
 * or a map entry -> the team's limits (and, for a key the team holds, its
 * SHA-256). Keys are per entry (a rotation is a second entry of the same team,
 * or a second hash of a held key); limits are per team. Pure, no Pulumi.
 */
import type { ConsumerSettings, StackConfig, TeamLimits } from "./schema";

export type Consumers = StackConfig["serving"]["consumers"];

/** `search:v2` -> `search`: the team an entry's key belongs to (metrics and limits are per team). */
export function teamOf(entry: string): string {
  return entry.split(":")[0] ?? entry;
}

/** The entries, each of which gets an API key, in the order written. */
export function consumerEntries(consumers: Consumers): string[] {
  return Array.isArray(consumers) ? [...consumers] : Object.keys(consumers);
}

/**
 * Each team's own limits (map form only; a list sets none), from the one entry
 * of the team that sets any. Teams without own limits are left out, so the
 * gateway applies its defaults to them.
 */
/** An entry's limits alone: its settings without the held key's hashes. */
function limitsOf(settings: ConsumerSettings): TeamLimits {
  return Object.fromEntries(Object.entries(settings).filter(([k]) => k !== "keySha256")) as TeamLimits;
}

export function teamLimits(consumers: Consumers): Record<string, TeamLimits> {
  if (Array.isArray(consumers)) return {};
  const out: Record<string, TeamLimits> = {};
  for (const [entry, settings] of Object.entries(consumers)) {
    const set = Object.fromEntries(Object.entries(limitsOf(settings)).filter(([, v]) => v !== undefined)) as TeamLimits;
    if (Object.keys(set).length > 0) out[teamOf(entry)] = { ...out[teamOf(entry)], ...set };
  }
  return out;
}

/** Teams with more than one entry that sets limits: which entry's limits hold would be ambiguous. */
export function teamsWithLimitsTwice(consumers: Consumers): string[] {
  if (Array.isArray(consumers)) return [];
  const seen = new Map<string, number>();
  for (const [entry, settings] of Object.entries(consumers)) {
    if (Object.values(limitsOf(settings)).some((v) => v !== undefined))
      seen.set(teamOf(entry), (seen.get(teamOf(entry)) ?? 0) + 1);
  }
  return [...seen].filter(([, n]) => n > 1).map(([team]) => team);
}

/** Entries whose team holds the key (keySha256 given), each with its hashes: nothing is generated for them. */
export function heldKeys(consumers: Consumers): Record<string, string[]> {
  if (Array.isArray(consumers)) return {};
  const out: Record<string, string[]> = {};
  for (const [entry, settings] of Object.entries(consumers))
    if (settings.keySha256) out[entry] = [...settings.keySha256];
  return out;
}

/** Entries that get a generated key (the default): every entry without keySha256, in the order written. */
export function generatedKeyEntries(consumers: Consumers): string[] {
  const held = heldKeys(consumers);
  return consumerEntries(consumers).filter((e) => !(e in held));
}

/** Hashes given more than once (by one entry or by two): one key would authenticate as two consumers. */
export function repeatedKeyHashes(consumers: Consumers): string[] {
  const all = Object.values(heldKeys(consumers)).flat();
  return [...new Set(all.filter((h, i) => all.indexOf(h) !== i))];
}
