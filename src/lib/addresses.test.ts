import { describe, expect, it } from 'vitest';
import { isPrivateAddress } from './addresses.js';

describe('isPrivateAddress', () => {
  it('refuses loopback, private, link-local and unspecified addresses, in every notation', () => {
    for (const a of [
      '127.0.0.1',
      '10.1.2.3',
      '172.16.0.1',
      '192.168.1.1',
      '169.254.169.254',
      '0.0.0.0',
      '100.64.0.1',
      '::1',
      '::',
      'fe80::1',
      'fd00::1',
      '::ffff:127.0.0.1',
      '::ffff:7f00:1',
      '::ffff:a9fe:a9fe',
      'not-an-ip',
    ])
      expect(isPrivateAddress(a), a).toBe(true);
  });
  it('allows public addresses', () => {
    for (const a of ['93.184.216.34', '8.8.8.8', '2606:4700:4700::1111', '::ffff:8.8.8.8'])
      expect(isPrivateAddress(a), a).toBe(false);
  });
});
