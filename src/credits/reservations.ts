import type { Redis } from 'ioredis';
import { randomBase64url } from '../lib/random-pool.js';
import { failFastRedis } from '../lib/redis.js';

/**
 * Spend reservations: the worst-case cost of every call in flight, per spend pool (an API key, a
 * user within an organization, an organization's credits). Admission checks a call's worst case
 * against each limit's headroom (limit − recorded spend) minus what the calls already in flight
 * hold, and adds it in the same atomic step; the call settles when it ends (its actual cost is
 * recorded, the reservation dropped). Without this, N parallel calls all see the same spend and
 * all pass a limit that one of them would exhaust.
 *
 * A check fits when `reserved + amount <= headroom`, or when nothing is reserved in the pool and
 * there is headroom at all (so one call is never refused for its worst case alone, as before):
 * the overspend of a limit is therefore at most one call's reservation.
 *
 * Every reservation expires (`ttlMs`), so a process that dies mid-call leaks nothing for long.
 *
 * - `MemoryReservations`: one process (SQLite, or no Redis). Check and add happen synchronously
 *   in one turn of the event loop, which is atomic in Node.
 * - `RedisReservations`: several nodes (REDIS_URL). One Lua script checks every pool and adds the
 *   reservation atomically on the Redis server. We chose Redis over a conditional UPDATE in
 *   PostgreSQL because the reservations are short-lived, hot and need a TTL (a table would need
 *   a sweeper and a write per call on the database every node already waits on); the recorded
 *   spend stays in the database. A settled reservation stays in Redis for `settledHoldMs` with its
 *   actual cost, to cover the moment until the cluster bus brings the other nodes the call's spend
 *   (and the moment between a node reading its counters and its script running). It is counted by
 *   every node, so for that second a cost may count twice: conservative, never an overspend.
 *   Should Redis fail, the node falls back to its own memory.
 */

/** One limit a reservation must fit: the pool it draws on and what is left of the limit. */
export interface PoolCheck {
  pool: string;
  headroom: number;
}

/** The first check that did not fit, with what the pool held then; null when everything fit. */
export type Misfit = { index: number; reserved: number } | null;

export interface ReservationStore {
  reserve(id: string, checks: PoolCheck[], amount: number, ttlMs: number): Promise<Misfit>;
  /** The call ended: drop the reservation (its cost is in the recorded spend now). */
  settle(id: string, pools: string[], actualUsd: number): Promise<void>;
  close(): Promise<void>;
}

export const newReservationId = (): string => randomBase64url(9);

const fits = (reserved: number, amount: number, headroom: number) =>
  reserved + amount <= headroom + 1e-12 || (reserved <= 0 && headroom > 0);

interface Held {
  amount: number;
  expiresAt: number;
}

export class MemoryReservations implements ReservationStore {
  private readonly pools = new Map<string, Map<string, Held>>();
  constructor(private readonly now: () => number = Date.now) {}

  /** What the calls in flight hold on `pool` (expired reservations dropped). */
  reserved(pool: string): number {
    const held = this.pools.get(pool);
    if (!held) return 0;
    const now = this.now();
    let sum = 0;
    for (const [id, h] of held) {
      if (h.expiresAt <= now) held.delete(id);
      else sum += h.amount;
    }
    if (held.size === 0) this.pools.delete(pool);
    return sum;
  }

  /** Synchronous at heart: the check and the add happen in one turn of the event loop. */
  reserveNow(id: string, checks: PoolCheck[], amount: number, ttlMs: number): Misfit {
    for (const [index, c] of checks.entries()) {
      const reserved = this.reserved(c.pool);
      if (!fits(reserved, amount, c.headroom)) return { index, reserved };
    }
    const expiresAt = this.now() + ttlMs;
    for (const pool of new Set(checks.map((c) => c.pool))) {
      let held = this.pools.get(pool);
      if (!held) {
        held = new Map();
        this.pools.set(pool, held);
      }
      held.set(id, { amount, expiresAt });
    }
    return null;
  }

  async reserve(id: string, checks: PoolCheck[], amount: number, ttlMs: number): Promise<Misfit> {
    return this.reserveNow(id, checks, amount, ttlMs);
  }

  releaseNow(id: string, pools: string[]): void {
    for (const pool of pools) {
      const held = this.pools.get(pool);
      held?.delete(id);
      if (held?.size === 0) this.pools.delete(pool);
    }
  }

  async settle(id: string, pools: string[]): Promise<void> {
    this.releaseNow(id, pools);
  }

  /**
   * Keeps a settled call's actual cost counted for `holdMs` (the reservations of `serve --workers`,
   * held for all workers by the primary: as RedisReservations' settled hold, until the cluster bus
   * brought the other workers the call's spend).
   */
  holdNow(id: string, pools: string[], amountUsd: number, holdMs: number): void {
    if (amountUsd <= 0) {
      this.releaseNow(id, pools);
      return;
    }
    const expiresAt = this.now() + holdMs;
    for (const pool of pools) {
      const held = this.pools.get(pool);
      if (held?.has(id)) held.set(id, { amount: amountUsd, expiresAt });
    }
  }

  async close(): Promise<void> {}
}

/**
 * KEYS: the pools (one hash each, field = reservation id, value = `amount|expiresAt|node|settled`).
 * ARGV: id, amount, ttlMs, now, node, then one headroom per key. Expired fields are dropped; the
 * others count, settled ones included (see the class comment).
 * Returns 0 when it fit (and adds the reservation to every pool), else `index+1` and the sum held.
 */
