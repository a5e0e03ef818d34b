import type SQLite from 'better-sqlite3';
import { type RawBuilder, sql } from 'kysely';
import type { Db } from '../db/connection.js';
import type { GenerationsTable } from '../db/schema.js';
import type { GenerationFilter } from './filter.js';
import { BOUNDS, bucketOf, HISTOGRAM_COLUMNS } from './latency-buckets.js';

/** A series' time bucket, and what its lines are grouped by (the analytics routes' parameters). */
export type Bucket = 'hour' | 'day';
export type GroupBy = 'model' | 'provider' | 'key' | 'workspace';

/**
 * The hourly rollup (generation_hours, migration 0018): what the analytics read for whole hours
 * instead of every generation. Writers add a batch's generations to it in the transaction that
 * inserts them (upsert-add), so it always holds exactly the generations written so far.
 */

const KEY = ['organization_id', 'hour', 'workspace_id', 'key_hash', 'user_id', 'model', 'provider'] as const;
const SUMS = [
  'requests',
  'errors',
  'spend',
  'byok_spend',
  'prompt_tokens',
  'completion_tokens',
  'reasoning_tokens',
  'latency_ms',
] as const;
const ADDED = [...SUMS, ...HISTOGRAM_COLUMNS];
const COLUMNS = [...KEY, ...ADDED];

type HourRow = Record<string, string | number>;

/** The rollup rows of a batch of generations: one per cell, in key order. */
export function hourRowsOf(rows: readonly GenerationsTable[]): HourRow[] {
  const cells = new Map<string, HourRow>();
  for (const r of rows) {
    const key = [
      r.organization_id,
      r.created_at.slice(0, 13),
      r.workspace_id,
      r.key_hash ?? '',
      r.user_id ?? '',
      r.model ?? r.requested_model,
      r.provider ?? '',
    ];
    // The cell's key as one string (U+0000 cannot occur in these ids): called for every row written.
    const k = key.join('\u0000');
    let c = cells.get(k);
    if (c === undefined) {
      c = {};
      for (let i = 0; i < KEY.length; i++) c[KEY[i] as string] = key[i] as string;
      for (const col of ADDED) c[col] = 0;
      cells.set(k, c);
    }
    const sums = c as Record<(typeof SUMS)[number], number> & Record<string, number>;
    sums.requests += 1;
    sums.errors += r.status === 'success' ? 0 : 1;
    sums.spend += r.cost_usd;
    sums.byok_spend += r.is_byok === 1 ? r.cost_usd : 0;
    sums.prompt_tokens += r.prompt_tokens;
    sums.completion_tokens += r.completion_tokens;
    sums.reasoning_tokens += r.reasoning_tokens;
    sums.latency_ms += r.latency_ms;
    const h = `h${bucketOf(r.latency_ms)}`;
    sums[h] = (sums[h] as number) + 1;
  }
  // Key order: two writers on PostgreSQL lock the cells they share in the same order (no deadlock).
  return [...cells.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, c]) => c);
}

/** Rows per statement: a row has 92 parameters, SQLite takes at most 32,766 per statement. */
const CHUNK = 300;

/** Adds generations to the rollup with `db` (a transaction the caller holds, with the inserts). */
export async function addToHours(db: Db, rows: readonly GenerationsTable[]): Promise<void> {
  const cells = hourRowsOf(rows);
  for (let i = 0; i < cells.length; i += CHUNK) {
    await db
      .insertInto('generation_hours')
      .values(cells.slice(i, i + CHUNK) as never)
      .onConflict((oc) =>
        oc
          .columns([...KEY])
          .doUpdateSet(
            Object.fromEntries(
              ADDED.map((c) => [c, sql`${sql.ref(`generation_hours.${c}`)} + ${sql.ref(`excluded.${c}`)}`]),
            ) as never,
          ),
      )
      .execute();
  }
}

const UPSERT_SQL = `insert into generation_hours (${COLUMNS.map((c) => `"${c}"`).join(', ')})
  values (${COLUMNS.map(() => '?').join(', ')})
  on conflict (${KEY.map((c) => `"${c}"`).join(', ')}) do update set
  ${ADDED.map((c) => `"${c}" = generation_hours."${c}" + excluded."${c}"`).join(', ')}`;

