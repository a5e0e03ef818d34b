import { describe, expect, it } from 'vitest';
import { moveFirst, weightedOrder } from './order.js';

/** A seeded PRNG (mulberry32): the same draws on every run. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const keys = [
  { name: 'a', weight: 3 },
  { name: 'b', weight: 1 },
  { name: 'c', weight: 6 },
];

describe('weighted order', () => {
  it('picks first in proportion to the weights (10,000 seeded draws, within 2 points)', () => {
    const random = seeded(42);
    const firsts: Record<string, number> = { a: 0, b: 0, c: 0 };
    const n = 10_000;
    for (let i = 0; i < n; i++) {
      const first = weightedOrder(keys, random)[0]?.name as string;
      firsts[first] = (firsts[first] ?? 0) + 1;
    }
    // 10,000 draws: the standard deviation of a share is at most 0.5 points; 2 points is > 4 σ.
    expect(Math.abs((firsts.a as number) / n - 0.3)).toBeLessThan(0.02);
    expect(Math.abs((firsts.b as number) / n - 0.1)).toBeLessThan(0.02);
    expect(Math.abs((firsts.c as number) / n - 0.6)).toBeLessThan(0.02);
  });

  it('keeps the proportions among the credentials left when one is skipped (an open breaker)', () => {
    const random = seeded(7);
    let a = 0;
    const n = 10_000;
    for (let i = 0; i < n; i++) {
      const firstHealthy = weightedOrder(keys, random).find((k) => k.name !== 'c');
      if (firstHealthy?.name === 'a') a++;
    }
    expect(Math.abs(a / n - 0.75)).toBeLessThan(0.02); // 3 : 1
  });

  it('lists every credential once; leaves a single one (and the empty list) as they are, without drawing', () => {
    const random = seeded(1);
    const order = weightedOrder(keys, random);
    expect(order.map((k) => k.name).sort()).toEqual(['a', 'b', 'c']);
    const one = [{ name: 'x', weight: 1 }];
    const never = () => {
      throw new Error('no draw for one credential');
    };
    expect(weightedOrder(one, never)).toBe(one);
    expect(weightedOrder<{ weight?: number }>([], never)).toEqual([]);
  });

  it('follows the injected draws: a low draw goes first', () => {
    const draws = [0.9, 0.0001, 0.9];
    let i = 0;
    const order = weightedOrder(keys, () => draws[i++] as number);
    expect(order[0]?.name).toBe('b');
  });

  it('moveFirst moves the matching item first, and leaves the list alone otherwise', () => {
    const list = ['a', 'b', 'c'];
    expect(moveFirst(list, (x) => x === 'c')).toEqual(['c', 'a', 'b']);
    expect(moveFirst(list, (x) => x === 'a')).toBe(list);
    expect(moveFirst(list, (x) => x === 'z')).toBe(list);
  });
});
