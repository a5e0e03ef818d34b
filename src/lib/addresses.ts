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
    ['64:ff9b:1::', 48], // local-use NAT64 (RFC 8215): the operator's own translators
    ['100::', 64],
  ] as const)
    b.addSubnet(net, bits, 'ipv6');
  return b;
})();

/** The eight 16-bit groups of a valid IPv6 literal (zone dropped, `::` expanded, a dotted tail split). */
function ipv6Groups(address: string): number[] {
  let a = address.toLowerCase().replace(/%.*$/, '');
  const dotted = /^(.*:)(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(a);
  if (dotted) {
    const [b0, b1, b2, b3] = dotted.slice(2).map(Number) as [number, number, number, number];
    a = `${dotted[1]}${((b0 << 8) | b1).toString(16)}:${((b2 << 8) | b3).toString(16)}`;
  }
  const [head = '', tail] = a.split('::');
  const parts = (s: string) => (s === '' ? [] : s.split(':').map((g) => Number.parseInt(g, 16)));
  const h = parts(head);
  if (tail === undefined) return h;
  const t = parts(tail);
  return [...h, ...new Array<number>(8 - h.length - t.length).fill(0), ...t];
}

const v4 = (hi: number, lo: number) => `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;

/**
 * The IPv4 address an IPv6 address stands for, when it embeds one a packet may end up at: IPv4-mapped
 * (`::ffff:0:0/96`), IPv4-translated (`::ffff:0:0:0/96`), IPv4-compatible (`::/96`), NAT64
 * (`64:ff9b::/96`) and 6to4 (`2002::/16`, the IPv4 in bits 16–47). null otherwise.
 */
function embeddedIpv4(g: number[]): string | null {
  const zero = (from: number, to: number) => g.slice(from, to).every((x) => x === 0);
  if (zero(0, 5) && (g[5] === 0xffff || g[5] === 0)) return v4(g[6] as number, g[7] as number);
  if (zero(0, 4) && g[4] === 0xffff && g[5] === 0) return v4(g[6] as number, g[7] as number);
  if (g[0] === 0x64 && g[1] === 0xff9b && zero(2, 6)) return v4(g[6] as number, g[7] as number);
  if (g[0] === 0x2002) return v4(g[1] as number, g[2] as number);
  return null;
}

/**
 * Whether `address` (an IP literal) is loopback, private, link-local, unspecified or otherwise
 * internal. An IPv6 address embedding an IPv4 one is judged by that IPv4 address; anything that is
 * not an IP literal counts as private.
 */
export function isPrivateAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return blocked.check(address, 'ipv4');
  if (family !== 6) return true;
  const inner = embeddedIpv4(ipv6Groups(address));
  if (inner !== null) return blocked.check(inner, 'ipv4');
  return blocked.check(address.toLowerCase().replace(/%.*$/, ''), 'ipv6');
}
