import { describe, expect, it } from 'vitest';
import { MemoryReservations } from './reservations.js';

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
