import type SQLite from 'better-sqlite3';
import type { Selectable } from 'kysely';
import type { Db, Dialect } from '../db/connection.js';
import type { BatchesTable, BatchRequestsTable } from '../db/schema.js';

/**
 * SQL of batches and their requests. Times: `*_at` on batches in Unix seconds, lease and retry
 * times on requests in milliseconds. Only accepted batches (`accepted = 1`) are ever shown.
 */

export type BatchRow = Selectable<BatchesTable>;
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

export async function createBatch(db: Db, row: NewBatchRow): Promise<void> {
  await db
    .insertInto('batches')
    .values({ ...row, accepted: 0, request_count: 0, input_bytes: 0, estimated_cost_usd: 0 })
    .execute();
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
    | 'input_file_id'
    | 'metadata_json'
    | 'headers_json'
  > & { output_expires_after_s: number | null },
): Promise<void> {
  await db
    .updateTable('batches')
    .set({ ...fields, accepted: 1 })
    .where('id', '=', id)
    .execute();
}

/**
 * Names the uploaded file an ingestion is about to read (`input_file_id`) before it reads it: the
 * file sweep keeps the files of unfinished batches, this one included.
 */
export async function noteInputFile(db: Db, id: string, fileId: string): Promise<void> {
  await db.updateTable('batches').set({ input_file_id: fileId }).where('id', '=', id).execute();
}

export async function deleteBatch(db: Db, id: string): Promise<void> {
  await db.deleteFrom('batch_requests').where('batch_id', '=', id).execute();
  await db.deleteFrom('batches').where('id', '=', id).execute();
}

