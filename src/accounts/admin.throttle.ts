import { RateLimiterMemory } from 'rate-limiter-flexible';

/**
 * Failed operator authentications per client address (GATEHOUSE_ADMIN_AUTH_FAILURES per minute):
 * past the limit, the address gets 429 — its right tokens included, so guessing gains nothing —
 * until the minute that began with its first failure ends. Kept in this process's memory: each
 * node of a cluster counts on its own. `failures` of 0 turns the throttle off.
 */
export class AdminThrottle {
  private readonly limiter: RateLimiterMemory | null;

  constructor(
    private readonly failures: number,
    windowSeconds = 60,
  ) {
    this.limiter =
      failures > 0
        ? new RateLimiterMemory({ points: failures, duration: windowSeconds, keyPrefix: 'admin-auth' })
        : null;
  }

  /** How long `address` must wait before it may try again, ms; 0 when it may try now. */
  async blockedForMs(address: string): Promise<number> {
    const res = await this.limiter?.get(address);
    return res && res.consumedPoints >= this.failures ? Math.max(1, res.msBeforeNext) : 0;
  }

  /** Counts one failed attempt; resolves true when this failure used up the address's allowance. */
  async failed(address: string): Promise<boolean> {
    const res = await this.limiter?.penalty(address, 1);
    return res !== undefined && res.consumedPoints === this.failures;
  }
}
