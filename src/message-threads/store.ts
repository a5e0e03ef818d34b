import { chunks } from '../db/chunks.js';
import type { Db } from '../db/connection.js';
import type { MessageThreadsTable } from '../db/schema.js';

/** SQL of the message threads Gatehouse holds. Expired rows (`expires_at <= now`) are never read. */

export type ThreadRow = MessageThreadsTable;

export interface Scope {
  organizationId: string;
  workspaceId: string;
}

/** The scope's unexpired turns among `ids` (in no particular order). */
export async function findTurns(
  db: Db,
  scope: Scope,
  ids: readonly string[],
  now: number,
): Promise<ThreadRow[]> {
  const rows: ThreadRow[] = [];
  for (const part of chunks([...new Set(ids)]))
    rows.push(
      ...(await db
        .selectFrom('message_threads')
        .selectAll()
        .where('id', 'in', part)
        .where('workspace_id', '=', scope.workspaceId)
        .where('organization_id', '=', scope.organizationId)
        .where('expires_at', '>', now)
        .execute()),
    );
  return rows;
}

export type Claim = 'claimed' | 'in_flight' | 'done' | 'missing';

/**
 * Marks the reply `id` as being continued (at `now`) unless it was continued already or another
 * continue of it runs; one statement, so of two racing continues exactly one claims it. A claim
 * older than `staleBefore` was left by a process that died mid-call: it is taken over.
 */
export async function claimTurn(
  db: Db,
  scope: Scope,
  id: string,
  now: number,
  staleBefore: number,
): Promise<Claim> {
  const res = await db
    .updateTable('message_threads')
    .set({ continued: 'in_flight', continued_at: now })
    .where('id', '=', id)
    .where('workspace_id', '=', scope.workspaceId)
    .where('organization_id', '=', scope.organizationId)
    .where('expires_at', '>', now)
    .where((eb) =>
      eb.or([
        eb('continued', 'is', null),
        eb.and([eb('continued', '=', 'in_flight'), eb('continued_at', '<', staleBefore)]),
      ]),
    )
    .executeTakeFirst();
  if (Number(res.numUpdatedRows) === 1) return 'claimed';
  const [row] = await findTurns(db, scope, [id], now);
  return row?.continued ?? 'missing';
}

/** Moves a claim still held as of `at` to `now`; false when it is no longer this claim (taken over). */
export async function refreshClaim(db: Db, id: string, at: number, now: number): Promise<boolean> {
  const res = await db
    .updateTable('message_threads')
    .set({ continued_at: now })
    .where('id', '=', id)
    .where('continued', '=', 'in_flight')
    .where('continued_at', '=', at)
    .executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

/** Gives back a claim that produced no stored reply (the call failed): the reply may be continued again. */
export async function releaseTurn(db: Db, id: string, claimedAt: number): Promise<void> {
  await db
    .updateTable('message_threads')
    .set({ continued: null, continued_at: null })
    .where('id', '=', id)
    .where('continued', '=', 'in_flight')
    .where('continued_at', '=', claimedAt)
    .execute();
}

/**
 * Stores a new turn and, in the same transaction, marks the turns it continues as continued and
 * keeps them as long as it: a thread expires as a whole, `retention` after its last turn.
 */
export async function insertTurn(db: Db, row: ThreadRow, chain: readonly string[]): Promise<void> {
  await db.transaction().execute(async (tx) => {
    await tx.insertInto('message_threads').values(row).execute();
    for (const part of chunks(chain))
      await tx
        .updateTable('message_threads')
        .set({ continued: 'done', expires_at: row.expires_at })
        .where('id', 'in', part)
        .where('workspace_id', '=', row.workspace_id)
        .execute();
  });
}

/** Deletes up to `limit` expired turns; returns how many. */
export async function purgeExpired(db: Db, now: number, limit: number): Promise<number> {
  const res = await db
    .deleteFrom('message_threads')
    .where('id', 'in', (eb) =>
      eb.selectFrom('message_threads').select('id').where('expires_at', '<=', now).limit(limit),
    )
    .executeTakeFirst();
  return Number(res.numDeletedRows);
}
