import type { Updateable } from 'kysely';
import type { Db } from '../db/connection.js';
import type { ByokCredentialsTable } from '../db/schema.js';

export type ByokRow = ByokCredentialsTable;

export interface ByokListQuery {
  organizationId: string;
  workspaceId: string;
  provider?: string;
  offset: number;
  limit: number;
}

export async function insertCredential(db: Db, row: ByokRow) {
  await db.insertInto('byok_credentials').values(row).execute();
}

/** A live (not deleted) credential of the organization. */
export const findCredential = (db: Db, organizationId: string, id: string) =>
  db
    .selectFrom('byok_credentials')
    .selectAll()
    .where('id', '=', id)
    .where('organization_id', '=', organizationId)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();

/** Live credentials of a workspace (plus organization-wide ones, workspace_id null). */
function inWorkspace(db: Db, q: Omit<ByokListQuery, 'offset' | 'limit'>) {
  let query = db
    .selectFrom('byok_credentials')
    .where('organization_id', '=', q.organizationId)
    .where('deleted_at', 'is', null)
    .where((eb) => eb.or([eb('workspace_id', '=', q.workspaceId), eb('workspace_id', 'is', null)]));
  if (q.provider !== undefined) query = query.where('provider', '=', q.provider);
  return query;
}

export function listCredentials(db: Db, q: ByokListQuery) {
  return inWorkspace(db, q)
    .selectAll()
    .orderBy('provider')
    .orderBy('sort_order')
    .orderBy('created_at')
    .orderBy('id')
    .offset(q.offset)
    .limit(q.limit)
    .execute();
}

export async function countCredentials(db: Db, q: Omit<ByokListQuery, 'offset' | 'limit'>) {
  const r = await inWorkspace(db, q)
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

/** The sort_order after the largest one of live credentials of that provider in that workspace. */
export async function nextSortOrder(db: Db, organizationId: string, workspaceId: string, provider: string) {
  const r = await db
    .selectFrom('byok_credentials')
    .select((eb) => eb.fn.max('sort_order').as('m'))
    .where('organization_id', '=', organizationId)
    .where('workspace_id', '=', workspaceId)
    .where('provider', '=', provider)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  const max = r?.m;
  return max === null || max === undefined ? 0 : Number(max) + 1;
}

export async function updateCredential(db: Db, id: string, patch: Updateable<ByokCredentialsTable>) {
  await db.updateTable('byok_credentials').set(patch).where('id', '=', id).execute();
}

/** Soft delete: the row stays (for audit), its secret material is wiped. */
export async function deleteCredential(db: Db, id: string, at: string) {
  await db
    .updateTable('byok_credentials')
    .set({ deleted_at: at, updated_at: at, secret_ciphertext: null })
    .where('id', '=', id)
    .execute();
}

/** Every live credential of an organization that still holds its sealed secret (for routing). */
export const liveCredentials = (db: Db, organizationId: string) =>
  db
    .selectFrom('byok_credentials')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('deleted_at', 'is', null)
    .where('secret_ciphertext', 'is not', null)
    .orderBy('sort_order')
    .orderBy('created_at')
    .execute();
