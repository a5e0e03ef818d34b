import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { RateLimiter, type RateLimiterLogger } from '../src/routing/rate-limit.js';
import { REDIS_URL, redisReachable } from './support/redis.js';

const redisUp = await redisReachable(REDIS_URL);
if (!redisUp) {
  console.warn(
    `\n!!! Redis rate-limit tests SKIPPED: no Redis at ${REDIS_URL} (set REDIS_URL or start redis-server) !!!\n`,
  );
}

/** Keeps each run's Redis keys apart. */
const prefix = `gatehouse-test:${randomBytes(6).toString('hex')}`;

const quietLogger = () => {
  const lines: string[] = [];
  const logger: RateLimiterLogger = {
    warn: (m) => lines.push(`warn: ${m}`),
    info: (m) => lines.push(`info: ${m}`),
  };
  return { lines, logger };
};

const limiters: RateLimiter[] = [];
const make = (opts: ConstructorParameters<typeof RateLimiter>[0]) => {
  const l = new RateLimiter(opts);
  limiters.push(l);
  return l;
};
afterAll(async () => {
  await Promise.all(limiters.map((l) => l.close()));
});

describe('rate limiter config', () => {
  it('reads the limits and the Redis URL from the environment; no operator-wide limit unless set', () => {
    const base = { GATEHOUSE_DATA_DIR: '/tmp/gatehouse-rl-config', GATEHOUSE_MASTER_KEY: 'a'.repeat(64) };
    expect(loadConfig(base)).toMatchObject({
      rateLimitRequests: 0,
      rateLimitWindowSeconds: 60,
      redisUrl: null,
    });
    expect(
      loadConfig({
        ...base,
        GATEHOUSE_RATE_LIMIT_REQUESTS: '5',
        GATEHOUSE_RATE_LIMIT_WINDOW: '10',
        REDIS_URL: 'redis://r:6379',
      }),
    ).toMatchObject({ rateLimitRequests: 5, rateLimitWindowSeconds: 10, redisUrl: 'redis://r:6379' });
  });
});

describe('in-memory rate limiter', () => {
  it('refuses the N+1th request of a key with a retry-after, per key', async () => {
    const limiter = make({ points: 3, durationSeconds: 60, keyPrefix: `${prefix}:mem` });
    expect(await limiter.consume('key-a')).toEqual({ ok: true, remaining: 2 });
    expect(await limiter.consume('key-a')).toEqual({ ok: true, remaining: 1 });
    expect(await limiter.consume('key-a')).toEqual({ ok: true, remaining: 0 });
    const refused = await limiter.consume('key-a');
    expect(refused.ok).toBe(false);
    if (!refused.ok) {
      expect(refused.retryAfterMs).toBeGreaterThan(55_000);
      expect(refused.retryAfterMs).toBeLessThanOrEqual(60_000);
    }
    expect(await limiter.consume('key-b')).toEqual({ ok: true, remaining: 2 });
  });

  it('lets requests through again when the window has passed', async () => {
    const limiter = make({ points: 1, durationSeconds: 1, keyPrefix: `${prefix}:mem2` });
    expect((await limiter.consume('k')).ok).toBe(true);
    expect((await limiter.consume('k')).ok).toBe(false);
    await new Promise((r) => setTimeout(r, 1_100));
    expect((await limiter.consume('k')).ok).toBe(true);
  });

  it('is off with a limit of 0', async () => {
    const limiter = make({ points: 0, durationSeconds: 60 });
    for (let i = 0; i < 5; i++) expect((await limiter.consume('k')).ok).toBe(true);
  });
});

describe.skipIf(!redisUp)('Redis rate limiter', () => {
  it('shares counts between nodes', async () => {
    const opts = { points: 3, durationSeconds: 30, redisUrl: REDIS_URL, keyPrefix: `${prefix}:shared` };
    const nodeA = make({ ...opts, logger: quietLogger().logger });
    const nodeB = make({ ...opts, logger: quietLogger().logger });
    expect(await nodeA.ready()).toBe(true);
    expect(await nodeB.ready()).toBe(true);

    expect(await nodeA.consume('key-1')).toEqual({ ok: true, remaining: 2 });
    expect(await nodeB.consume('key-1')).toEqual({ ok: true, remaining: 1 });
    expect(await nodeA.consume('key-1')).toEqual({ ok: true, remaining: 0 });
    const refused = await nodeB.consume('key-1');
    expect(refused.ok).toBe(false);
    if (!refused.ok) {
      expect(refused.retryAfterMs).toBeGreaterThan(25_000);
      expect(refused.retryAfterMs).toBeLessThanOrEqual(30_000);
    }
    expect((await nodeA.consume('key-1')).ok).toBe(false);
    // Another key has its own count.
    expect(await nodeB.consume('key-2')).toEqual({ ok: true, remaining: 2 });
  });
});

describe('unreachable Redis', () => {
  it('fails open to the in-memory insurance limiter and says so once', async () => {
    const { lines, logger } = quietLogger();
    // Nothing listens on port 1.
    const limiter = make({
      points: 2,
      durationSeconds: 60,
      redisUrl: 'redis://127.0.0.1:1',
      keyPrefix: `${prefix}:down`,
      logger,
    });
    expect(await limiter.ready(300)).toBe(false);
    expect(await limiter.consume('k')).toEqual({ ok: true, remaining: 1 });
    expect(await limiter.consume('k')).toEqual({ ok: true, remaining: 0 });
    expect((await limiter.consume('k')).ok).toBe(false); // still limited, by this node's memory
    const warnings = lines.filter((l) => l.startsWith('warn: Rate limiter: Redis unavailable'));
    expect(warnings).toHaveLength(1);
  });
});
