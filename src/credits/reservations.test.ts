import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { REDIS_URL, redisReachable } from '../../test/support/redis.js';
import { MemoryReservations, RedisReservations } from './reservations.js';

describe('MemoryReservations', () => {
  it('admits while the worst cases fit the headroom, then refuses naming the pool', async () => {
    const r = new MemoryReservations();
    const check = [{ pool: 'k:a', headroom: 1 }];
    for (const id of ['1', '2', '3', '4', '5']) expect(await r.reserve(id, check, 0.2, 60_000)).toBeNull();
    expect(await r.reserve('6', check, 0.2, 60_000)).toEqual({ index: 0, reserved: expect.closeTo(1, 9) });
    await r.settle('1', ['k:a']);
    expect(r.reserved('k:a')).toBeCloseTo(0.8, 9);
  });

  it('lets one call through when nothing is held and some headroom is left', async () => {
    const r = new MemoryReservations();
    expect(await r.reserve('big', [{ pool: 'k:a', headroom: 0.1 }], 5, 60_000)).toBeNull();
    expect(await r.reserve('next', [{ pool: 'k:a', headroom: 0.1 }], 0.01, 60_000)).not.toBeNull();
  });

  it('checks every pool and reserves in all of them, or in none', async () => {
    const r = new MemoryReservations();
    await r.reserve('x', [{ pool: 'u:o:1', headroom: 10 }], 0.5, 60_000);
    const misfit = await r.reserve(
      'y',
      [
        { pool: 'k:a', headroom: 10 },
        { pool: 'u:o:1', headroom: 0.6 },
      ],
      0.5,
      60_000,
    );
    expect(misfit).toEqual({ index: 1, reserved: 0.5 });
    expect(r.reserved('k:a')).toBe(0);
  });

  it('forgets reservations once they expire (a process that died mid-call)', async () => {
    let now = 0;
    const r = new MemoryReservations(() => now);
    await r.reserve('x', [{ pool: 'k:a', headroom: 1 }], 0.9, 1_000);
    now = 1_000;
    expect(r.reserved('k:a')).toBe(0);
  });
});

const redisUp = await redisReachable(REDIS_URL);

describe.skipIf(!redisUp)('RedisReservations: two nodes on one Redis', () => {
  const prefix = `gatehouse-test:${randomBytes(6).toString('hex')}`;
  const nodes: RedisReservations[] = [];
  const node = () => {
    const r = new RedisReservations({ redisUrl: REDIS_URL, prefix, settledHoldMs: 300 });
    nodes.push(r);
    return r;
  };
  afterAll(async () => {
    for (const n of nodes) await n.close();
  });

  it('admits exactly what fits across nodes, concurrently', async () => {
    const [a, b] = [node(), node()];
    const check = [{ pool: 'k:x', headroom: 1 }];
    const verdicts = await Promise.all(
      Array.from({ length: 20 }, (_, i) => (i % 2 ? a : b).reserve(`r${i}`, check, 0.2, 60_000)),
    );
    expect(verdicts.filter((v) => v === null)).toHaveLength(5);
    expect(verdicts.find((v) => v !== null)).toEqual({ index: 0, reserved: expect.closeTo(1, 9) });
  });

  it("keeps a settled cost for a moment (the other nodes' counters may not have it yet), then drops it", async () => {
    const [a, b] = [node(), node()];
    const check = [{ pool: 'k:y', headroom: 1 }];
    expect(await a.reserve('one', check, 0.9, 60_000)).toBeNull();
    await a.settle('one', ['k:y'], 0.5);
    expect(await b.reserve('two', check, 0.6, 60_000)).toEqual({ index: 0, reserved: 0.5 });
    await new Promise((r) => setTimeout(r, 350));
    expect(await b.reserve('two', check, 0.6, 60_000)).toBeNull();
    await b.settle('two', ['k:y'], 0); // released: nothing kept
    expect(await a.reserve('three', check, 1, 60_000)).toBeNull();
  });
});