/** The same through a statement prepared once on `sqlite`; run it inside the inserts' transaction. */
export function sqliteHoursUpsert(sqlite: SQLite.Database) {
  const upsert = sqlite.prepare(UPSERT_SQL);
  return (rows: readonly GenerationsTable[]) => {
    for (const values of sqliteHoursValues(rows)) upsert.run(values);
  };
}

/** The SQLite upsert of one rollup cell, positional (`sqliteHoursValues` gives its values). */
export const SQLITE_HOURS_UPSERT = UPSERT_SQL;

/** The rollup cells `rows` add to, as the positional values of `SQLITE_HOURS_UPSERT`. */
export const sqliteHoursValues = (rows: readonly GenerationsTable[]): (string | number)[][] =>
  hourRowsOf(rows).map((c) => COLUMNS.map((col) => c[col] as string | number));

/** One (bucket, groups) cell of an aggregate: sums and the latency histogram. */
export interface Cell {
  bucket: string | null;
  groups: (string | null)[];
  spend: number;
  byok_spend: number;
  requests: number;
  errors: number;
  prompt_tokens: number;
  completion_tokens: number;
  reasoning_tokens: number;
  histogram: number[];
}

/** The filters the rollup can answer: equality on its key columns and a time range. */
const SERVED = new Set([
  'organizationId',
  'workspaceId',
  'keyHash',
  'userId',
  'model',
  'provider',
  'from',
  'to',
]);
export const rollupServes = (f: GenerationFilter) =>
  Object.entries(f).every(([k, v]) => v === undefined || SERVED.has(k));

const groupOf = (g: GroupBy): RawBuilder<string | null> => {
  if (g === 'model') return sql`model`;
  if (g === 'provider') return sql`nullif(provider, '')`;
  if (g === 'key') return sql`nullif(key_hash, '')`;
  return sql`workspace_id`;
};

/** Sums of the rollup's hours in [fromHour, toHour) (13-character hours), per bucket and group. */
export async function hourCells(
  db: Db,
  filter: GenerationFilter,
  fromHour: string,
  toHour: string,
  bucket: Bucket | null,
  groupBy: GroupBy[],
  /** false: no latency histogram (the caller reports no percentiles). */
  latency = true,
): Promise<Cell[]> {
  const b: RawBuilder<string | null> =
    bucket === 'hour' ? sql`hour` : bucket === 'day' ? sql`substr(hour, 1, 10)` : sql`null`;
  const groups = groupBy.map(groupOf);
  let q = db
    .selectFrom('generation_hours')
    .where('organization_id', '=', filter.organizationId)
    .where('hour', '>=', fromHour)
    .where('hour', '<', toHour);
  if (filter.workspaceId !== undefined) q = q.where('workspace_id', '=', filter.workspaceId);
  if (filter.keyHash !== undefined) q = q.where('key_hash', '=', filter.keyHash);
  if (filter.userId !== undefined) q = q.where('user_id', '=', filter.userId);
  if (filter.model !== undefined) q = q.where('model', '=', filter.model);
  if (filter.provider !== undefined) q = q.where('provider', '=', filter.provider);
  const rows = await q
    .select([
      b.as('bucket'),
      ...groups.map((g, i) => g.as(`g${i}`)),
      ...SUMS.map((c) => sql<number>`sum(${sql.ref(c)})`.as(c)),
      ...(latency
        ? [histogramText(HISTOGRAM_COLUMNS.map((c) => sql<number>`sum(${sql.ref(c)})`)).as('histogram')]
        : []),
    ])
    .$if(bucket !== null, (x) => x.groupBy(b))
    .$if(groups.length > 0, (x) => x.groupBy(groups))
    .execute();
  return rows.map((r) => cellOf(r as unknown as Record<string, unknown>, groups.length));
}

