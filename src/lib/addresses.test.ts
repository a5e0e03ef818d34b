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
  it('judges IPv6 addresses that embed an IPv4 address by that IPv4 address', () => {
    const private4 = [
      // IPv4-compatible (::/96)
      '::127.0.0.1',
      '::7f00:1',
      '::a00:1',
      '0:0:0:0:0:0:a9fe:a9fe',
      '::c0a8:101',
      // IPv4-translated (::ffff:0:0:0/96)
      '::ffff:0:7f00:1',
      // NAT64 (64:ff9b::/96), both notations
      '64:ff9b::127.0.0.1',
      '64:ff9b::a9fe:a9fe',
      '64:ff9b::0a00:0001',
      // 6to4 (2002::/16): the IPv4 address in bits 16–47
      '2002:7f00:1::',
      '2002:a00:1::1',
      '2002:c0a8:101:1::5',
      '2002:a9fe:a9fe::',
      // local-use NAT64 prefix, and a zone index
      '64:ff9b:1::808:808',
      'fe80::1%eth0',
    ];
    for (const a of private4) expect(isPrivateAddress(a), a).toBe(true);
    const public4 = [
      '::808:808',
      '64:ff9b::8.8.8.8',
      '64:ff9b::808:808',
      '2002:808:808::1',
      '::ffff:0:808:808',
    ];
    for (const a of public4) expect(isPrivateAddress(a), a).toBe(false);
  });
  it('allows public addresses', () => {
    for (const a of ['93.184.216.34', '8.8.8.8', '2606:4700:4700::1111', '::ffff:8.8.8.8'])
      expect(isPrivateAddress(a), a).toBe(false);
  });
});
