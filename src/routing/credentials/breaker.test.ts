import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Breaker } from './breaker.js';

const settings = { failures: 3, cooldownMs: 1_000, maxCooldownMs: 8_000 };

describe('credential circuit breaker', () => {
  beforeEach(() => vi.useFakeTimers({ now: 1_000_000 }));
  afterEach(() => vi.useRealTimers());

  it('stays closed through a success and fewer consecutive 5xx than the threshold', () => {
    const b = new Breaker(settings);
    b.failure(500);
    b.failure(0);
    expect(b.state).toBe('closed');
    b.success();
    b.failure(502);
    b.failure(503);
    expect(b).toMatchObject({ state: 'closed', failures: 2, lastStatus: 503 });
    expect(b.admit()).toBe(true);
  });

  it('opens on the threshold-th consecutive 5xx, admits one probe after the cooldown, and closes on its success', () => {
    const b = new Breaker(settings);
    for (let i = 0; i < 3; i++) b.failure(500);
    expect(b.state).toBe('open');
    expect(b.openUntil).toBe(Date.now() + 1_000);
    expect(b.admit()).toBe(false);
    vi.advanceTimersByTime(999);
    expect(b.admit()).toBe(false);
    vi.advanceTimersByTime(1);
    expect(b.admit()).toBe(true); // the probe
    expect(b.state).toBe('half-open');
    expect(b.admit()).toBe(false); // one probe at a time
    b.success();
    expect(b).toMatchObject({ state: 'closed', failures: 0 });
    expect(b.admit()).toBe(true);
  });

  it('opens at once on a 429 for its Retry-After, capped at the longest cooldown', () => {
    const b = new Breaker(settings);
    b.failure(429, 2_500);
    expect(b.state).toBe('open');
    expect(b.openUntil - Date.now()).toBe(2_500);
    const c = new Breaker(settings);
    c.failure(429, 3_600_000);
    expect(c.openUntil - Date.now()).toBe(8_000);
  });

  it('re-opens with a doubled cooldown when the probe fails, and resets the backoff once one succeeds', () => {
    const b = new Breaker(settings);
    b.failure(429); // 1 s
    vi.advanceTimersByTime(1_000);
    expect(b.admit()).toBe(true);
    b.failure(503); // probe failed: 2 s
    expect(b.state).toBe('open');
    expect(b.openUntil - Date.now()).toBe(2_000);
    vi.advanceTimersByTime(2_000);
    expect(b.admit()).toBe(true);
    b.failure(0); // 4 s
    expect(b.openUntil - Date.now()).toBe(4_000);
    vi.advanceTimersByTime(4_000);
    expect(b.admit()).toBe(true);
    b.success();
    b.failure(429); // back to 1 s
    expect(b.openUntil - Date.now()).toBe(1_000);
  });

  it('a late failure of a call let through before it opened pushes the reopening, without more backoff', () => {
    const b = new Breaker(settings);
    b.failure(429, 1_000);
    vi.advanceTimersByTime(500);
    b.failure(429, 1_000);
    expect(b.openUntil - Date.now()).toBe(1_000);
    vi.advanceTimersByTime(1_000);
    expect(b.admit()).toBe(true);
    b.failure(500);
    expect(b.openUntil - Date.now()).toBe(2_000); // second opening: 2 × the base
  });

  it('is disabled by 401/403 for good (time does not bring it back), and ignores later outcomes', () => {
    for (const status of [401, 403]) {
      const b = new Breaker(settings);
      b.failure(status);
      expect(b.state).toBe('disabled');
      vi.advanceTimersByTime(24 * 3_600_000);
      expect(b.admit()).toBe(false);
      b.success();
      b.failure(500);
      expect(b).toMatchObject({ state: 'disabled', lastStatus: status });
    }
  });

  it('gives the probe turn back when the probing call ends without a verdict', () => {
    const b = new Breaker(settings);
    b.failure(429);
    vi.advanceTimersByTime(1_000);
    expect(b.admit()).toBe(true);
    expect(b.admit()).toBe(false);
    b.release();
    expect(b.admit()).toBe(true);
  });
});