/** The histogram column sums of raw generations: how many latencies fall in each bucket. */
export const rawHistogram = (): RawBuilder<number>[] =>
  HISTOGRAM_COLUMNS.map((_, j) => {
    const lo = j === 0 ? null : BOUNDS[j - 1];
    const hi = j === BOUNDS.length ? null : BOUNDS[j];
    const cond =
      lo === null
        ? sql`latency_ms < ${sql.lit(hi)}`
        : hi === null
          ? sql`latency_ms >= ${sql.lit(lo)}`
          : sql`latency_ms >= ${sql.lit(lo)} and latency_ms < ${sql.lit(hi)}`;
    return sql<number>`sum(case when ${cond} then 1 else 0 end)`;
  });

/**
 * A cell's histogram sums as one text ('3,0,12,…'): a row of one column instead of 77, which the
 * driver turns into a JavaScript object several times faster (the cost of a week's series by
 * hour and model is building its thousands of result rows).
 */
export const histogramText = (sums: RawBuilder<number>[]): RawBuilder<string | null> =>
  sql`${sql.join(sums, sql` || ',' || `)}`;

/** A row of sums (rollup or raw: the same column names) as a cell. */
export function cellOf(r: Record<string, unknown>, groups: number): Cell {
  const n = (v: unknown) => (v === null || v === undefined ? 0 : Number(v));
  return {
    bucket: (r.bucket as string | null) ?? null,
    groups: Array.from({ length: groups }, (_, i) => (r[`g${i}`] as string | null) ?? null),
    spend: n(r.spend),
    byok_spend: n(r.byok_spend),
    requests: n(r.requests),
    errors: n(r.errors),
    prompt_tokens: n(r.prompt_tokens),
    completion_tokens: n(r.completion_tokens),
    reasoning_tokens: n(r.reasoning_tokens),
    // Null: an ungrouped sum over no rows.
    histogram: typeof r.histogram === 'string' ? r.histogram.split(',').map(Number) : [],
  };
}

/**
 * Rebuilds the rollup from the generations (all of them, or one organization's): for a database
 * whose generations were written or deleted by hand, and for the benchmark's seeded rows.
 */
export async function rebuildHours(db: Db, organizationId?: string): Promise<void> {
  const hist = rawHistogram();
  await db.transaction().execute(async (tx) => {
    await tx
      .deleteFrom('generation_hours')
      .$if(organizationId !== undefined, (q) => q.where('organization_id', '=', organizationId as string))
      .execute();
    const select = tx
      .selectFrom('generations')
      .$if(organizationId !== undefined, (q) => q.where('organization_id', '=', organizationId as string))
      .select([
        'organization_id',
        sql<string>`substr(created_at, 1, 13)`.as('hour'),
        'workspace_id',
        sql<string>`coalesce(key_hash, '')`.as('key_hash'),
        sql<string>`coalesce(user_id, '')`.as('user_id'),
        sql<string>`coalesce(model, requested_model)`.as('model'),
        sql<string>`coalesce(provider, '')`.as('provider'),
        sql<number>`count(*)`.as('requests'),
        sql<number>`sum(case when status = 'success' then 0 else 1 end)`.as('errors'),
        sql<number>`sum(cost_usd)`.as('spend'),
        sql<number>`sum(case when is_byok = 1 then cost_usd else 0 end)`.as('byok_spend'),
        sql<number>`sum(prompt_tokens)`.as('prompt_tokens'),
        sql<number>`sum(completion_tokens)`.as('completion_tokens'),
        sql<number>`sum(reasoning_tokens)`.as('reasoning_tokens'),
        sql<number>`sum(latency_ms)`.as('latency_ms'),
        ...hist.map((h, j) => h.as(`h${j}`)),
      ])
      .groupBy([
        'organization_id',
        sql`substr(created_at, 1, 13)`,
        'workspace_id',
        sql`coalesce(key_hash, '')`,
        sql`coalesce(user_id, '')`,
        sql`coalesce(model, requested_model)`,
        sql`coalesce(provider, '')`,
      ]);
    await tx
      .insertInto('generation_hours')
      .columns(COLUMNS as never)
      .expression(select as never)
      .execute();
  });
}
