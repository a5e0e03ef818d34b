import type { Redis } from 'ioredis';
import { failFastRedis } from '../lib/redis.js';

/**
 * Counters of the usage limits (requests per minute, tokens per minute, calls in flight), in this
 * process's memory or in Redis shared by every node.
 *
 * Minutes are fixed windows aligned on the clock (UTC minute), so every node agrees on which
 * window a call falls in without talking to the others. Calls in flight are a sorted set per scope
 * (member = call id, score = when the slot expires): a node that dies mid-call leaves slots that
 * lapse after `ttlMs` instead of holding the limit forever, which a bare INCR/DECR counter would.
 */
export interface LimitStore {
  /** Counts one request in the minute of `now` unless `limit` requests are already counted there. */
  hit(scope: string, limit: number, now: number): Promise<boolean>;
  /** Tokens counted in the minute of `now`. */
  tokens(scope: string, now: number): Promise<number>;
  addTokens(scope: string, tokens: number, now: number): Promise<void>;
  /** Takes a slot for call `id` unless `limit` live slots are taken. */
  acquire(scope: string, id: string, limit: number, ttlMs: number, now: number): Promise<boolean>;
  release(scope: string, id: string): Promise<void>;
  close(): Promise<void>;
}

export const MINUTE_MS = 60_000;
export const minuteOf = (now: number) => Math.floor(now / MINUTE_MS);
/** Time until the minute of `now` ends (when a per-minute refusal stops applying). */
export const msToNextMinute = (now: number) => MINUTE_MS - (now % MINUTE_MS);

export class MemoryLimitStore implements LimitStore {
  /** `kind:scope:minute` → count; only the current minute's entries are kept. */
  private readonly counts = new Map<string, number>();
  private minute = -1;
  private readonly slots = new Map<string, Map<string, number>>();

  private counter(key: string, now: number): string {
    const m = minuteOf(now);
    if (m !== this.minute) {
      this.counts.clear();
      this.minute = m;
    }
    return `${key}:${m}`;
  }

  async hit(scope: string, limit: number, now: number): Promise<boolean> {
    const k = this.counter(`r:${scope}`, now);
    const n = this.counts.get(k) ?? 0;
    if (n >= limit) return false;
    this.counts.set(k, n + 1);
    return true;
  }

  async tokens(scope: string, now: number): Promise<number> {
    return this.counts.get(this.counter(`t:${scope}`, now)) ?? 0;
  }

  async addTokens(scope: string, tokens: number, now: number): Promise<void> {
    const k = this.counter(`t:${scope}`, now);
    this.counts.set(k, (this.counts.get(k) ?? 0) + tokens);
  }

  async acquire(scope: string, id: string, limit: number, ttlMs: number, now: number): Promise<boolean> {
    let held = this.slots.get(scope);
    if (!held) {
      held = new Map();
      this.slots.set(scope, held);
    }
    for (const [other, expiresAt] of held) if (expiresAt <= now) held.delete(other);
    if (held.size >= limit) return false;
    held.set(id, now + ttlMs);
    return true;
  }

  async release(scope: string, id: string): Promise<void> {
    const held = this.slots.get(scope);
    held?.delete(id);
    if (held?.size === 0) this.slots.delete(scope);
  }

  async close(): Promise<void> {}
}

/** KEYS[1]: the minute's counter. ARGV: limit, expiry ms. 1 when counted, 0 when full. */
const HIT = `
local n = tonumber(redis.call('GET', KEYS[1]) or '0')
if n >= tonumber(ARGV[1]) then return 0 end
redis.call('INCR', KEYS[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1`;

/** KEYS[1]: the scope's slots. ARGV: limit, id, now, expiresAt, key expiry ms. 1 when taken. */
const ACQUIRE = `
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[3])
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[1], ARGV[4], ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return 1`;

