import { type Kysely, sql } from 'kysely';

/**
 * The hourly rollup of generations the analytics read (src/activity/hours.store.ts): one row per
 * organization, UTC hour, workspace, API key, user, model (as the generation view shows it) and
 * provider, holding the hour's counts, tokens, spend, latency sum and a latency histogram. The
 * writers of generations add to it in the transaction that inserts them.
 *
 * Columns in the key are never null (a primary key cannot hold one on PostgreSQL): a generation
 * without a key, user or provider is counted under ''. `hour` is `created_at`'s first 13
 * characters (2026-11-26T13). The histogram h0 … h76 has the buckets of
 * src/activity/latency-buckets.ts: h0 0 ms, hj [BOUNDS[j-1], BOUNDS[j]) ms, h76 the rest.
 *
 * Existing generations are rolled up here, once.
 */
// Frozen copy of latency-buckets.ts's bounds: this migration's columns are what they are.
const BOUNDS = [...new Set(Array.from({ length: 81 }, (_, i) => Math.ceil(2 ** (i / 4))))];
const H = Array.from({ length: BOUNDS.length + 1 }, (_, j) => `h${j}`);

const KEY = ['organization_id', 'hour', 'workspace_id', 'key_hash', 'user_id', 'model', 'provider'];

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen and must not depend on today's types
export async function up(db: Kysely<any>): Promise<void> {
  let t = db.schema
    .createTable('generation_hours')
    .addColumn('organization_id', 'text', (c) => c.notNull())
    .addColumn('hour', 'text', (c) => c.notNull())
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('key_hash', 'text', (c) => c.notNull())
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('model', 'text', (c) => c.notNull())
    .addColumn('provider', 'text', (c) => c.notNull())
    .addColumn('requests', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('errors', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('spend', 'double precision', (c) => c.notNull().defaultTo(0))
    .addColumn('byok_spend', 'double precision', (c) => c.notNull().defaultTo(0))
    .addColumn('prompt_tokens', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('completion_tokens', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('reasoning_tokens', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('latency_ms', 'bigint', (c) => c.notNull().defaultTo(0));
  for (const h of H) t = t.addColumn(h, 'integer', (c) => c.notNull().defaultTo(0));
  await t.addPrimaryKeyConstraint('generation_hours_pk', KEY as never).execute();

  // Two steps: each generation's histogram bucket (one searched CASE), summed per cell and bucket;
  // then the buckets spread over the columns, per cell.
  const bucket = `case ${BOUNDS.map((b, j) => `when latency_ms < ${b} then ${j}`).join(' ')} else ${BOUNDS.length} end`;
  const cell = [
    'organization_id',
    'substr(created_at, 1, 13)',
    'workspace_id',
    `coalesce(key_hash, '')`,
    `coalesce(user_id, '')`,
    'coalesce(model, requested_model)',
    `coalesce(provider, '')`,
  ];
  await sql
    .raw(
      `insert into generation_hours (${KEY.join(', ')}, requests, errors, spend, byok_spend,
        prompt_tokens, completion_tokens, reasoning_tokens, latency_ms, ${H.join(', ')})
      select ${KEY.map((k) => `c_${k}`).join(', ')}, sum(n), sum(e), sum(s), sum(bs), sum(pt), sum(ct),
        sum(rt), sum(l), ${H.map((_, j) => `sum(case when b = ${j} then n else 0 end)`).join(', ')}
      from (
        select ${cell.map((e, i) => `${e} as c_${KEY[i]}`).join(', ')}, ${bucket} as b,
          count(*) as n, sum(case when status = 'success' then 0 else 1 end) as e,
          sum(cost_usd) as s, sum(case when is_byok = 1 then cost_usd else 0 end) as bs,
          sum(prompt_tokens) as pt, sum(completion_tokens) as ct, sum(reasoning_tokens) as rt,
          sum(latency_ms) as l
        from generations
        group by ${cell.join(', ')}, ${bucket}
      ) cells
      group by ${KEY.map((k) => `c_${k}`).join(', ')}`,
    )
    .execute(db);
}

// biome-ignore lint/suspicious/noExplicitAny: see up()
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('generation_hours').ifExists().execute();
}
