import type { Db } from '../db/connection.js';
import { windowStart } from '../lib/time.js';
import { totalUsage, type UsageCounters, usageByKey, zeroUsage } from './usage.store.js';

/** Spend recorded by the inference engine, summed per key and per organization. */
export class UsageService {
  constructor(private readonly db: Db) {}

  zero = zeroUsage;

  forKeys(hashes: string[], now: Date = new Date()): Promise<Map<string, UsageCounters>> {
    return usageByKey(this.db, hashes, {
      daily: windowStart('daily', now).toISOString(),
      weekly: windowStart('weekly', now).toISOString(),
      monthly: windowStart('monthly', now).toISOString(),
    });
  }

  totalForOrganization = (organizationId: string) => totalUsage(this.db, organizationId);
}
