import { describe, expect, it } from 'vitest';
import { AdminThrottle, throttleKey } from './admin.throttle.js';

describe('operator authentication throttle', () => {
  it('counts IPv4 addresses alone and IPv6 addresses by their /64', () => {
    expect(throttleKey('203.0.113.7')).toBe('203.0.113.7');
    expect(throttleKey('::ffff:203.0.113.7')).toBe('203.0.113.7');
    expect(throttleKey('2001:db8:aa:1::5')).toBe('2001:db8:aa:1::/64');
    expect(throttleKey('2001:0db8:00aa:0001:ffff:1:2:3')).toBe('2001:db8:aa:1::/64');
    expect(throttleKey('2001:db8::1')).toBe('2001:db8:0:0::/64');
    expect(throttleKey('::1')).toBe('0:0:0:0::/64');
    expect(throttleKey('fe80::1%eth0')).toBe('fe80:0:0:0::/64');
  });

  it('blocks an address after its allowance of failures, another address of the same /64 too', async () => {
    const t = new AdminThrottle(3);
    for (let i = 0; i < 2; i++) expect(await t.failed('2001:db8::1')).toBe(false);
    expect(await t.blockedForMs('2001:db8::1')).toBe(0);
    expect(await t.failed('2001:db8::2')).toBe(true); // the third failure of the /64
    expect(await t.blockedForMs('2001:db8::99')).toBeGreaterThan(0);
    expect(await t.blockedForMs('2001:db9::1')).toBe(0);
    expect(await t.blockedForMs('203.0.113.7')).toBe(0);
  });

  it('is off with an allowance of 0', async () => {
    const t = new AdminThrottle(0);
    for (let i = 0; i < 50; i++) await t.failed('203.0.113.7');
    expect(await t.blockedForMs('203.0.113.7')).toBe(0);
  });
});