/** A counter outlives its minute a little, for clocks a few seconds apart between nodes. */
const WINDOW_EXPIRY_MS = 2 * MINUTE_MS;

interface Logger {
  warn(msg: string): void;
  info(msg: string): void;
}

/**
 * The counters in Redis. Each check-and-count is one Lua script, atomic on the server. Should Redis
 * fail, the node counts in its own memory until it is back (logged once): limits keep applying,
 * per node, rather than inference stopping with the limit store.
 */
export class RedisLimitStore implements LimitStore {
  private readonly redis: Redis;
  private readonly fallback = new MemoryLimitStore();
  private down = false;
  private readonly prefix: string;
  private readonly log: Logger;
  private readonly connected: Promise<void>;

  constructor(opts: { redisUrl: string; prefix: string; logger: Logger; timeoutMs?: number }) {
    this.prefix = `${opts.prefix}:limits`;
    this.log = opts.logger;
    this.redis = failFastRedis(opts.redisUrl, opts.timeoutMs ?? 200);
    // Calls at start-up wait for the first connection (2 s at most, or its first failure)
    // rather than count apart.
    this.connected = new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(done, 2_000);
      timer.unref();
      this.redis.once('ready', done);
      this.redis.once('error', done);
    });
    this.redis.on('error', (err: Error) => this.failed(err));
    this.redis.on('ready', () => {
      if (!this.down) return;
      this.down = false;
      this.log.info('Usage limits: Redis is back; limits are shared between nodes again');
    });
  }

  private key(kind: string, scope: string, minute?: number): string {
    return minute === undefined
      ? `${this.prefix}:${kind}:${scope}`
      : `${this.prefix}:${kind}:${scope}:${minute}`;
  }

  private async shared<T>(run: () => Promise<T>, local: () => Promise<T>): Promise<T> {
    await this.connected;
    if (this.redis.status !== 'ready') return local();
    try {
      return await run();
    } catch (err) {
      this.failed(err);
      return local();
    }
  }

  hit(scope: string, limit: number, now: number): Promise<boolean> {
    return this.shared(
      async () =>
        (await this.redis.eval(HIT, 1, this.key('r', scope, minuteOf(now)), limit, WINDOW_EXPIRY_MS)) === 1,
      () => this.fallback.hit(scope, limit, now),
    );
  }

  tokens(scope: string, now: number): Promise<number> {
    return this.shared(
      async () => Number((await this.redis.get(this.key('t', scope, minuteOf(now)))) ?? 0),
      () => this.fallback.tokens(scope, now),
    );
  }

  addTokens(scope: string, tokens: number, now: number): Promise<void> {
    return this.shared(
      async () => {
        const key = this.key('t', scope, minuteOf(now));
        await this.redis.multi().incrby(key, tokens).pexpire(key, WINDOW_EXPIRY_MS).exec();
      },
      () => this.fallback.addTokens(scope, tokens, now),
    );
  }

  acquire(scope: string, id: string, limit: number, ttlMs: number, now: number): Promise<boolean> {
    return this.shared(
      async () =>
        (await this.redis.eval(ACQUIRE, 1, this.key('c', scope), limit, id, now, now + ttlMs, ttlMs)) === 1,
      () => this.fallback.acquire(scope, id, limit, ttlMs, now),
    );
  }

  async release(scope: string, id: string): Promise<void> {
    // Released on both: a slot taken in memory during an outage is freed there.
    await this.fallback.release(scope, id);
    await this.shared(
      async () => void (await this.redis.zrem(this.key('c', scope), id)),
      async () => {},
    );
  }

  async close(): Promise<void> {
    try {
      await this.redis.quit();
    } catch {
      this.redis.disconnect();
    }
  }

  private failed(err: unknown): void {
    if (this.down) return;
    this.down = true;
    this.log.warn(
      `Usage limits: Redis unavailable (${(err as Error)?.message ?? err}); each node counts in memory until it is back`,
    );
  }
}
