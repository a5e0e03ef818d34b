import { describe, expect, it } from 'vitest';
import { settledWithin, windowStart } from './time.js';

describe('windowStart', () => {
  // 2026-11-25 is a Wednesday.
  const wed = new Date('2026-11-25T17:45:12.345Z');

  it('starts days at UTC midnight', () => {
    expect(windowStart('daily', wed).toISOString()).toBe('2026-11-25T00:00:00.000Z');
  });

  it('starts weeks on Monday 00:00 UTC, including on Sundays and Mondays', () => {
    expect(windowStart('weekly', wed).toISOString()).toBe('2026-11-23T00:00:00.000Z');
    expect(windowStart('weekly', new Date('2026-11-29T23:59:59Z')).toISOString()).toBe(
      '2026-11-23T00:00:00.000Z',
    );
    expect(windowStart('weekly', new Date('2026-11-30T00:00:00Z')).toISOString()).toBe(
      '2026-11-30T00:00:00.000Z',
    );
  });

  it('starts months on the 1st, across year boundaries', () => {
    expect(windowStart('monthly', wed).toISOString()).toBe('2026-11-01T00:00:00.000Z');
    expect(windowStart('weekly', new Date('2027-01-02T10:00:00Z')).toISOString()).toBe(
      '2026-12-28T00:00:00.000Z',
    );
  });
});

describe('settledWithin', () => {
  it('waits for the work, at most the given time, and never rejects', async () => {
    let done = false;
    const work = new Promise<void>((resolve) =>
      setTimeout(() => {
        done = true;
        resolve();
      }, 20),
    );
    await settledWithin(work, 5_000);
    expect(done).toBe(true);
    const started = Date.now();
    await settledWithin(new Promise(() => {}), 30);
    expect(Date.now() - started).toBeLessThan(2_000);
    await expect(settledWithin(Promise.reject(new Error('x')), 1_000)).resolves.toBeUndefined();
  });
});