const RESERVE = `
local id, amount, ttl, now, node = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5]
for i, key in ipairs(KEYS) do
  local headroom = tonumber(ARGV[5 + i])
  local sum = 0
  local all = redis.call('HGETALL', key)
  for j = 1, #all, 2 do
    local a, exp = string.match(all[j + 1], '^([^|]+)|([^|]+)|([^|]*)|([01])$')
    if a == nil or tonumber(exp) <= now then
      redis.call('HDEL', key, all[j])
    else
      sum = sum + tonumber(a)
    end
  end
  if not (sum + amount <= headroom + 1e-12 or (sum <= 0 and headroom > 0)) then
    return {i, tostring(sum)}
  end
end
local value = ARGV[2] .. '|' .. tostring(now + ttl) .. '|' .. node .. '|0'
for _, key in ipairs(KEYS) do
  redis.call('HSET', key, id, value)
  local left = redis.call('PTTL', key)
  if left < ttl then redis.call('PEXPIRE', key, ttl) end
end
return {0, '0'}
`;

/** KEYS: the pools. ARGV: id, actual cost, hold ms, now, node. Keeps the actual cost for a moment. */
const SETTLE = `
local value = ARGV[2] .. '|' .. tostring(tonumber(ARGV[4]) + tonumber(ARGV[3])) .. '|' .. ARGV[5] .. '|1'
for _, key in ipairs(KEYS) do
  if tonumber(ARGV[2]) > 0 then redis.call('HSET', key, ARGV[1], value) else redis.call('HDEL', key, ARGV[1]) end
end
return 0
`;

export interface RedisReservationsOptions {
  redisUrl: string;
  prefix: string;
  /** How long a settled cost is still counted by the other nodes (until the cluster bus told them). */
  settledHoldMs?: number;
  /** Redis command timeout before this node falls back to its own memory. */
  timeoutMs?: number;
  logger?: { warn(msg: string): void; info(msg: string): void };
}

type Scripted = Redis & {
  gatehouseReserve(...args: (string | number)[]): Promise<[number, string]>;
  gatehouseSettle(...args: (string | number)[]): Promise<number>;
};

export class RedisReservations implements ReservationStore {
  private readonly redis: Scripted;
  private readonly node = newReservationId();
  private readonly local = new MemoryReservations();
  /** Reservations that went to the local fallback (settled there too). */
  private readonly localIds = new Set<string>();
  private down = false;
  /** Resolves once the first connection is made (or failed for good): the first calls wait for it. */
  private readonly firstConnection: Promise<void>;

  constructor(private readonly opts: RedisReservationsOptions) {
    // Fails fast while disconnected: this node's memory answers meanwhile.
    const redis = failFastRedis(opts.redisUrl, opts.timeoutMs ?? 500);
    redis.defineCommand('gatehouseReserve', { lua: RESERVE });
    redis.defineCommand('gatehouseSettle', { lua: SETTLE });
    this.firstConnection = new Promise<void>((resolve) => {
      redis.once('ready', () => resolve());
      setTimeout(resolve, 2_000).unref();
    });
    redis.on('error', () => {
      if (redis.status !== 'connecting' && redis.status !== 'wait') this.failed();
    });
    redis.on('ready', () => {
      if (!this.down) return;
      this.down = false;
      opts.logger?.info('Spend reservations: Redis is back; reservations are shared between nodes again');
    });
    this.redis = redis as Scripted;
  }

  private failed(): void {
    if (this.down) return;
    this.down = true;
    this.opts.logger?.warn(
      'Spend reservations: Redis unreachable; each node reserves in its own memory until it is back',
    );
  }

  private key = (pool: string) => `${this.opts.prefix}:resv:${pool}`;

  async reserve(id: string, checks: PoolCheck[], amount: number, ttlMs: number): Promise<Misfit> {
    // Several checks may draw on one pool (a key limit and a key budget): one key per pool.
    const pools = [...new Set(checks.map((c) => c.pool))];
    const headroom = pools.map((p) => Math.min(...checks.filter((c) => c.pool === p).map((c) => c.headroom)));
    await this.firstConnection;
    try {
      const [i, held] = await this.redis.gatehouseReserve(
        pools.length,
        ...pools.map(this.key),
        id,
        amount,
        Math.ceil(ttlMs),
        Date.now(),
        this.node,
        ...headroom,
      );
      if (i === 0) return null;
      const limit = headroom[i - 1];
      const index = checks.findIndex((c) => c.pool === pools[i - 1] && c.headroom === limit);
      return { index, reserved: Number(held) };
    } catch {
      this.failed();
      this.localIds.add(id);
      return this.local.reserveNow(id, checks, amount, ttlMs);
    }
  }

  async settle(id: string, pools: string[], actualUsd: number): Promise<void> {
    if (this.localIds.delete(id)) return this.local.settle(id, pools);
    const unique = [...new Set(pools)];
    try {
      await this.redis.gatehouseSettle(
        unique.length,
        ...unique.map(this.key),
        id,
        Math.max(0, actualUsd),
        this.opts.settledHoldMs ?? 1_000,
        Date.now(),
        this.node,
      );
    } catch {
      this.failed(); // the reservation expires with its TTL
    }
  }

  async close(): Promise<void> {
    this.redis.disconnect();
  }
}