/** An accepted batch of one workspace: another workspace's keys, even of the same organization, never see it. */
export async function getBatch(
  db: Db,
  owner: { organizationId: string; workspaceId: string },
  id: string,
): Promise<BatchRow | undefined> {
  return db
    .selectFrom('batches')
    .selectAll()
    .where('id', '=', id)
    .where('organization_id', '=', owner.organizationId)
    .where('workspace_id', '=', owner.workspaceId)
    .where('accepted', '=', 1)
    .executeTakeFirst();
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
  /** Also take over requests whose lease ran out (the periodic claim does; the refills do not). */
  expired = true,
): Promise<Claimed[]> {
  const claimed: Claimed[] = [];
  for (const due of expired ? (['expired', 'pending'] as const) : (['pending'] as const)) {
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

/**
 * Extends the leases `owner` holds in these batches. On PostgreSQL rows another transaction holds
 * are skipped, not waited for: they are this worker's own outcomes being written (or a cancel
 * closing them), and waiting would lock rows in a different order than that writer does — a
 * deadlock. A skipped lease is extended by the next beat, which comes well within the lease.
 */
export async function heartbeat(
  db: Db,
  dialect: Dialect,
  owner: string,
  batchIds: string[],
  until: number,
): Promise<void> {
  if (batchIds.length === 0) return;
  const mine = db
    .selectFrom('batch_requests')
    .select(['batch_id', 'idx'])
    .where('batch_id', 'in', batchIds)
    .where('state', '=', 'running')
    .where('lease_owner', '=', owner);
  // SQLite has one writer at a time: no lock to skip, so the rows are updated where they stand.
  const picked = dialect === 'postgres' ? mine.forUpdate().skipLocked() : mine;
  await db
    .with(
      (wb) => wb('mine').materialized(),
      () => picked,
    )
    .updateTable('batch_requests')
    .from('mine')
    .set({ lease_expires_at: until })
    .whereRef('batch_requests.batch_id', '=', 'mine.batch_id')
    .whereRef('batch_requests.idx', '=', 'mine.idx')
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

/** What a worker records for a leased request: its result, or a retry later. */
export type Outcome =
  | { ref: LeaseRef; kind: 'done'; result: RequestResult }
  | { ref: LeaseRef; kind: 'retry'; due: number };

/** The usage sums of a batch row, with the result counts. */
const SUMS = [
  'prompt_tokens',
  'completion_tokens',
  'reasoning_tokens',
  'cached_tokens',
  'cache_write_tokens',
  'cost_usd',
  'prompt_cost_usd',
  'completion_cost_usd',
  'upstream_cost_usd',
] as const;

type Deltas = Record<(typeof SUMS)[number] | 'completed_count' | 'failed_count' | 'byok_count', number>;

const noDeltas = (): Deltas => ({
  completed_count: 0,
  failed_count: 0,
  byok_count: 0,
  ...(Object.fromEntries(SUMS.map((k) => [k, 0])) as Record<(typeof SUMS)[number], number>),
});

/**
 * Writes outcomes in the caller's transaction: each only if its lease is still the writer's
 * (token). Recorded results are added to their batch's counters in the same transaction. Returns
 * which outcomes counted.
 */
export async function recordOutcomes(
  tx: Db,
  outcomes: Outcome[],
  at: { now: number; by: string },
): Promise<boolean[]> {
  const counted: boolean[] = new Array(outcomes.length).fill(false);
  const deltas = new Map<string, Deltas>();
  // Rows are locked in (batch, index) order, as every other multi-row writer meets them, so two
  // writers never wait on each other in a cycle; the batch counters then follow in id order.
  const order = outcomes.map((o, i) => ({ o, i })).sort((a, b) => compareRefs(a.o.ref, b.o.ref));
  for (const { o, i } of order) {
    const leased = tx
      .updateTable('batch_requests')
      .where('batch_id', '=', o.ref.batchId)
      .where('idx', '=', o.ref.idx)
      .where('state', '=', 'running')
      .where('lease_token', '=', o.ref.token);
    const res =
      o.kind === 'done'
        ? await leased
            .set({
              ...o.result,
              state: 'done',
              lease_owner: null,
              lease_token: null,
              lease_expires_at: null,
              finished_at: at.now,
              finished_by: at.by,
            })
            .executeTakeFirst()
        : await leased
            .set({
              state: 'pending',
              lease_owner: null,
              lease_token: null,
              lease_expires_at: null,
              next_attempt_at: o.due,
            })
            .executeTakeFirst();
    const ok = Number(res.numUpdatedRows) === 1;
    counted[i] = ok;
    if (ok && o.kind === 'done') addDeltas(deltas, o.ref.batchId, o.result);
  }
  for (const [batchId, d] of deltas) await addToBatch(tx, batchId, d);
  return counted;
}

const compareRefs = (a: LeaseRef, b: LeaseRef): number =>
  a.batchId < b.batchId ? -1 : a.batchId > b.batchId ? 1 : a.idx - b.idx;

async function addToBatch(tx: Db, batchId: string, d: Partial<Deltas>): Promise<void> {
  await tx
    .updateTable('batches')
    .set((eb) =>
      Object.fromEntries(
        Object.entries(d)
          .filter(([, v]) => v !== 0)
          .map(([k, v]) => [k, eb(k as keyof Deltas, '+', v as number)]),
      ),
    )
    .where('id', '=', batchId)
    .execute();
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
  if (!db.isTransaction)
    return db.transaction().execute((tx) => closeUnfinished(tx, batchId, errorJson, which, now));
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
  const n = Number(res.numUpdatedRows);
  if (n > 0) await addToBatch(db, batchId, { failed_count: n });
  return n;
}

/** Requests of a batch not yet done (those waiting on a provider's batch API included). */
export async function unfinishedCount(db: Db, batchId: string): Promise<number> {
  const row = await db
    .selectFrom('batch_requests')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('batch_id', '=', batchId)
    .where('state', 'in', ['pending', 'running', 'native'])
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

/**
 * recordOutcomes on SQLite through statements prepared once, for a better-sqlite3 transaction the
 * caller runs: the same writes, without building and compiling a Kysely query per outcome (about
 * a fifth of the worker's CPU per request went there).
 */
export function sqliteOutcomeRecorder(sqlite: SQLite.Database) {
  const RESULT = [
    'status_code',
    'generation_id',
    'response_body',
    'error_json',
    ...SUMS,
    'is_byok',
  ] as const satisfies readonly (keyof RequestResult)[];
  const done = sqlite.prepare(
    `update "batch_requests" set ${RESULT.map((c) => `"${c}" = ?`).join(', ')}, "state" = 'done', "lease_owner" = null, "lease_token" = null, "lease_expires_at" = null, "finished_at" = ?, "finished_by" = ? where "batch_id" = ? and "idx" = ? and "state" = 'running' and "lease_token" = ?`,
  );
  const retry = sqlite.prepare(
    `update "batch_requests" set "state" = 'pending', "lease_owner" = null, "lease_token" = null, "lease_expires_at" = null, "next_attempt_at" = ? where "batch_id" = ? and "idx" = ? and "state" = 'running' and "lease_token" = ?`,
  );
  const COUNTERS = ['completed_count', 'failed_count', 'byok_count', ...SUMS] as const;
  const counters = sqlite.prepare(
    `update "batches" set ${COUNTERS.map((c) => `"${c}" = "${c}" + ?`).join(', ')} where "id" = ?`,
  );
  return (outcomes: Outcome[], at: { now: number; by: string }): boolean[] => {
    const counted: boolean[] = [];
    const deltas = new Map<string, Deltas>();
    for (const o of outcomes) {
      const { batchId, idx, token } = o.ref;
      const res =
        o.kind === 'done'
          ? done.run(...RESULT.map((c) => o.result[c]), at.now, at.by, batchId, idx, token)
          : retry.run(o.due, batchId, idx, token);
      const ok = res.changes === 1;
      counted.push(ok);
      if (ok && o.kind === 'done') addDeltas(deltas, batchId, o.result);
    }
    for (const [batchId, d] of deltas) counters.run(...COUNTERS.map((c) => d[c]), batchId);
    return counted;
  };
}

function addDeltas(deltas: Map<string, Deltas>, batchId: string, r: RequestResult): void {
  let d = deltas.get(batchId);
  if (!d) {
    d = noDeltas();
    deltas.set(batchId, d);
  }
  if (r.error_json === null) d.completed_count++;
  else d.failed_count++;
  d.byok_count += r.is_byok;
  for (const k of SUMS) d[k] += r[k];
}
