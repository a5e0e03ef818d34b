import type { Redis } from 'ioredis';
import {
  type RateLimiterAbstract,
  RateLimiterCluster,
  RateLimiterMemory,
  RateLimiterRedis,
  RateLimiterRes,
} from 'rate-limiter-flexible';
import type { Config } from '../config.js';
import { failFastRedis } from '../lib/redis.js';

/**
 * Per-key request rate limiting: at most `points` requests per `durationSeconds` for each API key
 * (fixed windows that start at a key's first request).
 *
 * With a Redis URL the counters live in Redis and every node shares them. Should Redis be
 * unreachable or slow (commands time out after 200 ms), each node falls back to its own in-memory
 * limiter with the same limits (rate-limiter-flexible's `insuranceLimiter`): the gateway keeps
 * serving and keeps limiting, but an N-node deployment then admits up to N times the limit per key
 * until Redis is back. We fail open to the insurance limiter rather than closed because a
 * rate-limit store outage should not take inference down. The switch is logged once per outage.
 *
 * Without Redis, the workers of `serve --workers N` share counters held by the primary process
 * (`shared`: src/cluster/ipc.ts's IpcWindows, whose calls travel batched with the worker's other
 * calls to the primary). Should the primary not answer within a second, the worker counts in its
 * own memory meanwhile (logged).
 *
 * `points` or `durationSeconds` of 0 turns rate limiting off.
 */

export type RateLimitVerdict = { ok: true; remaining: number } | { ok: false; retryAfterMs: number };

/** Windows counted elsewhere for several processes (the primary of `serve --workers N`). */
export interface SharedWindows {
  consume(keyPrefix: string, points: number, durationSeconds: number, key: string): Promise<RateLimitVerdict>;
}

export interface RateLimiterLogger {
  warn(msg: string): void;
  info(msg: string): void;
}

export interface RateLimiterOptions {
  /** Requests per window for each key. */
  points: number;
  durationSeconds: number;
  /** Shared counters in Redis when set; memory of this process otherwise. */
  redisUrl?: string | null;
  /** Prefix of the Redis keys (and the memory limiter's), e.g. to keep test runs apart. */
  keyPrefix?: string;
  /** Redis command timeout before the in-memory insurance takes over, ms. */
  redisTimeoutMs?: number;
  logger?: RateLimiterLogger;
  /** Without Redis: count in the primary process of `serve --workers N` (this is one of its workers). */
  cluster?: boolean;
  /** Without Redis: count in these shared windows instead (the workers' batched link to the primary). */
  shared?: SharedWindows | null;
}

const consoleLogger: RateLimiterLogger = {
  warn: (msg) => console.warn(msg),
  info: (msg) => console.info(msg),
};

export class RateLimiter {
  private readonly limiter: RateLimiterAbstract | null;
  private readonly shared: {
    windows: SharedWindows;
    prefix: string;
    points: number;
    duration: number;
  } | null = null;
  private readonly redis: Redis | null = null;
  private readonly log: RateLimiterLogger;
  /** Whether Redis is known to be down (to log transitions once). */
  private redisDown = false;

  static fromConfig(
    config: Pick<Config, 'rateLimitRequests' | 'rateLimitWindowSeconds' | 'redisUrl'>,
    logger?: RateLimiterLogger,
  ) {
    return new RateLimiter({
      points: config.rateLimitRequests,
      durationSeconds: config.rateLimitWindowSeconds,
      redisUrl: config.redisUrl,
      logger,
    });
  }

