/**
 * The admission rule (windowRule.ts) as scripts in the shared store: each
 * runs atomically, so two pods admitting for one team at once see each
 * other's counts. A team's keys share the hash tag `{team}` (one slot in
 * cluster mode):
 *
 *   <prefix>rpm:{team}:<window>   requests counted in a window (expires after two windows)
 *   <prefix>tpm:{team}:<window>   tokens reserved in a window
 *   <prefix>conc:{team}           sorted set of permits, scored by expiry (ms)
 *
 * Times come from the calling pod's clock, as in the in-memory rule, so both
 * modes name the same window; pods' clocks differ by far less than a lease.
 */
import type { StoreClient } from "../store/connection";
import { luaScript, runScript, type LuaScript } from "../store/luaScript";
import type { StoreKeys } from "../store/sharedStore";
import {
  type AdmissionStore,
  type Carry,
  type Limit,
  type ReleaseRequest,
  type TakeRequest,
  type Verdict,
  LEASE_TIMEOUT_MS,
  WINDOW_MS,
} from "./windowRule";

/** Window keys outlive their window by one more, so a release in the next window still finds its count. */
const WINDOW_TTL_MS = 2 * WINDOW_MS;
/** The permit set outlives its longest lease. */
const PERMITS_TTL_MS = 2 * LEASE_TIMEOUT_MS;

/**
 * decide() in Lua. KEYS: rpm, tpm, conc. ARGV: now, rpm limit, tpm limit
 * (-1: none), tokens, max concurrent, expiry, then the permits.
 * Returns {verdict, requests, tokens, held}: verdict 0 admitted, 1 requests,
 * 2 tokens, 3 concurrency.
 */
export const TAKE_LUA = `
local now = tonumber(ARGV[1])
redis.call('zremrangebyscore', KEYS[3], '-inf', now)
local held = redis.call('zcard', KEYS[3])
local requests = tonumber(redis.call('get', KEYS[1]) or '0')
local tokens = tonumber(redis.call('get', KEYS[2]) or '0')
local want = tonumber(ARGV[4])
local slots = #ARGV - 6
if requests + 1 > tonumber(ARGV[2]) then return {1, requests, tokens, held} end
if tonumber(ARGV[3]) >= 0 and tokens + want > tonumber(ARGV[3]) then return {2, requests, tokens, held} end
if held + slots > tonumber(ARGV[5]) then return {3, requests, tokens, held} end
requests = redis.call('incr', KEYS[1])
redis.call('pexpire', KEYS[1], ${WINDOW_TTL_MS})
if want > 0 then
  tokens = redis.call('incrby', KEYS[2], want)
  redis.call('pexpire', KEYS[2], ${WINDOW_TTL_MS})
end
for i = 7, #ARGV do redis.call('zadd', KEYS[3], ARGV[6], ARGV[i]) end
redis.call('pexpire', KEYS[3], ${PERMITS_TTL_MS})
return {0, requests, tokens, held + slots}
`;

/** KEYS: conc, rpm, tpm. ARGV: refund requests, refund tokens, then the permits. Counts never go below zero. */
export const RELEASE_LUA = `
for i = 3, #ARGV do redis.call('zrem', KEYS[1], ARGV[i]) end
local function give(key, n)
  if n <= 0 then return end
  local c = tonumber(redis.call('get', key))
  if c == nil then return end
  if n > c then n = c end
  redis.call('decrby', key, n)
end
give(KEYS[2], tonumber(ARGV[1]))
give(KEYS[3], tonumber(ARGV[2]))
return 1
`;

/** KEYS: conc. ARGV: expiry, then the permits (added if the store lost them). */
export const RENEW_LUA = `
for i = 2, #ARGV do redis.call('zadd', KEYS[1], ARGV[1], ARGV[i]) end
redis.call('pexpire', KEYS[1], ${PERMITS_TTL_MS})
return 1
`;

/** KEYS: rpm, tpm. ARGV: requests floor, requests added, tokens floor, tokens added. count = max(count, floor) + added. */
export const CARRY_LUA = `
local function bring(key, floor, added)
  local c = tonumber(redis.call('get', key) or '0')
  if floor > c then c = floor end
  redis.call('set', key, c + added, 'PX', ${WINDOW_TTL_MS})
end
bring(KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]))
bring(KEYS[2], tonumber(ARGV[3]), tonumber(ARGV[4]))
return 1
`;

const TAKE = luaScript(TAKE_LUA);
const RELEASE = luaScript(RELEASE_LUA);
const RENEW = luaScript(RENEW_LUA);
const CARRY = luaScript(CARRY_LUA);

const LIMITS: Record<number, Limit> = { 1: "requests", 2: "tokens", 3: "concurrency" };

export class RedisAdmissionStore implements AdmissionStore {
  constructor(
    private readonly client: StoreClient,
    private readonly keys: StoreKeys,
  ) {}

  private run(s: LuaScript, keys: string[], args: Array<string | number>): Promise<unknown> {
    return runScript(this.client, s, keys, args);
  }

  async take(r: TakeRequest): Promise<Verdict> {
    const reply = (await this.run(
      TAKE,
      [this.keys.window("rpm", r.team, r.window), this.keys.window("tpm", r.team, r.window), this.keys.permits(r.team)],
      [r.now, r.requestsPerMinute, r.tokensPerMinute ?? -1, r.tokens, r.maxConcurrent, r.expiresAt, ...r.permits],
    )) as number[];
    const [code, requests, tokens, held] = reply.map(Number);
    const counts = { requests, tokens, held };
    const limit = LIMITS[code];
    return limit ? { admitted: false, limit, ...counts } : { admitted: true, ...counts };
  }

  async release(r: ReleaseRequest): Promise<void> {
    await this.run(
      RELEASE,
      [this.keys.permits(r.team), this.keys.window("rpm", r.team, r.window), this.keys.window("tpm", r.team, r.window)],
      [r.refundRequests, r.refundTokens, ...r.permits],
    );
  }

  async renew(team: string, permits: readonly string[], expiresAt: number): Promise<void> {
    if (permits.length === 0) return;
    await this.run(RENEW, [this.keys.permits(team)], [expiresAt, ...permits]);
  }

  async carry(team: string, window: number, requests: Carry, tokens: Carry): Promise<void> {
    await this.run(
      CARRY,
      [this.keys.window("rpm", team, window), this.keys.window("tpm", team, window)],
      [requests.floor, requests.added, tokens.floor, tokens.added],
    );
  }
}
