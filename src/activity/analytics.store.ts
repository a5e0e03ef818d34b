import { type RawBuilder, sql } from 'kysely';
import type { Db } from '../db/connection.js';
import { applyFilter, type GenerationFilter, shownModel } from './filter.js';
import { type Bucket, type Cell, cellOf, type GroupBy, histogramText, rawHistogram } from './hours.store.js';

export type { Bucket, GroupBy } from './hours.store.js';

/** created_at is ISO 8601 text: its first 13 characters are the hour, its first 10 the day. */
const bucketOf = (b: Bucket): RawBuilder<string> =>
  b === 'hour' ? sql<string>`substr(created_at, 1, 13)` : sql<string>`substr(created_at, 1, 10)`;

const groupOf = (g: GroupBy): RawBuilder<string | null> => {
  if (g === 'model') return shownModel;
  if (g === 'provider') return sql<string | null>`provider`;
  if (g === 'key') return sql<string | null>`key_hash`;
  return sql<string | null>`workspace_id`;
};

/** Sums of one (bucket, group) cell; text/number casts keep PostgreSQL's bigint sums as numbers. */
export interface Totals {
  bucket: string | null;
  groups: (string | null)[];
  spend: number;
  byok_spend: number;
  requests: number;
  errors: number;
  prompt_tokens: number;
  completion_tokens: number;
  reasoning_tokens: number;
  /** Nearest-rank latency percentiles, when the database computed them (PostgreSQL). */
  p50?: number | null;
  p95?: number | null;
}

export async function totals(
  db: Db,
  filter: GenerationFilter,
  bucket: Bucket | null,
  groupBy: GroupBy[],
  /** PostgreSQL's percentile_disc is the nearest rank: the same answer as latencies() in one pass. */
  percentiles = false,
): Promise<Totals[]> {
  const b: RawBuilder<string | null> = bucket ? bucketOf(bucket) : sql<null>`null`;
  const groups = groupBy.map(groupOf);
  const rows = await applyFilter(db.selectFrom('generations'), filter)
    .select([
      b.as('bucket'),
      ...groups.map((g, i) => g.as(`g${i}`)),
      sql<number>`coalesce(sum(cost_usd), 0)`.as('spend'),
      sql<number>`coalesce(sum(case when is_byok = 1 then cost_usd else 0 end), 0)`.as('byok_spend'),
      sql<number>`count(*)`.as('requests'),
      sql<number>`sum(case when status = 'success' then 0 else 1 end)`.as('errors'),
      sql<number>`coalesce(sum(prompt_tokens), 0)`.as('prompt_tokens'),
      sql<number>`coalesce(sum(completion_tokens), 0)`.as('completion_tokens'),
      sql<number>`coalesce(sum(reasoning_tokens), 0)`.as('reasoning_tokens'),
      ...(percentiles
        ? [
            sql<number>`percentile_disc(0.5) within group (order by latency_ms)`.as('p50'),
            sql<number>`percentile_disc(0.95) within group (order by latency_ms)`.as('p95'),
          ]
        : []),
    ])
    .$if(bucket !== null, (q) => q.groupBy(b))
    .$if(groups.length > 0, (q) => q.groupBy(groups))
    .execute();
  return rows.map((r) => {
    const rec = r as unknown as Record<string, unknown>;
    return {
      bucket: (rec.bucket as string | null) ?? null,
      groups: groups.map((_, i) => (rec[`g${i}`] as string | null) ?? null),
      spend: Number(rec.spend),
      byok_spend: Number(rec.byok_spend),
      requests: Number(rec.requests),
      errors: Number(rec.errors),
      prompt_tokens: Number(rec.prompt_tokens),
      completion_tokens: Number(rec.completion_tokens),
      reasoning_tokens: Number(rec.reasoning_tokens),
      ...(percentiles ? { p50: nullableNumber(rec.p50), p95: nullableNumber(rec.p95) } : {}),
    };
  });
}

/**
 * The sums of raw generations with the rollup's latency histogram, cell by cell: the partial hours
 * at a range's edges, added to the rollup's whole hours.
 */
export async function rawCells(
  db: Db,
  filter: GenerationFilter,
  bucket: Bucket | null,
  groupBy: GroupBy[],
  latency = true,
): Promise<Cell[]> {
  const b: RawBuilder<string | null> = bucket ? bucketOf(bucket) : sql<null>`null`;
  const groups = groupBy.map(groupOf);
  const rows = await applyFilter(db.selectFrom('generations'), filter)
    .select([
      b.as('bucket'),
      ...groups.map((g, i) => g.as(`g${i}`)),
      sql<number>`sum(cost_usd)`.as('spend'),
      sql<number>`sum(case when is_byok = 1 then cost_usd else 0 end)`.as('byok_spend'),
      sql<number>`count(*)`.as('requests'),
      sql<number>`sum(case when status = 'success' then 0 else 1 end)`.as('errors'),
      sql<number>`sum(prompt_tokens)`.as('prompt_tokens'),
      sql<number>`sum(completion_tokens)`.as('completion_tokens'),
      sql<number>`sum(reasoning_tokens)`.as('reasoning_tokens'),
      ...(latency ? [histogramText(rawHistogram()).as('histogram')] : []),
    ])
    .$if(bucket !== null, (q) => q.groupBy(b))
    .$if(groups.length > 0, (q) => q.groupBy(groups))
    .execute();
  return rows.map((r) => cellOf(r as unknown as Record<string, unknown>, groups.length));
}

/**
 * Latencies of each (bucket, groups) cell, for percentiles. Read as values rather than computed in
 * SQL: SQLite has no percentile function, and one code path keeps both databases' answers equal.
 */
export async function latencies(
  db: Db,
  filter: GenerationFilter,
  bucket: Bucket | null,
  groupBy: GroupBy[],
): Promise<Map<string, number[]>> {
  const b: RawBuilder<string | null> = bucket ? bucketOf(bucket) : sql<null>`null`;
  const groups = groupBy.map(groupOf);
  const rows = await applyFilter(db.selectFrom('generations'), filter)
    .select([b.as('bucket'), ...groups.map((g, i) => g.as(`g${i}`)), 'latency_ms'])
    .execute();
  const out = new Map<string, number[]>();
  for (const r of rows as unknown as Record<string, unknown>[]) {
    const k = cellKey(
      (r.bucket as string | null) ?? null,
      groups.map((_, i) => (r[`g${i}`] as string | null) ?? null),
    );
    const list = out.get(k);
    if (list) list.push(Number(r.latency_ms));
    else out.set(k, [Number(r.latency_ms)]);
  }
  return out;
}

const nullableNumber = (v: unknown) => (v === null || v === undefined ? null : Number(v));

export const cellKey = (bucket: string | null, groups: (string | null)[]) =>
  JSON.stringify([bucket, ...groups]);
