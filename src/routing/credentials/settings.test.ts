import { describe, expect, it } from 'vitest';
import { credentialSettings } from './settings.js';

describe('credential settings', () => {
  it('default to breakers and sticky routing on', () => {
    expect(credentialSettings({})).toEqual({
      breaker: true,
      failures: 3,
      cooldownMs: 10_000,
      maxCooldownMs: 300_000,
      sticky: true,
      stickyTtlMs: 300_000,
      stickyMax: 100_000,
    });
  });

  it('read the variables, the longest cooldown never below the first', () => {
    const s = credentialSettings({
      GATEHOUSE_CREDENTIAL_BREAKER: 'off',
      GATEHOUSE_STICKY_ROUTING: 'false',
      GATEHOUSE_BREAKER_FAILURES: '5',
      GATEHOUSE_BREAKER_COOLDOWN_MS: '60000',
      GATEHOUSE_BREAKER_MAX_COOLDOWN_MS: '1000',
      GATEHOUSE_STICKY_TTL_SECONDS: '60',
      GATEHOUSE_STICKY_MAX: '10',
    });
    expect(s).toEqual({
      breaker: false,
      failures: 5,
      cooldownMs: 60_000,
      maxCooldownMs: 60_000,
      sticky: false,
      stickyTtlMs: 60_000,
      stickyMax: 10,
    });
  });

  it.each([
    [{ GATEHOUSE_CREDENTIAL_BREAKER: 'maybe' }, /GATEHOUSE_CREDENTIAL_BREAKER must be on or off/],
    [{ GATEHOUSE_BREAKER_FAILURES: '0' }, /GATEHOUSE_BREAKER_FAILURES must be a whole number of at least 1/],
    [{ GATEHOUSE_STICKY_TTL_SECONDS: '1.5' }, /GATEHOUSE_STICKY_TTL_SECONDS/],
  ])('refuse %j naming the variable', (env, message) => {
    expect(() => credentialSettings(env)).toThrow(message);
  });
});
