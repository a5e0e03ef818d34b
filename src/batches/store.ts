import { type Selectable, sql } from 'kysely';
import type { Db, Dialect } from '../db/connection.js';
import type { BatchesTable, BatchRequestsTable } from '../db/schema.js';

/**
 * SQL of batches and their requests. Times: `*_at` on batches in Unix seconds, lease and retry
 * times on requests in milliseconds. Only accepted batches (`accepted = 1`) are ever shown.
 */

export type BatchRow = BatchesTable;
export type NewBatchRow = Pick<
  BatchesTable,
  | 'id'
  | 'organization_id'
  | 'workspace_id'
  | 'key_hash'
  | 'user_id'
  | 'endpoint'
  | 'completion_window'
  | 'status'
  | 'created_at'
  | 'expires_at'
  | 'updated_at_ms'
>;

export interface NewItem {
  idx: number;
  custom_id: string;
  item: string;
}

export async function createBatch(db: Db, row: NewBatchRow): Promise<void> {
  await db
    .insertInto('batches')
    .values({ ...row, accepted: 0, request_count: 0, input_bytes: 0, estimated_cost_usd: 0 })
    .execute();
}

/** Inserts items; returns the indexes inserted (a duplicate custom_id is left out, not an error). */
export async function insertItems(db: Db, batchId: string, items: NewItem[]): Promise<Set<number>> {
  if (items.length === 0) return new Set();
  const rows = await db
    .insertInto('batch_requests')
    .values(items.map((i) => ({ batch_id: batchId, idx: i.idx, custom_id: i.custom_id, item: i.item })))
    .onConflict((oc) => oc.columns(['batch_id', 'custom_id']).doNothing())
    .returning('idx')
    .execute();
  return new Set(rows.map((r) => r.idx));
}

/** The index of the earlier request that holds `customId`. */
export async function indexOfCustomId(db: Db, batchId: string, customId: string): Promise<number | null> {
  const row = await db
    .selectFrom('batch_requests')
    .select('idx')
    .where('batch_id', '=', batchId)
    .where('custom_id', '=', customId)
    .executeTakeFirst();
  return row?.idx ?? null;
}

export async function touchBatch(db: Db, id: string, nowMs: number): Promise<void> {
  await db.updateTable('batches').set({ updated_at_ms: nowMs }).where('id', '=', id).execute();
}

/** Marks an ingested batch accepted (visible, and workable once the worker promotes it). */
export async function acceptBatch(
  db: Db,
  id: string,
  fields: Pick<
    BatchesTable,
    | 'endpoint'
    | 'model'
    | 'provider_json'
    | 'request_count'
    | 'input_bytes'
    | 'estimated_cost_usd'
    | 'updated_at_ms'
  >,
): Promise<void> {
  await db
    .updateTable('batches')
    .set({ ...fields, accepted: 1 })
    .where('id', '=', id)
    .execute();
}

export async function deleteBatch(db: Db, id: string): Promise<void> {
  await db.deleteFrom('batch_requests').where('batch_id', '=', id).execute();
  await db.deleteFrom('batches').where('id', '=', id).execute();
}

/** Stored items in index order after `afterIdx` (validation of items read before `endpoint`). */
export async function itemsAfter(db: Db, batchId: string, afterIdx: number, limit: number) {
  return db
    .selectFrom('batch_requests')
    .select(['idx', 'custom_id', 'item'])
    .where('batch_id', '=', batchId)
    .where('idx', '>', afterIdx)
    .orderBy('idx')
    .limit(limit)
    .execute();
}

export async function getBatch(db: Db, organizationId: string, id: string): Promise<BatchRow | undefined> {
  return db
    .selectFrom('batches')
    .selectAll()
    .where('id', '=', id)
    .where('organization_id', '=', organizationId)
    .where('accepted', '=', 1)
    .executeTakeFirst();
}

export async function batchById(db: Db, id: string): Promise<BatchRow | undefined> {
  return db.selectFrom('batches').selectAll().where('id', '=', id).executeTakeFirst();
}

/** A key's batches, newest first. */
export async function listBatches(
  db: Db,
  organizationId: string,
  keyHash: string,
  offset: number,
  limit: number,
) {
  const base = db
    .selectFrom('batches')
    .where('organization_id', '=', organizationId)
    .where('key_hash', '=', keyHash)
    .where('accepted', '=', 1);
  const [rows, total] = await Promise.all([
    base
      .selectAll()
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .offset(offset)
      .limit(limit)
      .execute(),
    base.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow(),
  ]);
  return { rows, total: Number(total.n) };
}

/** Progress and usage sums of each batch's requests. */
export interface BatchStats {
  completed: number;
  failed: number;
  unfinished: number;
  byok: number;
  prompt_tokens: number;
  completion_tokens: number;
  reasoning_tokens: number;
  cached_tokens: number;
  cache_write_tokens: number;
  cost_usd: number;
  prompt_cost_usd: number;
  completion_cost_usd: number;
  upstream_cost_usd: number;
}

