import { describe, expect, it } from 'vitest';
import { extended } from './objects.js';

describe('extended', () => {
  it('is what the spread makes: the same members, values and order', () => {
    const a = { prompt_tokens: 12, completion_tokens: 7, details: { cached: 1 } };
    const b = { completion_tokens: 9, cost: 0.5 };
    const out = extended(a, b);
    expect(out).toEqual({ ...a, ...b });
    expect(JSON.stringify(out)).toBe(JSON.stringify({ ...a, ...b }));
    expect(out).not.toBe(a);
    expect(a.completion_tokens).toBe(7);
  });

  it('copies an own __proto__ key (as JSON.parse makes it) instead of setting the prototype', () => {
    const parsed = JSON.parse('{"__proto__":{"polluted":true},"a":1}') as Record<string, unknown>;
    const out = extended(parsed, { b: 2 }) as Record<string, unknown>;
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(out.polluted).toBeUndefined();
    expect(JSON.stringify(out)).toBe('{"__proto__":{"polluted":true},"a":1,"b":2}');
  });
});
