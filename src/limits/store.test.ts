import { describe, expect, it } from 'vitest';
import { MemoryLimitStore, RedisLimitStore } from './store.js';

const T0 = Date.UTC(2026, 0, 1, 12, 0, 0);

describe('MemoryLimitStore', () => {
  it('counts requests per clock minute and starts again in the next one', async () => {
    const s = new MemoryLimitStore();
    expect(await s.hit('k', 2, T0)).toBe(true);
    expect(await s.hit('k', 2, T0 + 10_000)).toBe(true);
    expect(await s.hit('k', 2, T0 + 59_999)).toBe(false);
    expect(await s.hit('other', 2, T0 + 59_999)).toBe(true);
    expect(await s.hit('k', 2, T0 + 60_000)).toBe(true);
  });

  it('adds tokens per minute', async () => {
    const s = new MemoryLimitStore();
    await s.addTokens('k', 70, T0);
    await s.addTokens('k', 50, T0 + 1);
    expect(await s.tokens('k', T0 + 2)).toBe(120);
    expect(await s.tokens('k', T0 + 60_000)).toBe(0);
  });

  it('lets a slot lapse after its TTL (a node that died mid-call)', async () => {
    const s = new MemoryLimitStore();
    expect(await s.acquire('k', 'a', 1, 1_000, T0)).toBe(true);
    expect(await s.acquire('k', 'b', 1, 1_000, T0 + 999)).toBe(false);
    expect(await s.acquire('k', 'b', 1, 1_000, T0 + 1_000)).toBe(true);
    await s.release('k', 'b');
    expect(await s.acquire('k', 'c', 1, 1_000, T0 + 1_001)).toBe(true);
  });
});

describe('RedisLimitStore without a reachable Redis', () => {
  it('keeps limiting in memory and says so once', async () => {
    const lines: string[] = [];
    const logger = { warn: (m: string) => lines.push(m), info: (m: string) => lines.push(m) };
    // Port 1 on loopback refuses connections at once.
    const s = new RedisLimitStore({ redisUrl: 'redis://127.0.0.1:1', prefix: 'gatehouse-test', logger });
    try {
      expect(await s.hit('k', 1, T0)).toBe(true);
      expect(await s.hit('k', 1, T0)).toBe(false);
      expect(await s.acquire('k', 'a', 1, 60_000, T0)).toBe(true);
      expect(await s.acquire('k', 'b', 1, 60_000, T0)).toBe(false);
      await s.release('k', 'a');
      expect(await s.acquire('k', 'b', 1, 60_000, T0)).toBe(true);
      expect(lines.filter((l) => l.includes('Redis unavailable'))).toHaveLength(1);
    } finally {
      await s.close();
    }
  });
});
