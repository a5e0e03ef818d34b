import { sql } from 'kysely';
import type { Db } from '../db/connection.js';
import type { ClosedCounts } from './anthropic-view.js';
import { MESSAGES_ENDPOINT } from './anthropic-view.js';
import { FINAL_STATUSES } from './model.js';
import type { BatchRow } from './store.js';

/** SQL of the Message Batches view (anthropic-view.ts) over the batch tables. */

// Closing errors are stored as JSON.stringify(closingErrors.x()), whose last key is error_type:
// an unescaped `"error_type":"cancelled"}` can only be that key (quotes in a message are escaped).
const CANCELED = '%"error_type":"cancelled"}';
const EXPIRED = '%"error_type":"expired"}';

/** Per batch, its results closed as cancelled or expired (only batches with failures have any). */
export async function closedCounts(db: Db, rows: BatchRow[]): Promise<Map<string, ClosedCounts>> {
  const out = new Map<string, ClosedCounts>();
  const ids = rows.filter((r) => r.failed_count > 0).map((r) => r.id);
  if (ids.length === 0) return out;
  const counted = await db
    .selectFrom('batch_requests')
    .select([
      'batch_id',
      sql<number>`sum(case when error_json like ${CANCELED} then 1 else 0 end)`.as('canceled'),
      sql<number>`sum(case when error_json like ${EXPIRED} then 1 else 0 end)`.as('expired'),
    ])
    .where('batch_id', 'in', ids)
    .where('state', '=', 'done')
    .where('error_json', 'is not', null)
    .groupBy('batch_id')
    .execute();
  for (const c of counted)
    out.set(c.batch_id, { canceled: Number(c.canceled ?? 0), expired: Number(c.expired ?? 0) });
  return out;
}

/**
 * A page of a key's `/v1/messages` batches, newest first (ids sort by creation): after `afterId`
 * (older ones) or before `beforeId` (newer ones, the nearest first). One row more than `limit`
 * tells whether there are more.
 */
export async function listMessageBatches(
  db: Db,
  owner: { organizationId: string; keyHash: string },
  page: { limit: number; afterId: string | null; beforeId: string | null },
): Promise<{ rows: BatchRow[]; hasMore: boolean }> {
  const newer = page.beforeId !== null;
  let q = db
    .selectFrom('batches')
    .selectAll()
    .where('organization_id', '=', owner.organizationId)
    .where('key_hash', '=', owner.keyHash)
    .where('endpoint', '=', MESSAGES_ENDPOINT)
    .where('accepted', '=', 1)
    .orderBy('id', newer ? 'asc' : 'desc')
    .limit(page.limit + 1);
  if (page.beforeId !== null) q = q.where('id', '>', page.beforeId);
  else if (page.afterId !== null) q = q.where('id', '<', page.afterId);
  const found = await q.execute();
  const rows = found.slice(0, page.limit);
  return { rows: newer ? rows.reverse() : rows, hasMore: found.length > page.limit };
}

/**
 * Deletes an ended batch with its requests; false when it is not (or no longer) there or has not
 * ended. A batch in a final state is never touched by a worker again, so nothing races the delete.
 * Its generations and usage events stay: they are what was billed.
 */
export async function deleteEndedBatch(db: Db, id: string): Promise<boolean> {
  return db.transaction().execute(async (tx) => {
    const row = await tx
      .selectFrom('batches')
      .select('id')
      .where('id', '=', id)
      .where('status', 'in', [...FINAL_STATUSES])
      .executeTakeFirst();
    if (!row) return false;
    await tx.deleteFrom('batch_requests').where('batch_id', '=', id).execute();
    await tx.deleteFrom('batches').where('id', '=', id).execute();
    return true;
  });
}
