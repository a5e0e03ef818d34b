import { describe, expect, it } from 'vitest';
import { SharedState } from './shared-state.js';

const now = Date.now();

describe('SharedState (the primary of serve --workers)', () => {
  it('counts every worker against one limit', async () => {
    const s = new SharedState();
    const admitted = [];
    for (let i = 0; i < 6; i++) admitted.push(await s.handle(1 + (i % 2), 'limits.hit', ['k:a', 3, now]));
    expect(admitted).toEqual([true, true, true, false, false, false]);
  });

  it("frees a dead worker's slots and reservations at once, and no other worker's", async () => {
    const s = new SharedState();
    expect(await s.handle(1, 'limits.acquire', ['k:a', 'c1', 2, 60_000, now])).toBe(true);
    expect(await s.handle(2, 'limits.acquire', ['k:a', 'c2', 2, 60_000, now])).toBe(true);
    expect(await s.handle(2, 'limits.acquire', ['k:a', 'c3', 2, 60_000, now])).toBe(false);
    const checks = [{ pool: 'key:a', headroom: 1 }];
    expect(await s.handle(1, 'resv.reserve', ['r1', checks, 0.6, 60_000])).toBeNull();
    expect(await s.handle(2, 'resv.reserve', ['r2', checks, 0.6, 60_000])).toEqual({
      index: 0,
      reserved: 0.6,
    });

    expect(s.forgetWorker(1)).toEqual({ slots: 1, reservations: 1 });
    expect(await s.handle(2, 'limits.acquire', ['k:a', 'c3', 2, 60_000, now])).toBe(true);
    expect(await s.handle(2, 'resv.reserve', ['r2', checks, 0.6, 60_000])).toBeNull();
    // Worker 2's slots stay taken.
    expect(await s.handle(3, 'limits.acquire', ['k:a', 'c4', 2, 60_000, now])).toBe(false);
  });

  it("keeps a settled call's actual cost counted for the hold (until the bus told the others)", async () => {
    const s = new SharedState(60_000);
    const checks = [{ pool: 'key:a', headroom: 1 }];
    expect(await s.handle(1, 'resv.reserve', ['r1', checks, 0.5, 60_000])).toBeNull();
    await s.handle(1, 'resv.settle', ['r1', ['key:a'], 0.3]);
    expect(s.reservations.reserved('key:a')).toBeCloseTo(0.3);
    // A call that cost nothing holds nothing.
    expect(await s.handle(1, 'resv.reserve', ['r2', checks, 0.1, 60_000])).toBeNull();
    await s.handle(1, 'resv.settle', ['r2', ['key:a'], 0]);
    expect(s.reservations.reserved('key:a')).toBeCloseTo(0.3);
  });

  it('refuses malformed calls and unknown operations', async () => {
    const s = new SharedState();
    await expect(s.handle(1, 'limits.hit', [1, 'x', now])).rejects.toThrow(/string expected/);
    await expect(s.handle(1, 'resv.reserve', ['r', 'nope', 1, 1])).rejects.toThrow(/array expected/);
    await expect(s.handle(1, 'eval', [])).rejects.toThrow(/unknown operation/);
  });
});

describe('SharedState: request-rate windows and a call reserving twice', () => {
  it('counts every worker against one window, per prefix and limits', async () => {
    const s = new SharedState();
    const ok = [];
    for (let i = 0; i < 5; i++)
      ok.push(((await s.handle(1 + (i % 2), 'rl.consume', ['rl', 3, 60, 'k'])) as { ok: boolean }).ok);
    expect(ok).toEqual([true, true, true, false, false]);
    const refused = (await s.handle(1, 'rl.consume', ['rl', 3, 60, 'k'])) as {
      ok: false;
      retryAfterMs: number;
    };
    expect(refused.retryAfterMs).toBeGreaterThan(0);
    // Another key, another prefix: their own windows.
    expect(await s.handle(2, 'rl.consume', ['rl', 3, 60, 'k2'])).toMatchObject({ ok: true, remaining: 2 });
    expect(await s.handle(2, 'rl.consume', ['batches', 3, 60, 'k'])).toMatchObject({ ok: true });
    await expect(s.handle(1, 'rl.consume', ['rl', 0, 60, 'k'])).rejects.toThrow(/positive/);
    await expect(s.handle(1, 'rl.consume', ['rl', 3, 60, 42])).rejects.toThrow(/string/);
  });

  it("a dead worker's call that reserved its limits then its credits under one id frees both", async () => {
    const s = new SharedState();
    expect(await s.handle(1, 'resv.reserve', ['r1', [{ pool: 'k:a', headroom: 1 }], 0.6, 60_000])).toBeNull();
    expect(
      await s.handle(1, 'resv.reserve', ['r1', [{ pool: 'o:org', headroom: 1 }], 0.6, 60_000]),
    ).toBeNull();
    expect(s.forgetWorker(1)).toEqual({ slots: 0, reservations: 1 });
    expect(await s.handle(2, 'resv.reserve', ['r2', [{ pool: 'k:a', headroom: 1 }], 0.6, 60_000])).toBeNull();
    expect(
      await s.handle(2, 'resv.reserve', ['r2', [{ pool: 'o:org', headroom: 1 }], 0.6, 60_000]),
    ).toBeNull();
  });
});