export async function stats(db: Db, batchIds: string[]): Promise<Map<string, BatchStats>> {
  const out = new Map<string, BatchStats>();
  if (batchIds.length === 0) return out;
  const rows = await db
    .selectFrom('batch_requests')
    .where('batch_id', 'in', batchIds)
    .groupBy('batch_id')
    .select((eb) => [
      'batch_id',
      sql<number>`sum(case when state = 'done' and error_json is null then 1 else 0 end)`.as('completed'),
      sql<number>`sum(case when state = 'done' and error_json is not null then 1 else 0 end)`.as('failed'),
      sql<number>`sum(case when state = 'done' then 0 else 1 end)`.as('unfinished'),
      eb.fn.sum<number>('is_byok').as('byok'),
      eb.fn.sum<number>('prompt_tokens').as('prompt_tokens'),
      eb.fn.sum<number>('completion_tokens').as('completion_tokens'),
      eb.fn.sum<number>('reasoning_tokens').as('reasoning_tokens'),
      eb.fn.sum<number>('cached_tokens').as('cached_tokens'),
      eb.fn.sum<number>('cache_write_tokens').as('cache_write_tokens'),
      eb.fn.sum<number>('cost_usd').as('cost_usd'),
      eb.fn.sum<number>('prompt_cost_usd').as('prompt_cost_usd'),
      eb.fn.sum<number>('completion_cost_usd').as('completion_cost_usd'),
      eb.fn.sum<number>('upstream_cost_usd').as('upstream_cost_usd'),
    ])
    .execute();
  for (const r of rows) {
    const { batch_id, ...sums } = r;
    const n = Object.fromEntries(Object.entries(sums).map(([k, v]) => [k, Number(v ?? 0)])) as unknown;
    out.set(batch_id, n as BatchStats);
  }
  return out;
}

const RESULT_COLUMNS = [
  'idx',
  'custom_id',
  'status_code',
  'generation_id',
  'response_body',
  'error_json',
] as const satisfies readonly (keyof BatchRequestsTable)[];

export type ResultRow = Pick<BatchRequestsTable, (typeof RESULT_COLUMNS)[number]>;

/** Finished requests in index order: a page by offset (poll) or after an index (download). */
export async function results(
  db: Db,
  batchId: string,
  page: { offset: number; limit: number } | { afterIdx: number; limit: number },
): Promise<ResultRow[]> {
  let q = db
    .selectFrom('batch_requests')
    .select(RESULT_COLUMNS)
    .where('batch_id', '=', batchId)
    .where('state', '=', 'done')
    .orderBy('idx')
    .limit(page.limit);
  if ('afterIdx' in page) q = q.where('idx', '>', page.afterIdx);
  else q = q.offset(page.offset);
  return q.execute();
}

// ---------------------------------------------------------------------------------------------
// The worker's side

