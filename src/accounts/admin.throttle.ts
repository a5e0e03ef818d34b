import { isIPv6 } from 'node:net';
import { type RateLimiterAbstract, RateLimiterCluster, RateLimiterMemory } from 'rate-limiter-flexible';

/**
 * Whom failures are counted against: the IPv4 address, or the /64 network of an IPv6 one (a single
 * host usually holds a whole /64, and would otherwise get a fresh allowance — and a fresh entry in
 * memory — per address). IPv4-mapped IPv6 addresses count as their IPv4 address.
 */
export function throttleKey(ip: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (mapped) return mapped[1] as string;
  if (!isIPv6(ip)) return ip;
  const [head = '', tail] = (ip.toLowerCase().split('%')[0] ?? '').split('::') as [
    string,
    string | undefined,
  ];
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const groups =
    tail === undefined ? left : [...left, ...Array(8 - left.length - right.length).fill('0'), ...right];
  return `${groups
    .slice(0, 4)
    .map((g) => g.replace(/^0+(?=.)/, ''))
    .join(':')}::/64`;
}

/**
 * Failed operator authentications per client address (IPv6: per /64), GATEHOUSE_ADMIN_AUTH_FAILURES per minute:
 * past the limit, the address gets 429 — its right tokens included, so guessing gains nothing —
 * until the minute that began with its first failure ends. Kept in this process's memory (each
 * node of a cluster counts on its own), or in the primary's for the workers of `serve --workers N`
 * (`shared`), which then count together. `failures` of 0 turns the throttle off.
 */
export class AdminThrottle {
  private readonly limiter: RateLimiterAbstract | null;

  constructor(
    private readonly failures: number,
    windowSeconds = 60,
    shared = false,
  ) {
    const opts = { points: failures, duration: windowSeconds, keyPrefix: 'admin-auth' };
    this.limiter =
      failures <= 0
        ? null
        : shared
          ? new RateLimiterCluster({ ...opts, timeoutMs: 1_000 })
          : new RateLimiterMemory(opts);
  }

  /** How long `address` must wait before it may try again, ms; 0 when it may try now. */
  async blockedForMs(address: string): Promise<number> {
    // The primary not answering (shared): the address is not held up for it.
    const res = await this.limiter?.get(throttleKey(address)).catch(() => null);
    return res && res.consumedPoints >= this.failures ? Math.max(1, res.msBeforeNext) : 0;
  }

  /** Counts one failed attempt; resolves true when this failure used up the address's allowance. */
  async failed(address: string): Promise<boolean> {
    const res = await this.limiter?.penalty(throttleKey(address), 1).catch(() => undefined);
    return res !== undefined && res.consumedPoints === this.failures;
  }
}