  constructor(opts: RateLimiterOptions) {
    this.log = opts.logger ?? consoleLogger;
    const keyPrefix = opts.keyPrefix ?? 'gatehouse:rl';
    if (opts.points <= 0 || opts.durationSeconds <= 0) {
      this.limiter = null;
      return;
    }
    const limits = { points: opts.points, duration: opts.durationSeconds, keyPrefix };
    if (!opts.redisUrl && opts.shared) {
      this.limiter = null;
      this.shared = {
        windows: opts.shared,
        prefix: keyPrefix,
        points: opts.points,
        duration: opts.durationSeconds,
      };
      return;
    }
    if (!opts.redisUrl) {
      this.limiter = opts.cluster
        ? new RateLimiterCluster({ ...limits, timeoutMs: 1_000 })
        : new RateLimiterMemory(limits);
      return;
    }
    // Fails fast while disconnected: the insurance limiter answers meanwhile.
    const redis = failFastRedis(opts.redisUrl, opts.redisTimeoutMs ?? 200);
    redis.on('error', (err: Error) => this.redisFailed(err));
    redis.on('ready', () => {
      if (!this.redisDown) return;
      this.redisDown = false;
      this.log.info('Rate limiter: Redis is back; counters are shared between nodes again');
    });
    this.redis = redis;
    this.limiter = new RateLimiterRedis({
      ...limits,
      storeClient: redis,
      rejectIfRedisNotReady: true,
      insuranceLimiter: new InsuranceLimiter(limits, () => {
        // While the first connection is being made the error event reports failures, if any.
        if (['wait', 'connecting', 'connect'].includes(redis.status)) return;
        this.redisFailed(
          new Error(redis.status === 'ready' ? 'command timed out' : `connection ${redis.status}`),
        );
      }),
    });
  }

  /**
   * Resolves true once Redis is connected (at once without Redis), false after `timeoutMs`. Until
   * then requests are limited by this node's memory; await it at start-up to share counts at once.
   */
  async ready(timeoutMs = 2_000): Promise<boolean> {
    const redis = this.redis;
    if (!redis || redis.status === 'ready') return true;
    return new Promise((resolve) => {
      const done = (ok: boolean) => {
        clearTimeout(timer);
        redis.off('ready', onReady);
        resolve(ok);
      };
      const onReady = () => done(true);
      const timer = setTimeout(() => done(false), timeoutMs);
      redis.on('ready', onReady);
    });
  }

  /** Counts one request of the key; refuses with the time until its window resets. */
  async consume(keyHash: string): Promise<RateLimitVerdict> {
    const s = this.shared;
    if (s) {
      try {
        return await s.windows.consume(s.prefix, s.points, s.duration, keyHash);
      } catch (err) {
        this.log.warn(`Rate limiter failed, request let through: ${(err as Error)?.message ?? err}`);
        return { ok: true, remaining: 0 };
      }
    }
    if (!this.limiter) return { ok: true, remaining: Number.POSITIVE_INFINITY };
    try {
      const res = await this.limiter.consume(keyHash);
      return { ok: true, remaining: res.remainingPoints };
    } catch (rej) {
      if (rej instanceof RateLimiterRes) return { ok: false, retryAfterMs: Math.max(0, rej.msBeforeNext) };
      // Not a refusal: the limiter itself failed (insurance included). Fail open.
      this.log.warn(`Rate limiter failed, request let through: ${(rej as Error)?.message ?? rej}`);
      return { ok: true, remaining: 0 };
    }
  }

  /** Closes the Redis connection, if any. */
  async close(): Promise<void> {
    if (!this.redis) return;
    try {
      await this.redis.quit();
    } catch {
      this.redis.disconnect();
    }
  }

  private redisFailed(err: unknown): void {
    if (this.redisDown) return;
    this.redisDown = true;
    this.log.warn(
      `Rate limiter: Redis unavailable (${(err as Error)?.message ?? err}); each node limits in memory until it is back`,
    );
  }
}

/** The in-memory insurance limiter; being used means a Redis call failed, which it reports. */
class InsuranceLimiter extends RateLimiterMemory {
  constructor(
    opts: { points: number; duration: number; keyPrefix: string },
    private readonly onUse: () => void,
  ) {
    super(opts);
  }

  override consume(key: string | number, points?: number, options?: { [key: string]: unknown }) {
    this.onUse();
    return super.consume(key, points, options);
  }
}
