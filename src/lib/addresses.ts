import { BlockList, isIP } from 'node:net';

/**
 * Outbound requests made for users (interns' HTTP tool, the media service's image URLs) must not
 * reach the gateway's own network unless the operator allows it (SSRF protection).
 */

/** Loopback, private, link-local, shared, reserved and multicast ranges. */
const blocked = (() => {
  const b = new BlockList();
  for (const [net, bits] of [
    ['0.0.0.0', 8],
    ['10.0.0.0', 8],
    ['100.64.0.0', 10],
    ['127.0.0.0', 8],
    ['169.254.0.0', 16],
    ['172.16.0.0', 12],
    ['192.0.0.0', 24],
    ['192.168.0.0', 16],
    ['198.18.0.0', 15],
    ['224.0.0.0', 4],
    ['240.0.0.0', 4],
  ] as const)
    b.addSubnet(net, bits, 'ipv4');
  for (const [net, bits] of [
    ['::', 128],
    ['::1', 128],
    ['fc00::', 7],
    ['fe80::', 10],
    ['fec0::', 10],
    ['ff00::', 8],
    ['64:ff9b::', 96],
    ['100::', 64],
  ] as const)
    b.addSubnet(net, bits, 'ipv6');
  return b;
})();

/** Whether `address` (an IP literal) is loopback, private, link-local, unspecified or otherwise internal. */
export function isPrivateAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return blocked.check(address, 'ipv4');
  if (family !== 6) return true;
  const lower = address.toLowerCase().replace(/^::/, '0::');
  // IPv4-mapped / -compatible forms carry an IPv4 address: judge that one.
  const dotted = /^(?:0{0,4}:){0,5}(?:ffff:)?(\d+\.\d+\.\d+\.\d+)$/.exec(lower);
  if (dotted?.[1]) return blocked.check(dotted[1], 'ipv4');
  const hex = /^(?:0{0,4}:){0,5}ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(lower);
  if (hex?.[1] && hex[2]) {
    const hi = Number.parseInt(hex[1], 16);
    const lo = Number.parseInt(hex[2], 16);
    return blocked.check(`${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`, 'ipv4');
  }
  return blocked.check(address.toLowerCase(), 'ipv6');
}
