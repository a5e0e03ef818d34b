import type { Updateable } from 'kysely';
import type { Db } from '../db/connection.js';
import type { ApiKeysTable } from '../db/schema.js';

export type KeyRow = ApiKeysTable;

export async function insertKey(db: Db, row: KeyRow) {
  await db.insertInto('api_keys').values(row).execute();
}

export const findKey = (db: Db, hash: string) =>
  db.selectFrom('api_keys').selectAll().where('hash', '=', hash).executeTakeFirst();

export function listKeys(
  db: Db,
  q: { workspaceId: string; includeDisabled: boolean; management: boolean; offset: number; limit: number },
) {
  let query = db
    .selectFrom('api_keys')
    .selectAll()
    .where('workspace_id', '=', q.workspaceId)
    .where('is_management', '=', q.management ? 1 : 0);
  if (!q.includeDisabled) query = query.where('disabled', '=', 0);
  return query.orderBy('created_at').orderBy('hash').offset(q.offset).limit(q.limit).execute();
}

export async function updateKey(db: Db, hash: string, patch: Updateable<ApiKeysTable>) {
  await db.updateTable('api_keys').set(patch).where('hash', '=', hash).execute();
}

export async function deleteKey(db: Db, hash: string) {
  await db.deleteFrom('api_keys').where('hash', '=', hash).execute();
}

/** Keys of the organization among `hashes`, with the workspace each belongs to. */
export function keysAmong(db: Db, organizationId: string, hashes: string[]) {
  if (hashes.length === 0) return Promise.resolve([] as KeyRow[]);
  return db
    .selectFrom('api_keys')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('hash', 'in', hashes)
    .execute();
}

export async function countKeysInWorkspace(
  db: Db,
  workspaceId: string,
  onlyActive: boolean,
): Promise<number> {
  let q = db
    .selectFrom('api_keys')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('workspace_id', '=', workspaceId);
  if (onlyActive) q = q.where('disabled', '=', 0);
  const r = await q.executeTakeFirstOrThrow();
  return Number(r.n);
}

export async function countKeysOfUserInWorkspace(
  db: Db,
  workspaceId: string,
  userId: string,
): Promise<number> {
  const r = await db
    .selectFrom('api_keys')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('workspace_id', '=', workspaceId)
    .where('creator_user_id', '=', userId)
    .where('disabled', '=', 0)
    .executeTakeFirstOrThrow();
  return Number(r.n);
}
