import { describe, expect, it } from 'vitest';
import { BOUNDS, BUCKETS, bucketOf, histogramPercentile, RELATIVE_ERROR } from './latency-buckets.js';

/** The rollup's latency histogram: every latency's estimate is within the documented bound. */
describe('latency buckets', () => {
  const one = (ms: number) => {
    const h = new Array(BUCKETS).fill(0);
    h[bucketOf(ms)] = 1;
    return histogramPercentile(h, 0.5) as number;
  };

  it('a latency read back from its bucket is within 9.1 % (plus half a millisecond)', () => {
    expect(RELATIVE_ERROR).toBeCloseTo(0.0905, 4);
    const last = BOUNDS[BOUNDS.length - 1] as number;
    let worst = 0;
    const outside: string[] = [];
    for (let ms = 0; ms < last; ms++) {
      const err = Math.abs(one(ms) - ms);
      if (err > RELATIVE_ERROR * ms + 0.5) outside.push(`${ms} ms read as ${one(ms)}`);
      if (ms >= 100) worst = Math.max(worst, err / ms);
    }
    expect(outside).toEqual([]);
    expect(worst).toBeGreaterThan(0.08); // the bound is close to tight, not loose
    // Exact below 9 ms, one bucket per millisecond.
    for (let ms = 0; ms <= 8; ms++) expect(one(ms)).toBe(ms);
    // Beyond the last bound: its bottom, a lower bound.
    expect(one(last)).toBe(last);
    expect(one(10 * last)).toBe(last);
  });

  it('percentiles are nearest-rank over the buckets; none for no calls', () => {
    const h = new Array(BUCKETS).fill(0);
    expect(histogramPercentile(h, 0.5)).toBeNull();
    for (const ms of [1, 2, 3, 4, 100]) h[bucketOf(ms)]++;
    expect(histogramPercentile(h, 0.5)).toBe(3);
    expect(histogramPercentile(h, 0.8)).toBe(4);
    expect(histogramPercentile(h, 0.95)).toBe(one(100));
    expect(BUCKETS).toBe(77);
  });
});
