/**
 * A Lua script run in the shared store: EVALSHA first, and EVAL once when the
 * store does not have it yet (its first use, or after a restart emptied the
 * script cache). Each script runs atomically, so its reads and writes see no
 * other client's in between.
 */
import { createHash } from "node:crypto";
import type { StoreClient } from "./connection";

export interface LuaScript {
  source: string;
  sha: string;
}

export function luaScript(source: string): LuaScript {
  return { source, sha: createHash("sha1").update(source).digest("hex") };
}

export async function runScript(
  client: StoreClient,
  s: LuaScript,
  keys: readonly string[],
  args: ReadonlyArray<string | number>,
): Promise<unknown> {
  try {
    return await client.evalsha(s.sha, keys.length, ...keys, ...args);
  } catch (error) {
    if (!(error instanceof Error) || !error.message.startsWith("NOSCRIPT")) throw error;
    return client.eval(s.source, keys.length, ...keys, ...args);
  }
}
