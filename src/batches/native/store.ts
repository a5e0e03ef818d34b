import type { Db } from '../../db/connection.js';
import type { Claimed } from '../store.js';

/**
 * SQL of provider-native batches. The batch row's `native_state` moves
 * null → none (the worker runs it) or null → submitting → submitted (→ cancelling) → collected,
 * or → refused (the provider would not take it). Each move is a conditional update, so of several
 * workers exactly one makes it. Requests handed to the provider are in state `native`.
 */

/** Nothing goes natively for this batch (decided once). */
export async function decideWorker(db: Db, batchId: string): Promise<void> {
  await db
    .updateTable('batches')
    .set({ native_state: 'none' })
    .where('id', '=', batchId)
    .where('native_state', 'is', null)
    .execute();
}

/**
 * Takes the batch for a native submission and hands its pending requests to it, in one
 * transaction: no worker claims them from then on. False when another worker decided first.
 */
export async function beginSubmit(
  db: Db,
  batchId: string,
  provider: string,
  until: number,
): Promise<boolean> {
  return db.transaction().execute(async (tx) => {
    const res = await tx
      .updateTable('batches')
      .set({ native_state: 'submitting', native_provider: provider, native_until_ms: until })
      .where('id', '=', batchId)
      .where('native_state', 'is', null)
      .executeTakeFirst();
    if (Number(res.numUpdatedRows) !== 1) return false;
    await tx
      .updateTable('batch_requests')
      .set({ state: 'native' })
      .where('batch_id', '=', batchId)
      .where('state', '=', 'pending')
      .execute();
    return true;
  });
}

/**
 * Takes a step of the batch in `state` whose time has come (`native_until_ms` passed: the
 * submitter died, or the next poll is due) and sets the next time. False when it is not due or
 * another worker took it.
 */
export async function takeDue(
  db: Db,
  batchId: string,
  state: string,
  now: number,
  until: number,
): Promise<boolean> {
  const res = await db
    .updateTable('batches')
    .set({ native_until_ms: until })
    .where('id', '=', batchId)
    .where('native_state', '=', state)
    .where((eb) => eb.or([eb('native_until_ms', 'is', null), eb('native_until_ms', '<', now)]))
    .executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

/** Extends the submitter's hold on a batch in `submitting`. */
export async function extend(db: Db, batchId: string, until: number): Promise<void> {
  await db
    .updateTable('batches')
    .set({ native_until_ms: until })
    .where('id', '=', batchId)
    .where('native_state', '=', 'submitting')
    .execute();
}

/** Moves the batch from one native state to another (with its fields); false when it was not in `from`. */
export async function move(
  db: Db,
  batchId: string,
  from: string,
  to: string,
  fields: { native_id?: string; native_until_ms?: number; native_error?: string | null } = {},
): Promise<boolean> {
  const res = await db
    .updateTable('batches')
    .set({ native_state: to, ...fields })
    .where('id', '=', batchId)
    .where('native_state', '=', from)
    .executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

/** Requests waiting on the provider, in index order, after `afterIdx`. */
export async function waiting(
  db: Db,
  batchId: string,
  afterIdx: number,
  limit: number,
): Promise<{ idx: number; item: string }[]> {
  return db
    .selectFrom('batch_requests')
    .select(['idx', 'item'])
    .where('batch_id', '=', batchId)
    .where('state', '=', 'native')
    .where('idx', '>', afterIdx)
    .orderBy('idx')
    .limit(limit)
    .execute();
}

/** Gives requests back to the worker (all of the batch's when `idxs` is absent). */
export async function release(db: Db, batchId: string, idxs?: number[]): Promise<void> {
  if (idxs && idxs.length === 0) return;
  for (let i = 0; i < (idxs?.length ?? 1); i += 500) {
    await db
      .updateTable('batch_requests')
      .set({ state: 'pending', next_attempt_at: 0 })
      .where('batch_id', '=', batchId)
      .where('state', '=', 'native')
      .$if(idxs !== undefined, (q) => q.where('idx', 'in', (idxs as number[]).slice(i, i + 500)))
      .execute();
  }
}

/**
 * Leases requests whose provider answers came back, as the worker's claim does: their results
 * are then written only while the lease holds (exactly once, with the worker's outcome writer).
 */
export async function claim(
  db: Db,
  batchId: string,
  idxs: number[],
  lease: { owner: string; token: string; until: number },
): Promise<Claimed[]> {
  if (idxs.length === 0) return [];
  return db
    .updateTable('batch_requests')
    .set((eb) => ({
      state: 'running',
      lease_owner: lease.owner,
      lease_token: lease.token,
      lease_expires_at: lease.until,
      attempts: eb('attempts', '+', 1),
    }))
    .where('batch_id', '=', batchId)
    .where('state', '=', 'native')
    .where('idx', 'in', idxs)
    .returning(['idx', 'custom_id', 'item', 'attempts'])
    .execute();
}
