import type { Updateable } from 'kysely';
import type { Db } from '../db/connection.js';
import type { OrgMembersTable, WorkspaceMembersTable, WorkspacesTable } from '../db/schema.js';
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

export const findWorkspaceById = (db: Db, id: string) =>
  db.selectFrom('workspaces').selectAll().where('id', '=', id).executeTakeFirst();

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

export type WorkspaceMemberRow = WorkspaceMembersTable;

/** Whether another workspace of the organization already uses `slug`. */
export async function slugTaken(db: Db, organizationId: string, slug: string, exceptId?: string) {
  let q = db
    .selectFrom('workspaces')
    .select('id')
    .where('organization_id', '=', organizationId)
    .where('slug', '=', slug);
  if (exceptId) q = q.where('id', '!=', exceptId);
  return (await q.executeTakeFirst()) !== undefined;
}

/**
 * Locks the workspace row for the rest of the transaction (an UPDATE takes a row lock in
 * PostgreSQL; SQLite transactions are serialized anyway) and returns whether it still exists.
 */
export async function lockWorkspace(db: Db, id: string): Promise<boolean> {
  const r = await db
    .updateTable('workspaces')
    .set((eb) => ({ is_default: eb.ref('is_default') }))
    .where('id', '=', id)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

/** Removes the disabled keys of a workspace (active ones block its deletion). */
export async function deleteDisabledKeysOfWorkspace(db: Db, workspaceId: string) {
  await db.deleteFrom('api_keys').where('workspace_id', '=', workspaceId).where('disabled', '=', 1).execute();
}

export function listWorkspaceMembers(db: Db, workspaceId: string, page: { offset: number; limit: number }) {
  return db
    .selectFrom('workspace_members')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .orderBy('created_at')
    .orderBy('user_id')
    .offset(page.offset)
    .limit(page.limit)
    .execute();
}

export async function countWorkspaceMembers(db: Db, workspaceId: string): Promise<number> {
  const r = await db
    .selectFrom('workspace_members')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('workspace_id', '=', workspaceId)
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

/** Of `userIds`, the ones that are members of the workspace. */
export async function workspaceMembersAmong(db: Db, workspaceId: string, userIds: string[]) {
  if (userIds.length === 0) return new Set<string>();
  const rows = await db
    .selectFrom('workspace_members')
    .select('user_id')
    .where('workspace_id', '=', workspaceId)
    .where('user_id', 'in', userIds)
    .execute();
  return new Set(rows.map((r) => r.user_id));
}

/** Inserts a member unless they already are one; true when a row was added. */
export async function addWorkspaceMember(db: Db, row: WorkspaceMemberRow): Promise<boolean> {
  const r = await db
    .insertInto('workspace_members')
    .values(row)
    .onConflict((oc) => oc.columns(['workspace_id', 'user_id']).doNothing())
    .executeTakeFirst();
  return Number(r.numInsertedOrUpdatedRows ?? 0) > 0;
}

export async function deleteWorkspaceMembers(db: Db, workspaceId: string, userIds: string[]) {
  if (userIds.length === 0) return 0;
  const r = await db
    .deleteFrom('workspace_members')
    .where('workspace_id', '=', workspaceId)
    .where('user_id', 'in', userIds)
    .executeTakeFirst();
  return Number(r.numDeletedRows);
}

/** Organization roles of those of `userIds` that are members of the organization. */
export async function orgRolesOf(
  db: Db,
  organizationId: string,
  userIds: string[],
): Promise<Map<string, OrgMembersTable['role']>> {
  if (userIds.length === 0) return new Map();
  const rows = await db
    .selectFrom('org_members')
    .select(['user_id', 'role'])
    .where('organization_id', '=', organizationId)
    .where('user_id', 'in', userIds)
    .execute();
  return new Map(rows.map((r) => [r.user_id, r.role]));
}

/** Organization members as rows of the default workspace (everyone is a member there). */
export function listOrgMembersForWorkspace(
  db: Db,
  organizationId: string,
  page: { offset: number; limit: number },
) {
  return db
    .selectFrom('org_members')
    .select(['user_id', 'role', 'created_at'])
    .where('organization_id', '=', organizationId)
    .orderBy('created_at')
    .orderBy('user_id')
    .offset(page.offset)
    .limit(page.limit)
    .execute();
}
