import { sql } from 'kysely';
import type { Db } from '../db/connection.js';
import type { UsageEventsTable } from '../db/schema.js';

export interface UsageCounters {
  usage: number;
  usage_daily: number;
  usage_weekly: number;
  usage_monthly: number;
  byok_usage: number;
  byok_usage_daily: number;
  byok_usage_weekly: number;
  byok_usage_monthly: number;
}

export const zeroUsage = (): UsageCounters => ({
  usage: 0,
  usage_daily: 0,
  usage_weekly: 0,
  usage_monthly: 0,
  byok_usage: 0,
  byok_usage_daily: 0,
  byok_usage_weekly: 0,
  byok_usage_monthly: 0,
});

export interface WindowStarts {
  daily: string;
  weekly: string;
  monthly: string;
}

export async function insertUsageEvent(db: Db, row: UsageEventsTable) {
  await db.insertInto('usage_events').values(row).execute();
}

/** Lifetime and windowed spend (USD) per key, split into non-BYOK and BYOK, in one query. */
export async function usageByKey(
  db: Db,
  hashes: string[],
  w: WindowStarts,
): Promise<Map<string, UsageCounters>> {
  const out = new Map<string, UsageCounters>();
  if (hashes.length === 0) return out;
  const sumIf = (byok: number, since?: string) =>
    since === undefined
      ? sql<number>`coalesce(sum(case when is_byok = ${byok} then cost_usd else 0 end), 0)`
      : sql<number>`coalesce(sum(case when is_byok = ${byok} and created_at >= ${since} then cost_usd else 0 end), 0)`;
  const rows = await db
    .selectFrom('usage_events')
    .select([
      'key_hash',
      sumIf(0).as('usage'),
      sumIf(0, w.daily).as('usage_daily'),
      sumIf(0, w.weekly).as('usage_weekly'),
      sumIf(0, w.monthly).as('usage_monthly'),
      sumIf(1).as('byok_usage'),
      sumIf(1, w.daily).as('byok_usage_daily'),
      sumIf(1, w.weekly).as('byok_usage_weekly'),
      sumIf(1, w.monthly).as('byok_usage_monthly'),
    ])
    .where('key_hash', 'in', hashes)
    .groupBy('key_hash')
    .execute();
  for (const r of rows) {
    if (r.key_hash === null) continue;
    const { key_hash, ...sums } = r;
    out.set(
      key_hash,
      Object.fromEntries(Object.entries(sums).map(([k, v]) => [k, Number(v)])) as unknown as UsageCounters,
    );
  }
  return out;
}

/**
 * Credits an organization used (USD): its recorded spend on the operator's credentials. BYOK calls
 * are billed by the provider to the organization (`cost: 0` on the wire) and use no credits; they
 * are reported apart, in the keys' `byok_usage` counters.
 */
export async function totalUsage(db: Db, organizationId: string): Promise<number> {
  const r = await db
    .selectFrom('usage_events')
    .select(sql<number>`coalesce(sum(cost_usd), 0)`.as('total'))
    .where('organization_id', '=', organizationId)
    .where('is_byok', '=', 0)
    .executeTakeFirstOrThrow();
  return Number(r.total);
}
