import type { Db } from '../db/connection.js';
import { windowStart } from '../lib/time.js';
import { totalUsage, type UsageCounters, usageByKey, zeroUsage } from './usage.store.js';

/** Spend recorded by the inference engine, summed per key and per organization. */
export class UsageService {
  /** Makes recorded-but-unwritten spend durable before a read (wired to the accountant's flush). */
  private settle: () => Promise<void> = async () => {};

  constructor(private readonly db: Db) {}

  /** Reads wait for this first, so a read right after a call includes that call's spend. */
  settleWith(fn: () => Promise<void>): void {
    this.settle = fn;
  }

  zero = zeroUsage;

  async forKeys(hashes: string[], now: Date = new Date()): Promise<Map<string, UsageCounters>> {
    await this.settle();
    return usageByKey(this.db, hashes, {
      daily: windowStart('daily', now).toISOString(),
      weekly: windowStart('weekly', now).toISOString(),
      monthly: windowStart('monthly', now).toISOString(),
    });
  }

  async totalForOrganization(organizationId: string): Promise<number> {
    await this.settle();
    return totalUsage(this.db, organizationId);
  }
}
