import type { Updateable } from 'kysely';
import type { Db } from '../db/connection.js';
import type { WorkspaceMembersTable, WorkspacesTable } from '../db/schema.js';
import { isUuid } from '../lib/ids.js';

export type WorkspaceRow = WorkspacesTable;

export async function insertWorkspace(db: Db, row: WorkspaceRow) {
  await db.insertInto('workspaces').values(row).execute();
}

/** A workspace of the organization by UUID or slug. */
export function findWorkspace(db: Db, organizationId: string, ref: string) {
  return db
    .selectFrom('workspaces')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where(isUuid(ref) ? 'id' : 'slug', '=', isUuid(ref) ? ref.toLowerCase() : ref)
    .executeTakeFirst();
}

export const findDefaultWorkspace = (db: Db, organizationId: string) =>
  db
    .selectFrom('workspaces')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('is_default', '=', 1)
    .executeTakeFirst();

export function listWorkspaces(db: Db, organizationId: string, page: { offset: number; limit: number }) {
  return db
    .selectFrom('workspaces')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .orderBy('created_at')
    .orderBy('id')
    .offset(page.offset)
    .limit(page.limit)
    .execute();
}

export async function countWorkspaces(db: Db, organizationId: string): Promise<number> {
  const r = await db
    .selectFrom('workspaces')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('organization_id', '=', organizationId)
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

export async function updateWorkspace(db: Db, id: string, patch: Updateable<WorkspacesTable>) {
  await db.updateTable('workspaces').set(patch).where('id', '=', id).execute();
}

export async function deleteWorkspace(db: Db, id: string) {
  await db.deleteFrom('workspaces').where('id', '=', id).execute();
}

export async function insertWorkspaceMember(db: Db, row: WorkspaceMembersTable) {
  await db.insertInto('workspace_members').values(row).execute();
}

export const findWorkspaceMember = (db: Db, workspaceId: string, userId: string) =>
  db
    .selectFrom('workspace_members')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('user_id', '=', userId)
    .executeTakeFirst();
