import type { Updateable } from 'kysely';
import { isUniqueViolation } from '../db/columns.js';
import type { Db } from '../db/connection.js';
import type { InternCreateOpsTable, InternStatus, InternsTable } from '../db/schema.js';
import type { ListCursor } from './cursor.js';

/** SQL of interns and their create operations (idempotency). */

export type InternRow = Omit<InternsTable, 'archive_failed'> & { archive_failed: number };
export type NewIntern = Omit<InternRow, 'archive_failed'>;
export type CreateOpRow = Omit<InternCreateOpsTable, 'done'> & { done: number };
export type InternPatch = Updateable<InternsTable>;

let lastStamp = 0;
/**
 * Now as ISO 8601, strictly increasing within the process: two interns created in the same
 * millisecond still list newest first, and every write moves updated_at forward.
 */
export function stamp(): string {
  lastStamp = Math.max(Date.now(), lastStamp + 1);
  return new Date(lastStamp).toISOString();
}

export async function findIntern(db: Db, id: string): Promise<InternRow | undefined> {
  return db.selectFrom('interns').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function findInternIn(db: Db, workspaceId: string, id: string): Promise<InternRow | undefined> {
  return db
    .selectFrom('interns')
    .selectAll()
    .where('id', '=', id)
    .where('workspace_id', '=', workspaceId)
    .executeTakeFirst();
}

export async function findCreateOp(db: Db, scope: string, key: string): Promise<CreateOpRow | undefined> {
  return db
    .selectFrom('intern_create_ops')
    .selectAll()
    .where('scope', '=', scope)
    .where('idempotency_key', '=', key)
    .executeTakeFirst();
}

/** Whether the creator already has an intern named `name` in the workspace (other than `exceptId`). */
export async function nameTaken(
  db: Db,
  workspaceId: string,
  creatorUserId: string,
  name: string,
  exceptId?: string,
): Promise<boolean> {
  let q = db
    .selectFrom('interns')
    .select('id')
    .where('workspace_id', '=', workspaceId)
    .where('creator_user_id', '=', creatorUserId)
    .where('name', '=', name);
  if (exceptId) q = q.where('id', '!=', exceptId);
  return (await q.executeTakeFirst()) !== undefined;
}

/** Interns the member owns, in every workspace (the per-member cap counts them all). */
export async function countOwned(db: Db, creatorUserId: string): Promise<number> {
  const row = await db
    .selectFrom('interns')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('creator_user_id', '=', creatorUserId)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Statuses in which an intern has (or is getting) a runtime. */
export const LIVE_STATUSES: InternStatus[] = ['queued', 'provisioning', 'running'];

/** The organization's interns with a runtime running or starting, `exceptId` aside. */
export async function countLive(db: Db, organizationId: string, exceptId?: string): Promise<number> {
  let q = db
    .selectFrom('interns')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('organization_id', '=', organizationId)
    .where('status', 'in', LIVE_STATUSES);
  if (exceptId) q = q.where('id', '!=', exceptId);
  const row = await q.executeTakeFirstOrThrow();
  return Number(row.n);
}

/**
 * Inserts the create operation and its intern in one transaction. The operation goes first, so a
 * concurrent create with the same key waits on its primary key and then sees `op_exists` (and
 * replays), while a concurrent create of the same name sees `name_taken` (unique index interns_name).
 */
export async function insertInternWithOp(
  db: Db,
  intern: NewIntern,
  op: Omit<CreateOpRow, 'done'>,
): Promise<'ok' | 'op_exists' | 'name_taken'> {
  let stage: 'op' | 'intern' = 'op';
  try {
    await db.transaction().execute(async (tx) => {
      await tx
        .insertInto('intern_create_ops')
        .values({ ...op, done: 0 })
        .execute();
      stage = 'intern';
      await tx.insertInto('interns').values(intern).execute();
    });
    return 'ok';
  } catch (err) {
    if (!isUniqueViolation(err)) throw err;
    return stage === 'op' ? 'op_exists' : 'name_taken';
  }
}

export async function markOpDone(db: Db, scope: string, key: string): Promise<void> {
  await db
    .updateTable('intern_create_ops')
    .set({ done: 1 })
    .where('scope', '=', scope)
    .where('idempotency_key', '=', key)
    .execute();
}

export async function deleteOp(db: Db, scope: string, key: string): Promise<void> {
  await db
    .deleteFrom('intern_create_ops')
    .where('scope', '=', scope)
    .where('idempotency_key', '=', key)
    .execute();
}

/**
 * Updates an intern, only while its status is one of `onlyIn` when given (so a background writer
 * never overwrites a status someone else has moved on). Returns whether a row changed.
 */
export async function updateIntern(
  db: Db,
  id: string,
  patch: InternPatch,
  onlyIn?: readonly InternStatus[],
): Promise<boolean> {
  let q = db.updateTable('interns').set(patch).where('id', '=', id);
  if (onlyIn) {
    if (onlyIn.length === 0) return false;
    q = q.where('status', 'in', [...onlyIn]);
  }
  const res = await q.executeTakeFirst();
  return Number(res.numUpdatedRows) > 0;
}

/** Moves an intern to `status` with no provisioning step under way, if it is still in one of `onlyIn`. */
export function settleStatus(db: Db, id: string, status: InternStatus, onlyIn: readonly InternStatus[]) {
  return updateIntern(
    db,
    id,
    { status, progress_step: null, progress_total: null, progress_label: null, updated_at: stamp() },
    onlyIn,
  );
}

/** Renames an intern: false when the creator already has that name in the workspace (race-safe). */
export async function renameIntern(db: Db, id: string, patch: InternPatch): Promise<boolean> {
  try {
    await db.updateTable('interns').set(patch).where('id', '=', id).execute();
    return true;
  } catch (err) {
    if (isUniqueViolation(err)) return false;
    throw err;
  }
}

/** A page of the workspace's interns, newest first, strictly after `cursor` when given. */
export async function listInterns(
  db: Db,
  workspaceId: string,
  opts: {
    /** Only this member's interns; null for every intern of the workspace. */
    creatorUserId: string | null;
    statuses: InternStatus[] | null;
    limit: number;
    cursor: ListCursor | null;
  },
): Promise<InternRow[]> {
  let q = db.selectFrom('interns').selectAll().where('workspace_id', '=', workspaceId);
  if (opts.creatorUserId !== null) q = q.where('creator_user_id', '=', opts.creatorUserId);
  if (opts.statuses) q = q.where('status', 'in', opts.statuses);
  const cursor = opts.cursor;
  if (cursor) {
    q = q.where((eb) =>
      eb.or([
        eb('created_at', '<', cursor.createdAt),
        eb.and([eb('created_at', '=', cursor.createdAt), eb('id', '<', cursor.id)]),
      ]),
    );
  }
  return q.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(opts.limit).execute();
}

export async function internsWithStatus(db: Db, statuses: InternStatus[]): Promise<InternRow[]> {
  return db.selectFrom('interns').selectAll().where('status', 'in', statuses).orderBy('created_at').execute();
}

/**
 * Removes a destroyed intern: borrowers of its vault lose the attachment, its create operations
 * and its row go. (Its vault is deleted before, by the vault service.)
 */
export async function removeIntern(db: Db, id: string, vaultId: string | null): Promise<void> {
  await db.transaction().execute(async (tx) => {
    if (vaultId) {
      await tx
        .updateTable('interns')
        .set({ attached_vault_id: null, updated_at: stamp() })
        .where('attached_vault_id', '=', vaultId)
        .execute();
    }
    await tx.deleteFrom('intern_create_ops').where('intern_id', '=', id).execute();
    await tx.deleteFrom('interns').where('id', '=', id).execute();
  });
}