/** Accepted batches in any of `statuses`, oldest first. */
export async function batchesIn(db: Db, statuses: string[]): Promise<BatchRow[]> {
  return db
    .selectFrom('batches')
    .selectAll()
    .where('status', 'in', statuses)
    .where('accepted', '=', 1)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

/** Moves a batch from one of `from` to `to`; false when another worker (or the caller) moved it first. */
export async function transition(
  db: Db,
  id: string,
  from: string[],
  to: string,
  extra: Partial<
    Pick<
      BatchesTable,
      'in_progress_at' | 'finalizing_at' | 'cancelling_at' | 'finalized_at' | 'error_message'
    >
  > = {},
): Promise<boolean> {
  const res = await db
    .updateTable('batches')
    .set({ status: to, ...extra })
    .where('id', '=', id)
    .where('status', 'in', from)
    .executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

export interface Claimed {
  idx: number;
  custom_id: string;
  item: string;
  attempts: number;
}

/**
 * Leases up to `limit` requests of a batch to `owner`: first those whose lease ran out (their
 * worker died), then pending ones that are due, in index order. On PostgreSQL the candidate rows
 * are locked with FOR UPDATE SKIP LOCKED so concurrent workers claim disjoint sets; SQLite runs one
 * writer at a time, so the same statement is already exclusive there.
 */
export async function claim(
  db: Db,
  dialect: Dialect,
  batchId: string,
  lease: { owner: string; token: string; until: number },
  now: number,
  limit: number,
): Promise<Claimed[]> {
  const claimed: Claimed[] = [];
  for (const due of ['expired', 'pending'] as const) {
    const want = limit - claimed.length;
    if (want <= 0) break;
    let pick = db
      .selectFrom('batch_requests')
      .select('idx')
      .where('batch_id', '=', batchId)
      .orderBy('idx')
      .limit(want);
    pick =
      due === 'expired'
        ? pick.where('state', '=', 'running').where('lease_expires_at', '<', now)
        : pick.where('state', '=', 'pending').where('next_attempt_at', '<=', now);
    if (dialect === 'postgres') pick = pick.forUpdate().skipLocked();
    // The pick is a materialized CTE so it runs once: as an `IN (subquery)` PostgreSQL may rescan
    // it per row, and each rescan skips the rows this statement already updated and picks new
    // ones, so the LIMIT no longer bounds the claim (every pending request got leased at once).
    const rows = await db
      .with(
        (wb) => wb('picked').materialized(),
        () => pick,
      )
      .updateTable('batch_requests')
      .set((eb) => ({
        state: 'running',
        lease_owner: lease.owner,
        lease_token: lease.token,
        lease_expires_at: lease.until,
        attempts: eb('attempts', '+', 1),
      }))
      .where('batch_id', '=', batchId)
      .where('idx', 'in', (eb) => eb.selectFrom('picked').select('idx'))
      .returning(['idx', 'custom_id', 'item', 'attempts'])
      .execute();
    claimed.push(...rows);
  }
  return claimed;
}

/** Extends the leases `owner` holds in these batches. */
export async function heartbeat(db: Db, owner: string, batchIds: string[], until: number): Promise<void> {
  if (batchIds.length === 0) return;
  await db
    .updateTable('batch_requests')
    .set({ lease_expires_at: until })
    .where('batch_id', 'in', batchIds)
    .where('state', '=', 'running')
    .where('lease_owner', '=', owner)
    .execute();
}

/** The lease a write must still hold to count. */
export interface LeaseRef {
  batchId: string;
  idx: number;
  token: string;
}

export type RequestResult = Pick<
  Selectable<BatchRequestsTable>,
  | 'status_code'
  | 'generation_id'
  | 'response_body'
  | 'error_json'
  | 'prompt_tokens'
  | 'completion_tokens'
  | 'reasoning_tokens'
  | 'cached_tokens'
  | 'cache_write_tokens'
  | 'cost_usd'
  | 'prompt_cost_usd'
  | 'completion_cost_usd'
  | 'upstream_cost_usd'
  | 'is_byok'
>;

/** Records a request's one result, if its lease is still the writer's. */
export async function finish(
  db: Db,
  ref: LeaseRef,
  result: RequestResult,
  at: { now: number; by: string },
): Promise<boolean> {
  const res = await db
    .updateTable('batch_requests')
    .set({
      ...result,
      state: 'done',
      lease_owner: null,
      lease_token: null,
      lease_expires_at: null,
      finished_at: at.now,
      finished_by: at.by,
    })
    .where('batch_id', '=', ref.batchId)
    .where('idx', '=', ref.idx)
    .where('state', '=', 'running')
    .where('lease_token', '=', ref.token)
    .executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

/** Puts a leased request back to pending, due at `due` (a retry, or a release on shutdown). */
export async function reschedule(db: Db, ref: LeaseRef, due: number): Promise<boolean> {
  const res = await db
    .updateTable('batch_requests')
    .set({
      state: 'pending',
      lease_owner: null,
      lease_token: null,
      lease_expires_at: null,
      next_attempt_at: due,
    })
    .where('batch_id', '=', ref.batchId)
    .where('idx', '=', ref.idx)
    .where('state', '=', 'running')
    .where('lease_token', '=', ref.token)
    .executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

/**
 * Gives every unfinished request of a batch the same error result (expired, cancelled, failed
 * batch). `which`: `all` takes running ones from their workers too (their later writes then do
 * not count); `idle` only pending ones and running ones whose lease ran out.
 */
export async function closeUnfinished(
  db: Db,
  batchId: string,
  errorJson: string,
  which: 'all' | 'idle',
  now: number,
): Promise<number> {
  const res = await db
    .updateTable('batch_requests')
    .set({
      state: 'done',
      error_json: errorJson,
      lease_owner: null,
      lease_token: null,
      lease_expires_at: null,
      finished_at: now,
    })
    .where('batch_id', '=', batchId)
    .where('state', '!=', 'done')
    .$if(which === 'idle', (q) =>
      q.where((eb) =>
        eb.or([
          eb('state', '=', 'pending'),
          eb.and([eb('state', '=', 'running'), eb('lease_expires_at', '<', now)]),
        ]),
      ),
    )
    .executeTakeFirst();
  return Number(res.numUpdatedRows);
}

/** Requests of a batch not yet done. */
export async function unfinishedCount(db: Db, batchId: string): Promise<number> {
  const row = await db
    .selectFrom('batch_requests')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('batch_id', '=', batchId)
    .where('state', 'in', ['pending', 'running'])
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Batches whose body stopped arriving long ago (the process reading it died): never accepted. */
export async function abandonedIngestions(db: Db, before: number): Promise<string[]> {
  const rows = await db
    .selectFrom('batches')
    .select('id')
    .where('accepted', '=', 0)
    .where('updated_at_ms', '<', before)
    .execute();
  return rows.map((r) => r.id);
}
